// `ferret nccl LOGS... [--trace TRACE...]`: lint NCCL_DEBUG=INFO output from all ranks.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "app/nccl_command.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "report/nccl/nccl_report.h"

namespace ferret::cli {

namespace {

struct NcclCliOptions {
  std::vector<std::string> logs;
  NcclSettings settings;  // the options the C++ API and Python share (app/nccl_command.h)
  std::size_t width = 0;  // --width; 0: COLUMNS or 80
  bool json = false;
  bool markdown = false;
};

void run_nccl_command(NcclCliOptions cli) {
  if (cli.json && cli.markdown) usage_error("choose one of --json and --md");
  if (!cli.settings.traces.empty()) cli.settings.threads = thread_option(cli.settings.threads, "--threads");
  NcclRequest request = nccl_request_from(cli.logs, cli.settings);
  request.on_message = [](const std::string& message) { print_error(message); };
  const NcclOutcome outcome = run_nccl(request);
  if (const std::string failure = nccl_failure(outcome); !failure.empty()) {
    print_error(failure);
    throw ExitCode{2};
  }
  const Format format = cli.json ? Format::kJson : cli.markdown ? Format::kMarkdown : Format::kText;
  const std::string report = render_nccl(outcome, format, stdout_style(cli.width));
  if (cli.json)
    std::cout << report;
  else
    print_report(report);
  std::cout.flush();
}

}  // namespace

void register_nccl(CLI::App& app) {
  auto opt = std::make_shared<NcclCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "nccl",
      "Lint NCCL_DEBUG=INFO logs from all ranks: versions, transports, network, GDR, init time, settings, warnings");
  cmd->add_option("logs", opt->logs,
                  "NCCL_DEBUG=INFO output of any or all ranks, mixed with other output is fine "
                  "(plain/gzip/zstd; - for stdin)")
      ->required();
  cmd->add_option(
         "--trace", opt->settings.traces,
         "A Kineto trace of the same run (repeatable): compare its NCCL bus bandwidth with the transport's ceiling")
      ->type_name("TRACE")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.nccl/1, see docs/NCCL.md)");
  add_width_option(*cmd, opt->width);
  cmd->add_flag("--md", opt->markdown, "Print Markdown (log text escaped)");
  cmd->add_option("--max-bytes-without-progress", opt->settings.max_bytes_without_progress,
                  "Stop reading a log after this many bytes without an NCCL line, keeping what was read "
                  "(default 1GiB; 0: no limit)")
      ->type_name("SIZE");
  cmd->add_option("--max-memory", opt->settings.max_memory,
                  "Stop reading logs when ferret holds this much memory, keeping what was read (default 3/4 of RAM)")
      ->type_name("SIZE");
  cmd->add_option("--threads", opt->settings.threads, "Trace parser threads (default: one per core)");
  cmd->callback([opt] { run_nccl_command(*opt); });
}

}  // namespace ferret::cli
