#include "app/smi_command.h"

#include <fmt/format.h>

#include "analysis/timeline/trace_summary.h"
#include "base/input_error.h"
#include "diagnosis/smi/rules_smi.h"
#include "ingest/trace_loader.h"

namespace ferret {

namespace {

// The trace's window in ns since the epoch: baseTimeNanoseconds + the span of its events, or the
// span itself when the timestamps are since the epoch (integer microseconds, torch before 2024).
SmiTraceWindow smi_trace_window(const std::string& path, const SmiLog& log, const SmiStats& stats, unsigned threads) {
  LoadOptions load;
  load.threads = threads;
  const TraceModel model = load_trace(path, load);
  const TraceSummary summary = summarize_trace(model);
  // 2001-01-01 in ns: relative timestamps never reach it, epoch ones always do.
  constexpr std::int64_t kEpochTimesFrom = 978307200LL * 1000000000LL;
  std::int64_t start = summary.first_ns, end = summary.last_ns;
  bool absolute = summary.events > 0 && start >= kEpochTimesFrom;
  if (model.info.base_time_ns && summary.events > 0) {
    const std::int64_t base = *model.info.base_time_ns;
    absolute = base > 0 && !__builtin_add_overflow(base, summary.first_ns, &start) &&
               !__builtin_add_overflow(base, summary.last_ns, &end);
  }
  return align_smi_window(log, stats, path, absolute, start, end);
}

}  // namespace

SmiOutcome run_smi(const SmiRequest& request) {
  const auto message = [&](const std::string& text) {
    if (request.on_message) request.on_message(text);
  };
  SmiReadOptions options = request.read;
  if (options.max_memory_bytes == 0) options.max_memory_bytes = default_max_memory_bytes();
  SmiOutcome out;
  for (const std::string& path : request.logs) {
    try {
      parse_smi_file(path, out.log, options);
      if (!out.log.sources.back().stopped.empty()) message(fmt::format("{}: {}", path, out.log.sources.back().stopped));
    } catch (const InputError& e) {
      message(e.what());
      out.errors.push_back({path, e.what()});
    }
  }
  out.any_log = !out.log.sources.empty();
  if (!out.any_log) return out;
  out.stats = analyze_smi(out.log);
  for (const std::string& path : request.traces) {
    try {
      out.stats.traces.push_back(smi_trace_window(path, out.log, out.stats, request.trace_threads));
    } catch (const InputError& e) {
      message(fmt::format("--trace {}", e.what()));
      out.errors.push_back({path, e.what()});
    }
  }
  rules_smi(out.log, out.stats, out.findings);
  return out;
}

}  // namespace ferret
