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
  std::vector<std::string> traces;
  std::size_t width = 0;  // --width; 0: COLUMNS or 80
  bool json = false;
  bool markdown = false;
  unsigned threads = 0;
  NcclReadLimits limits;
  std::string max_bytes_without_progress;  // "1GiB"; empty = default
  std::string max_memory;                  // "8GiB"; empty = default
};

void run_nccl_command(const NcclCliOptions& cli) {
  if (cli.json && cli.markdown) usage_error("choose one of --json and --md");
  int stdin_uses = 0;
  for (const std::string& p : cli.logs) stdin_uses += p == "-";
  for (const std::string& p : cli.traces) stdin_uses += p == "-";
  if (stdin_uses > 1) usage_error("only one input can be read from stdin");

  NcclRequest request;
  request.logs = cli.logs;
  request.traces = cli.traces;
  request.limits = cli.limits;
  if (!cli.max_bytes_without_progress.empty())
    request.limits.max_bytes_without_progress =
        size_option(cli.max_bytes_without_progress, "--max-bytes-without-progress");
  request.limits.max_memory_bytes = cli.max_memory.empty() ? 0 : memory_limit(cli.max_memory);
  request.trace_threads = cli.traces.empty() ? 0 : thread_option(cli.threads, "--threads");
  request.on_message = [](const std::string& message) { print_error(message); };
  const NcclOutcome outcome = run_nccl(request);
  if (!outcome.any_log) {
    print_error("none of the NCCL logs could be read");
    throw ExitCode{2};
  }
  const NcclSetup& setup = outcome.setup;
  const std::vector<Finding>& findings = outcome.findings;
  const std::vector<NcclInputError>& errors = outcome.errors;

  if (cli.json) {
    std::cout
        << nccl_json(setup, findings, errors).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
        << '\n';
  } else if (cli.markdown) {
    print_report(nccl_markdown(setup, findings, errors));
  } else {
    print_report(nccl_text(setup, findings, errors, stdout_style(cli.width)));
  }
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
         "--trace", opt->traces,
         "A Kineto trace of the same run (repeatable): compare its NCCL bus bandwidth with the transport's ceiling")
      ->type_name("TRACE")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.nccl/1, see docs/NCCL.md)");
  add_width_option(*cmd, opt->width);
  cmd->add_flag("--md", opt->markdown, "Print Markdown (log text escaped)");
  cmd->add_option("--max-bytes-without-progress", opt->max_bytes_without_progress,
                  "Stop reading a log after this many bytes without an NCCL line, keeping what was read "
                  "(default 1GiB; 0: no limit)")
      ->type_name("SIZE");
  cmd->add_option("--max-memory", opt->max_memory,
                  "Stop reading logs when ferret holds this much memory, keeping what was read (default 3/4 of RAM)")
      ->type_name("SIZE");
  cmd->add_option("--threads", opt->threads, "Trace parser threads (default: one per core)");
  cmd->callback([opt] { run_nccl_command(*opt); });
}

}  // namespace ferret::cli
