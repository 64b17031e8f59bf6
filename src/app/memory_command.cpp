#include "app/memory_command.h"

#include <new>

#include "analysis/memory/allocator_state.h"
#include "app/option_values.h"
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

MemoryRequest memory_request_from(const std::vector<std::string>& files, const MemorySettings& settings) {
  MemoryRequest request;
  request.files = files;
  request.max_memory_bytes = max_memory_option(settings.max_memory);
  return request;
}

std::string render_memory(const MemoryOutcome& outcome, Format format, const Style& style) {
  switch (format) {
    case Format::kJson:
      return memory_json(outcome.inputs).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    case Format::kMarkdown: return memory_markdown(outcome.inputs);
    case Format::kText: break;
  }
  return memory_text(outcome.inputs, style);
}

}  // namespace ferret
