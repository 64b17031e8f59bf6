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
  SmiSettings settings;  // the options the C++ API and Python share (app/smi_command.h)
  std::size_t width = 0;
  bool json = false;
  bool markdown = false;
};

void run_smi_command(SmiCliOptions cli) {
  if (cli.json && cli.markdown) usage_error("choose one of --json and --md");
  if (!cli.settings.traces.empty()) cli.settings.threads = thread_option(cli.settings.threads, "--threads");
  SmiRequest request = smi_request_from(cli.logs, cli.settings);
  request.on_message = [](const std::string& message) { print_error(message); };
  const SmiOutcome outcome = run_smi(request);
  if (const std::string failure = smi_failure_before_report(outcome); !failure.empty()) {
    print_error(failure);
    throw ExitCode{2};
  }
  const Format format = cli.json ? Format::kJson : cli.markdown ? Format::kMarkdown : Format::kText;
  const std::string report = render_smi(outcome, format, stdout_style(cli.width));
  if (cli.json)
    std::cout << report;
  else
    print_report(report);
  std::cout.flush();
  if (const std::string failure = smi_failure_after_report(outcome); !failure.empty()) {
    print_error(failure);  // nothing usable is exit 2, as for analyze and diff
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
  cmd->add_option("--trace", opt->settings.traces,
                  "A trace of the same run (repeatable): what its window was doing against the whole run")
      ->type_name("TRACE")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--columns", opt->settings.columns,
                  "The --query-gpu list of a CSV written with noheader (e.g. timestamp,index,utilization.gpu)")
      ->type_name("LIST");
  cmd->add_option("--interval", opt->settings.interval,
                  "Seconds between samples in logs that print no time (dcgmi dmon, rocm-smi, tables without a date "
                  "line; default 1)")
      ->check(finite_range(0.001, 86400))
      ->type_name("S");
  cmd->add_option("--utc-offset", opt->settings.utc_offset,
                  "The UTC offset of the clock that wrote nvidia-smi/dmon local times, e.g. +02:00 (default 0: UTC)")
      ->type_name("OFFSET");
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.smi/1, see docs/SMI.md)");
  cmd->add_flag("--md", opt->markdown, "Print Markdown (log text escaped)");
  add_width_option(*cmd, opt->width);
  cmd->add_option("--max-memory", opt->settings.max_memory,
                  "Stop reading logs when ferret holds this much memory, keeping what was read (default 3/4 of RAM)")
      ->type_name("SIZE");
  cmd->add_option("--threads", opt->settings.threads, "Trace parser threads (default: one per core)");
  cmd->callback([opt] { run_smi_command(*opt); });
}

}  // namespace ferret::cli
