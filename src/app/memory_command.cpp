#include "app/memory_command.h"

#include <new>

#include "analysis/memory/allocator_state.h"
#include "base/input_error.h"
#include "diagnosis/memory/rules_allocator.h"
#include "ingest/memory/memory_text_reader.h"

namespace ferret {

MemoryOutcome run_memory(const MemoryRequest& request) {
  const auto message = [&](const std::string& text) {
    if (request.on_message) request.on_message(text);
  };
  MemoryOutcome out;
  for (const std::string& file : request.files) {
    try {
      MemoryInput read = read_memory_input(file, request.max_memory_bytes);
      MemoryReportInput in;
      in.source = file;
      if (read.is_snapshot) {
        in.state = analyze_allocator_state(read.snapshot);
        rules_allocator(in.state, in.findings);
      } else {
        in.is_text = true;
        in.text = std::move(read.text);
        rules_memory_text(in.text, in.findings);
      }
      out.inputs.push_back(std::move(in));
    } catch (const InputError& e) {
      message(e.what());
      out.failed = true;
    } catch (const std::bad_alloc&) {
      message(file + ": ran out of memory while reading it; try a lower --max-memory");
      out.failed = true;
    }
  }
  return out;
}

}  // namespace ferret
