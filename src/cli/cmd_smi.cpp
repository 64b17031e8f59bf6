// `ferret smi LOG... [--trace TRACE]`: GPU utilisation logs (nvidia-smi, DCGM, rocm-smi, amd-smi).
#include <cctype>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "analysis/smi/smi_stats.h"
#include "analysis/timeline/trace_summary.h"
#include "base/input_error.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "diagnosis/smi/rules_smi.h"
#include "ingest/smi/smi_log_parser.h"
#include "ingest/trace_loader.h"
#include "report/smi/smi_report.h"

namespace ferret::cli {

namespace {

struct SmiCliOptions {
  std::vector<std::string> logs;
  std::vector<std::string> traces;
  std::string columns;
  double interval_s = 1.0;
  std::string utc_offset;
  std::size_t width = 0;
  bool json = false;
  bool markdown = false;
  unsigned threads = 0;
  std::string max_memory;
};

// "+02:00", "-0530", "+2", "0" -> seconds east of UTC; OptionError otherwise.
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

// The trace's window in ns since the epoch: baseTimeNanoseconds + the span of its events, or the
// span itself when the timestamps are since the epoch (integer microseconds, torch before 2024).
SmiTraceWindow smi_trace_window(const std::string& path, const SmiLog& log, const SmiStats& stats,
                                const SmiCliOptions& cli) {
  LoadOptions load;
  load.threads = thread_option(cli.threads, "--threads");
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

void run_smi(const SmiCliOptions& cli) {
  if (cli.json && cli.markdown) usage_error("choose one of --json and --md");
  int stdin_uses = 0;
  for (const std::string& p : cli.logs) stdin_uses += p == "-";
  for (const std::string& p : cli.traces) stdin_uses += p == "-";
  if (stdin_uses > 1) usage_error("only one input can be read from stdin");

  SmiReadOptions options;
  options.columns = cli.columns;
  options.interval_s = cli.interval_s;
  options.utc_offset_s = smi_utc_offset(cli.utc_offset);
  options.max_memory_bytes = cli.max_memory.empty() ? default_max_memory_bytes() : memory_limit(cli.max_memory);

  SmiLog log;
  std::vector<SmiInputError> errors;
  for (const std::string& path : cli.logs) {
    try {
      parse_smi_file(path, log, options);
      if (!log.sources.back().stopped.empty()) print_error(fmt::format("{}: {}", path, log.sources.back().stopped));
    } catch (const InputError& e) {
      print_error(e.what());
      errors.push_back({path, e.what()});
    }
  }
  if (log.sources.empty()) {
    print_error("none of the GPU utilisation logs could be read");
    throw ExitCode{2};
  }
  SmiStats stats = analyze_smi(log);
  for (const std::string& path : cli.traces) {
    try {
      stats.traces.push_back(smi_trace_window(path, log, stats, cli));
    } catch (const InputError& e) {
      print_error(fmt::format("--trace {}", e.what()));
      errors.push_back({path, e.what()});
    }
  }
  std::vector<Finding> findings;
  rules_smi(log, stats, findings);
  const SmiReportInput in{log, stats, findings, errors};
  if (cli.json) {
    std::cout << smi_json(in).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  } else if (cli.markdown) {
    print_report(smi_markdown(in));
  } else {
    print_report(smi_text(in, stdout_style(cli.width)));
  }
  std::cout.flush();
  std::uint64_t samples = 0;
  for (const SmiSource& s : log.sources) samples += s.samples;
  if (samples == 0) {  // nothing usable is exit 2, as for analyze and diff
    std::string names;
    for (const SmiSource& s : log.sources) names += (names.empty() ? "" : ", ") + s.name;
    print_error(log.sources.size() == 1 ? names + ": no readable sample in the GPU utilisation log"
                                        : "no readable sample in any of the GPU utilisation logs: " + names);
    throw ExitCode{2};
  }
}

}  // namespace

void register_smi(CLI::App& app) {
  auto opt = std::make_shared<SmiCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "smi",
      "GPU utilisation logs (nvidia-smi --query-gpu CSV or default table, dmon, pmon, dcgmi dmon, dcgm-exporter "
      "metrics, rocm-smi, amd-smi): busy, idle periods, unused GPUs, SM/Tensor activity, memory and power headroom, "
      "throttling");
  cmd->add_option("logs", opt->logs, "Utilisation logs, format told by content (plain/gzip/zstd; - for stdin)")
      ->required();
  cmd->add_option("--trace", opt->traces,
                  "A trace of the same run (repeatable): what its window was doing against the whole run")
      ->type_name("TRACE")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--columns", opt->columns,
                  "The --query-gpu list of a CSV written with noheader (e.g. timestamp,index,utilization.gpu)")
      ->type_name("LIST");
  cmd->add_option("--interval", opt->interval_s,
                  "Seconds between samples in logs that print no time (dcgmi dmon, rocm-smi, tables without a date "
                  "line; default 1)")
      ->check(finite_range(0.001, 86400))
      ->type_name("S");
  cmd->add_option("--utc-offset", opt->utc_offset,
                  "The UTC offset of the clock that wrote nvidia-smi/dmon local times, e.g. +02:00 (default 0: UTC)")
      ->type_name("OFFSET");
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.smi/1, see docs/SMI.md)");
  cmd->add_flag("--md", opt->markdown, "Print Markdown (log text escaped)");
  add_width_option(*cmd, opt->width);
  cmd->add_option("--max-memory", opt->max_memory,
                  "Stop reading logs when ferret holds this much memory, keeping what was read (default 3/4 of RAM)")
      ->type_name("SIZE");
  cmd->add_option("--threads", opt->threads, "Trace parser threads (default: one per core)");
  cmd->callback([opt] { run_smi(*opt); });
}

}  // namespace ferret::cli
