// libFuzzer harness: bytes read as an allocator snapshot pickle (ingest/pickle_reader.h), then the
// allocator analysis, its rules and all three renderings. Must never crash, hang or leak, whatever
// the opcodes, memo references or values say; refused and malformed pickles are InputErrors.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/allocator_state.h"
#include "base/input_error.h"
#include "diagnosis/rules_allocator.h"
#include "ingest/allocator_snapshot_reader.h"
#include "report/memory_report.h"
#include "terminal_oracle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    ferret::MemoryReportInput in;
    in.source = "fuzz";
    in.state = ferret::analyze_allocator_state(ferret::read_allocator_snapshot_bytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz", std::uint64_t{256} << 20));
    ferret::rules_allocator(in.state, in.findings);
    const std::vector<ferret::MemoryReportInput> inputs = {in};
    ferret::fuzz::require_terminal_safe(ferret::memory_text(inputs, ferret::Style{}), "memory text");
    (void)ferret::memory_json(inputs).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    (void)ferret::memory_markdown(inputs);
  } catch (const ferret::InputError&) {
  }
  return 0;
}
