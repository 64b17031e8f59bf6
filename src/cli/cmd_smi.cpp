// `ferret smi LOG... [--trace TRACE]`: GPU utilisation logs (nvidia-smi, DCGM, rocm-smi, amd-smi).
#include <cctype>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "app/smi_command.h"
#include "base/input_error.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
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

void run_smi_command(const SmiCliOptions& cli) {
  if (cli.json && cli.markdown) usage_error("choose one of --json and --md");
  int stdin_uses = 0;
  for (const std::string& p : cli.logs) stdin_uses += p == "-";
  for (const std::string& p : cli.traces) stdin_uses += p == "-";
  if (stdin_uses > 1) usage_error("only one input can be read from stdin");

  SmiRequest request;
  request.logs = cli.logs;
  request.traces = cli.traces;
  request.read.columns = cli.columns;
  request.read.interval_s = cli.interval_s;
  request.read.utc_offset_s = smi_utc_offset(cli.utc_offset);
  request.read.max_memory_bytes = cli.max_memory.empty() ? 0 : memory_limit(cli.max_memory);
  request.trace_threads = cli.traces.empty() ? 0 : thread_option(cli.threads, "--threads");
  request.on_message = [](const std::string& message) { print_error(message); };
  const SmiOutcome outcome = run_smi(request);
  if (!outcome.any_log) {
    print_error("none of the GPU utilisation logs could be read");
    throw ExitCode{2};
  }
  const SmiReportInput in{outcome.log, outcome.stats, outcome.findings, outcome.errors};
  if (cli.json) {
    std::cout << smi_json(in).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  } else if (cli.markdown) {
    print_report(smi_markdown(in));
  } else {
    print_report(smi_text(in, stdout_style(cli.width)));
  }
  std::cout.flush();
  std::uint64_t samples = 0;
  for (const SmiSource& s : outcome.log.sources) samples += s.samples;
  if (samples == 0) {  // nothing usable is exit 2, as for analyze and diff
    std::string names;
    for (const SmiSource& s : outcome.log.sources) names += (names.empty() ? "" : ", ") + s.name;
    print_error(outcome.log.sources.size() == 1 ? names + ": no readable sample in the GPU utilisation log"
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
  cmd->callback([opt] { run_smi_command(*opt); });
}

}  // namespace ferret::cli
