#include "app/smi_command.h"

#include <cctype>

#include <fmt/format.h>

#include "analysis/timeline/trace_summary.h"
#include "app/option_values.h"
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

std::int64_t smi_utc_offset(const std::string& text) {
  if (text.empty()) return 0;
  std::size_t i = 0;
  int sign = 1;
  if (text[0] == '+' || text[0] == '-') sign = text[0] == '-' ? -1 : 1, i = 1;
  int hours = 0, minutes = 0, digits = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && digits < 2; ++i, ++digits)
    hours = hours * 10 + (text[i] - '0');
  if (i < text.size() && text[i] == ':') ++i;
  int mdigits = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && mdigits < 2; ++i, ++mdigits)
    minutes = minutes * 10 + (text[i] - '0');
  if (digits == 0 || i != text.size() || hours > 14 || minutes > 59 || (mdigits != 0 && mdigits != 2))
    throw OptionError("--utc-offset: expected an offset east of UTC such as +02:00, -05:30 or 0, got `" + text + "`");
  return sign * (hours * 3600 + minutes * 60);
}

SmiRequest smi_request_from(const std::vector<std::string>& logs, const SmiSettings& settings) {
  at_most_one_stdin({&logs, &settings.traces});
  // The command line's --interval check (finite, 0.001 to 86400 s), for the API's callers too.
  if (!(settings.interval >= 0.001 && settings.interval <= 86400))
    throw OptionError(fmt::format("--interval: {} not in [0.001 - 86400]", settings.interval));
  SmiRequest request;
  request.logs = logs;
  request.traces = settings.traces;
  request.read.columns = settings.columns;
  request.read.interval_s = settings.interval;
  request.read.utc_offset_s = smi_utc_offset(settings.utc_offset);
  request.read.max_memory_bytes = max_memory_option(settings.max_memory);
  request.trace_threads = settings.traces.empty() ? 0 : settings.threads;
  return request;
}

std::string smi_failure_before_report(const SmiOutcome& outcome) {
  return outcome.any_log ? std::string() : "none of the GPU utilisation logs could be read";
}

std::string smi_failure_after_report(const SmiOutcome& outcome) {
  std::uint64_t samples = 0;
  for (const SmiSource& s : outcome.log.sources) samples += s.samples;
  if (samples > 0) return {};
  std::string names;
  for (const SmiSource& s : outcome.log.sources) names += (names.empty() ? "" : ", ") + s.name;
  return outcome.log.sources.size() == 1 ? names + ": no readable sample in the GPU utilisation log"
                                         : "no readable sample in any of the GPU utilisation logs: " + names;
}

std::string render_smi(const SmiOutcome& outcome, Format format, const Style& style) {
  const SmiReportInput in{outcome.log, outcome.stats, outcome.findings, outcome.errors};
  switch (format) {
    case Format::kJson:
      return smi_json(in).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    case Format::kMarkdown: return smi_markdown(in);
    case Format::kText: break;
  }
  return smi_text(in, style);
}

}  // namespace ferret
