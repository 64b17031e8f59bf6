// `ferret annotate TRACE -o OUT.json.gz`: the trace with ferret's diagnosis added as trace events
// (report/trace/trace_annotation.h), for Perfetto UI and chrome://tracing. The trace is read twice: once
// to analyse it, once to copy it through; so it must be a file, not stdin.

#include <iostream>
#include <new>

#include <fmt/format.h>

#include "analysis/analysis_options.h"
#include "app/annotate_command.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/progress.h"

namespace ferret::cli {

namespace {

struct AnnotateOptions {
  std::string trace;
  std::string output;
  AnnotateSettings settings;  // the options the C++ API and Python share (app/annotate_command.h)
};

void run_annotate_command(AnnotateOptions opt) {
  opt.settings.threads = thread_option(opt.settings.threads, "--threads");
  AnnotateRequest request = annotate_request_from(opt.trace, opt.output, opt.settings);
  request.load.progress = make_progress_bar(opt.trace, input_file_size(opt.trace));
  request.loaded = finish_progress_bar;
  try {
    const AnnotateOutcome outcome = run_annotate(request);
    for (const std::string& line : annotate_messages(outcome, request)) print_error(line);
  } catch (const InputError& e) {
    finish_progress_bar();
    print_error(e.what());
    throw ExitCode{2};
  } catch (const std::runtime_error& e) {  // output I/O
    print_error(e.what());
    throw ExitCode{2};
  } catch (const std::bad_alloc&) {
    finish_progress_bar();
    print_error(opt.trace + ": ran out of memory while annotating it; try a lower --max-memory");
    throw ExitCode{2};
  }
}

}  // namespace

void register_annotate(CLI::App& app) {
  auto opt = std::make_shared<AnnotateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "annotate",
      "Write the trace with ferret's diagnosis as trace events (counters, step breakdowns, findings where they "
      "happen) for Perfetto UI or chrome://tracing");
  cmd->add_option("trace", opt->trace, "Trace file (Kineto JSON or legacy export; gzip/zstd/plain)")->required();
  cmd->add_option("-o,--output", opt->output, "Output trace (gzip when it ends in .gz; - for stdout)")->required();
  cmd->add_flag("--plain", opt->settings.plain, "Write uncompressed JSON even when the name ends in .gz");
  cmd->add_option("--steps", opt->settings.steps, "Analyse only these ProfilerStep numbers: A-B, A-, -B or N");
  cmd->add_option("--window", opt->settings.window, "Analyse only the K-th span named NAME: NAME or NAME#K");
  cmd->add_option("--time", opt->settings.time,
                  "Analyse only this stretch: A-B or A- (milliseconds from the trace start)");
  cmd->add_option("--device", opt->settings.device, "Analyse only this GPU device index")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--threads", opt->settings.threads, "Parser threads (default: one per core)");
  cmd->add_option("--max-memory", opt->settings.max_memory, "Memory bound while loading, e.g. 8GiB");
  cmd->callback([opt] { run_annotate_command(*opt); });
}

}  // namespace ferret::cli
