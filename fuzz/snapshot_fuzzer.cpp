// libFuzzer harness: bytes read as `ferret memory` reads a file, told by content: an allocator
// snapshot pickle (first byte 0x80; ingest/memory/pickle_reader.h) through the allocator analysis, or
// text through the memory_summary() / out-of-memory reader (ingest/memory/memory_text_reader.h); then
// the rules and all three renderings. Must never crash, hang or leak, whatever the opcodes, memo
// references, values, table cells or messages say; refused and unusable inputs are InputErrors.
// Seeds: fuzz/seeds-pickle and the text fixtures of tests/data/memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "analysis/memory/allocator_state.h"
#include "base/input_error.h"
#include "diagnosis/memory/rules_allocator.h"
#include "ingest/memory/memory_text_reader.h"
#include "report/memory/memory_report.h"
#include "terminal_oracle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    ferret::MemoryInput read = ferret::read_memory_input_bytes(std::string(reinterpret_cast<const char*>(data), size),
                                                               "fuzz", std::uint64_t{256} << 20);
    ferret::MemoryReportInput in;
    in.source = "fuzz";
    if (read.is_snapshot) {
      in.state = ferret::analyze_allocator_state(read.snapshot);
      ferret::rules_allocator(in.state, in.findings);
    } else {
      in.is_text = true;
      in.text = std::move(read.text);
      ferret::rules_memory_text(in.text, in.findings);
    }
    const std::vector<ferret::MemoryReportInput> inputs = {in};
    ferret::fuzz::require_terminal_safe(ferret::memory_text(inputs, ferret::Style{}), "memory text");
    (void)ferret::memory_json(inputs).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    (void)ferret::memory_markdown(inputs);
  } catch (const ferret::InputError&) {
  }
  return 0;
}
