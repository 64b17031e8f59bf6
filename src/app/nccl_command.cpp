#include "app/nccl_command.h"

#include <fmt/format.h>

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

}  // namespace ferret
