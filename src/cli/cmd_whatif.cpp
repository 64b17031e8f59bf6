// `ferret whatif TRACE [--remove CAUSE]... [--speedup PATTERN=K]... [--json]`: the step time
// predicted when a cause is fixed, from the step's dependency graph (analysis/causal/whatif.h).

#include <unistd.h>

#include <iostream>
#include <new>

#include <fmt/format.h>

#include "analysis/analysis_options.h"
#include "app/whatif_command.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "report/trace/whatif_report.h"

namespace ferret::cli {

namespace {

struct WhatIfOptions {
  std::string trace;
  WhatIfSettings settings;  // the options the C++ API and Python share (app/whatif_command.h)
  bool json = false;
  std::size_t width = 0;
};

void run_whatif_command(WhatIfOptions opt) {
  // Arguments first: a bad one is a usage error before any loading.
  opt.settings.threads = thread_option(opt.settings.threads, "--threads");
  WhatIfRequest request = whatif_request_from(opt.trace, opt.settings);
  request.load.progress = make_progress_bar(opt.trace, input_file_size(opt.trace));
  request.loaded = finish_progress_bar;
  try {
    const WhatIfOutcome outcome = run_whatif(request);
    const std::string report =
        render_whatif(outcome, opt.json ? Format::kJson : Format::kText, stdout_style(opt.width));
    if (opt.json)
      std::cout << report;
    else
      print_report(report);
    if (const std::string failure = whatif_failure(outcome, opt.trace); !failure.empty()) {
      print_error(failure);  // nothing usable is exit 2, as for analyze and diff
      throw ExitCode{2};
    }
  } catch (const InputError& e) {
    finish_progress_bar();
    print_error(e.what());
    throw ExitCode{2};
  } catch (const std::bad_alloc&) {
    finish_progress_bar();
    print_error(opt.trace + ": ran out of memory while re-timing it; try a lower --max-memory");
    throw ExitCode{2};
  }
  std::cout.flush();
}

}  // namespace

void register_whatif(CLI::App& app) {
  auto opt = std::make_shared<WhatIfOptions>();
  CLI::App* cmd = app.add_subcommand(
      "whatif", "Predict the step time if a cause were fixed: re-time each step's dependency graph with the change");
  cmd->add_option("trace", opt->trace, "Trace file (Kineto JSON or legacy export; gzip/zstd/plain; - for stdin)")
      ->required();
  cmd->add_option("--remove", opt->settings.remove, "Remove a cause (repeatable): " + whatif_removal_names())
      ->allow_extra_args(false);
  cmd->add_option("--fix", opt->settings.fix,
                  "Re-time the fix of a finding of `ferret analyze` (its id, e.g. no-tensor-cores): the change its "
                  "predicted gain was computed with");
  cmd->add_option("--speedup", opt->settings.speedup,
                  "PATTERN=K (repeatable): kernels, and CPU ops that launch no GPU work, whose name (or an enclosing "
                  "op's name) contains PATTERN run K times faster")
      ->allow_extra_args(false);
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.whatif/1, see docs/CRITICAL_PATH.md)");
  cmd->add_option("--steps", opt->settings.steps, "Re-time only these ProfilerStep numbers: A-B, A-, -B or N");
  cmd->add_option("--device", opt->settings.device, "GPU device whose work is re-timed (default: all)");
  cmd->add_option("--threads", opt->settings.threads, "Parser threads (default: one per core)");
  cmd->add_option("--max-memory", opt->settings.max_memory, "Memory bound while loading, e.g. 8GiB");
  add_width_option(*cmd, opt->width);
  cmd->callback([opt] { run_whatif_command(*opt); });
}

}  // namespace ferret::cli
