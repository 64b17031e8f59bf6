// `ferret watch [--interval MS] [--json|--md] [--out FILE] -- COMMAND...`: runs a command and
// samples, until it ends, the CPU use of its process tree and its GPUs' utilisation and memory
// (NVML when the driver is there), then says what held it back (docs/WATCH.md). The command's
// stdin, stdout and stderr are its own, untouched; the report goes to stderr once the command has
// ended (as time(1) does), or to --out FILE. The exit status is the command's (128 + N when
// signal N ended it); 127 when it could not be started, 2 for a usage error.
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iostream>

#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "app/watch_command.h"
#include "base/safe_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "report/watch/watch_report.h"

namespace ferret::cli {

namespace {

struct WatchCliOptions {
  int interval_ms = 500;
  bool json = false;
  bool markdown = false;
  std::string out;
  std::string samples_out;
  std::size_t width = 0;
  std::vector<std::string> command;
};

void run_watch_command(const WatchCliOptions& cli) {
  if (cli.json && cli.markdown) usage_error("choose one of --json and --md");
  if (cli.command.empty()) usage_error("give the command to watch after --, e.g. ferret watch -- python train.py");
  // Output files are begun before the command runs (base/safe_file.h: a temporary file beside each,
  // renamed into place when complete): a typo is said now, not after an hour.
  std::optional<SafeFile> report_file, samples_file;
  const auto begin = [](std::optional<SafeFile>& file, const std::string& path, const char* option) {
    if (path.empty()) return;
    try {
      file.emplace(path);
    } catch (const std::runtime_error& e) {
      usage_error(fmt::format("{} {}", option, e.what()));
    }
  };
  begin(report_file, cli.out, "--out");
  begin(samples_file, cli.samples_out, "--samples-out");
  const auto finish = [](std::optional<SafeFile>& file, const std::string& text, const char* option) {
    try {
      file->write(text);
      file->commit();
    } catch (const std::runtime_error& e) {
      print_error(fmt::format("{} {}", option, e.what()));
    }
  };

  WatchRequest request;
  request.command = cli.command;
  request.interval_ms = cli.interval_ms;
  WatchOutcome outcome;
  try {
    outcome = run_watch(request);
  } catch (const WatchSpawnError& e) {
    print_error(e.what());
    // The shell's convention (POSIX "Command Search and Execution"): 127 when the command is not
    // found, 126 when it is found but cannot be executed.
    throw ExitCode{e.error == ENOENT ? 127 : 126};
  }
  const WatchSeries& series = outcome.series;
  const WatchReportInput& input = outcome.report;

  std::string report;
  if (cli.json)
    report = watch_json(input).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  else if (cli.markdown)
    report = watch_markdown(input);
  if (report_file) {
    if (!cli.json && !cli.markdown) {
      Style plain;
      plain.width = text_width(cli.width);
      report = watch_text(input, plain);
    }
    finish(report_file, report, "--out");
  } else {
    std::cout.flush();
    if (!cli.json && !cli.markdown) {
      Style st = style_for_fd(STDERR_FILENO);
      st.width = text_width(cli.width);
      report = watch_text(input, st);
    }
    std::cerr << "\n" << report;
    std::cerr.flush();
  }
  if (samples_file) finish(samples_file, watch_samples_csv(series), "--samples-out");
  if (series.exit_status != 0) throw ExitCode{series.exit_status};
}

}  // namespace

void register_watch(CLI::App& app) {
  auto opt = std::make_shared<WatchCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "watch",
      "Run a command and sample its process tree's CPU use and its GPUs' utilisation until it ends, then say what "
      "held it back: ferret watch [OPTIONS] -- python train.py ...");
  cmd->add_option("--interval", opt->interval_ms,
                  fmt::format("Sampling interval in milliseconds ({}-{}, default 500)", kWatchMinIntervalMs,
                              kWatchMaxIntervalMs))
      ->check(CLI::Range(kWatchMinIntervalMs, kWatchMaxIntervalMs));
  cmd->add_flag("--json", opt->json, "Report as a JSON document (schema ferret.watch/1, docs/WATCH.md)");
  cmd->add_flag("--md", opt->markdown, "Report as Markdown to paste into a pull request");
  cmd->add_option("--out", opt->out, "Write the report to FILE instead of stderr");
  cmd->add_option("--samples-out", opt->samples_out, "Write every sample to FILE as CSV");
  add_width_option(*cmd, opt->width);
  cmd->add_option("command", opt->command, "The command to watch, after --")->expected(-1)->required();
  cmd->callback([opt] { run_watch_command(*opt); });
}

}  // namespace ferret::cli
