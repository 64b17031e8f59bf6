#include "app/nccl_command.h"

#include <fmt/format.h>

#include "app/option_values.h"
#include "base/input_error.h"
#include "diagnosis/nccl/rules_nccl.h"
#include "ingest/trace_loader.h"

namespace ferret {

NcclOutcome run_nccl(const NcclRequest& request) {
  const auto message = [&](const std::string& text) {
    if (request.on_message) request.on_message(text);
  };
  NcclReadLimits limits = request.limits;
  if (limits.max_memory_bytes == 0) limits.max_memory_bytes = default_max_memory_bytes();
  NcclOutcome out;
  NcclLog log;
  for (const std::string& path : request.logs) {
    try {
      parse_nccl_file(path, log, limits);
      if (!log.sources.back().stopped.empty()) message(fmt::format("{}: {}", path, log.sources.back().stopped));
    } catch (const InputError& e) {
      message(e.what());
      out.errors.push_back({path, e.what()});
    }
  }
  out.any_log = !log.sources.empty();
  if (!out.any_log) return out;

  out.setup = analyze_nccl_setup(log);
  for (const std::string& path : request.traces) {
    LoadOptions load;
    load.threads = request.trace_threads;
    try {
      const TraceModel model = load_trace(path, load);
      add_bandwidth_checks(out.setup, model);
    } catch (const InputError& e) {
      message(fmt::format("--trace {}", e.what()));
      out.errors.push_back({path, e.what()});
    }
  }
  rules_nccl(out.setup, out.findings);
  return out;
}

NcclRequest nccl_request_from(const std::vector<std::string>& logs, const NcclSettings& settings) {
  at_most_one_stdin({&logs, &settings.traces});
  NcclRequest request;
  request.logs = logs;
  request.traces = settings.traces;
  if (!settings.max_bytes_without_progress.empty())
    request.limits.max_bytes_without_progress =
        size_option(settings.max_bytes_without_progress, "--max-bytes-without-progress");
  request.limits.max_memory_bytes = max_memory_option(settings.max_memory);
  request.trace_threads = settings.traces.empty() ? 0 : settings.threads;
  return request;
}

std::string nccl_failure(const NcclOutcome& outcome) {
  return outcome.any_log ? std::string() : "none of the NCCL logs could be read";
}

std::string render_nccl(const NcclOutcome& outcome, Format format, const Style& style) {
  switch (format) {
    case Format::kJson:
      return nccl_json(outcome.setup, outcome.findings, outcome.errors)
                 .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
             "\n";
    case Format::kMarkdown: return nccl_markdown(outcome.setup, outcome.findings, outcome.errors);
    case Format::kText: break;
  }
  return nccl_text(outcome.setup, outcome.findings, outcome.errors, style);
}

}  // namespace ferret
