// `ferret diff BASE NEW`: what changed between two traces of the same job, and a CI gate on a
// step-time regression. Exit status: 0, 1 the gate failed, 2 unusable input or usage, 3 the gate
// is inconclusive (docs/DIFF.md).
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "analysis/trace_analysis.h"
#include "app/diff_command.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "diff/trace_diff.h"
#include "ingest/trace_loader.h"
#include "report/diff/diff_report.h"
#include "report/trace/html_report.h"

namespace ferret::cli {

namespace {

struct DiffCliOptions {
  std::string base;
  std::string next;
  std::size_t width = 0;  // --width; 0: COLUMNS or 80
  bool json = false;
  bool markdown = false;
  int top = 10;
  std::string steps;
  int device = -1;
  double fail_if_slower = -1;  // < 0: no gate
  unsigned threads = 0;
  std::string max_memory;  // "8GiB"; empty = default
  std::string html;        // --html FILE ("-": stdout)
};

TraceModel load_for_diff(const std::string& label, const std::string& path, const DiffCliOptions& cli) {
  DiffInputOptions input;
  input.threads = thread_option(cli.threads, "--threads");
  if (!cli.max_memory.empty()) input.max_memory = memory_limit(cli.max_memory);
  input.start_progress = make_progress_bar;
  input.finish_progress = finish_progress_bar;
  try {
    return load_diff_input(label, path, input);
  } catch (const InputError& e) {
    print_error(e.what());
    throw ExitCode{2};
  }
}

void run_diff(const DiffCliOptions& cli) {
  if (cli.json && cli.markdown) {
    usage_error("choose one of --json and --md");
  }
  if (cli.base == "-" && cli.next == "-") {
    usage_error("only one of BASE and NEW can be read from stdin");
  }
  if (!cli.html.empty()) refuse_output_over_input("--html", cli.html, {cli.base, cli.next});
  DiffOptions options;
  options.top = cli.top;
  parse_step_range(cli.steps, options.analysis);
  if (cli.device >= 0) options.analysis.device = cli.device;
  if (cli.fail_if_slower >= 0) options.fail_if_slower_pct = cli.fail_if_slower;

  const TraceModel base = load_for_diff("BASE", cli.base, cli);
  const TraceModel next = load_for_diff("NEW", cli.next, cli);
  const TraceDiff diff = diff_traces(base, next, options);

  if (!cli.html.empty())
    write_html(cli.html,
               html_page(diff_json(diff).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + '\n',
                         html_title({cli.base, cli.next})),
               {cli.base, cli.next});
  if (cli.html == "-") {
    // the page took stdout
  } else if (cli.json) {
    std::cout << diff_json(diff).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  } else if (cli.markdown) {
    print_report(diff_markdown(diff));
  } else {
    print_report(diff_text(diff, stdout_style(cli.width)));
  }
  std::cout.flush();
  if (diff.exit_code() != 0) throw ExitCode{diff.exit_code()};
}

}  // namespace

void register_diff(CLI::App& app) {
  auto opt = std::make_shared<DiffCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Compare two traces of the same job: step time with a significance test, breakdown, ops, kernels, findings");
  cmd->add_option("base", opt->base,
                  "The trace before the change (Kineto JSON or legacy export; gzip/zstd/plain; - for stdin)")
      ->required();
  cmd->add_option("new", opt->next, "The trace after the change")->required();
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.diff/2, see docs/DIFF.md)");
  add_width_option(*cmd, opt->width);
  cmd->add_flag("--md", opt->markdown, "Print Markdown to paste into a pull request");
  cmd->add_option("--html", opt->html,
                  "Also write the comparison as one self-contained HTML page to FILE (- for stdout; docs/HTML.md)")
      ->type_name("FILE");
  cmd->add_option("--top", opt->top, "Rows per list of added, removed, slower and faster items (default 10)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--fail-if-slower", opt->fail_if_slower,
                  "CI gate on the step-time change: exit 1 when NEW is confirmed slower than BASE by more than PCT "
                  "percent, 3 when the data cannot settle it (docs/DIFF.md), 0 when a slowdown beyond PCT is ruled out")
      ->check(finite_range(0, 1e6))
      ->type_name("PCT");
  cmd->add_option("--steps", opt->steps, "Compare only these ProfilerStep numbers (in both): A-B, A-, -B or N");
  cmd->add_option("--device", opt->device, "Compare only this GPU device index")->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--threads", opt->threads, "Parser threads (default: one per core)");
  cmd->add_option("--max-memory", opt->max_memory,
                  "Memory bound for each trace: loading stops (keeping what was read) early enough that its "
                  "model and analysis fit, e.g. 8GiB (default: half of 3/4 of RAM or of the cgroup limit)");
  cmd->callback([opt] { run_diff(*opt); });
}

}  // namespace ferret::cli
