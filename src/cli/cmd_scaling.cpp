// `ferret scaling RUN_DIR...`: runs of one job at different world sizes, how step time and
// communication grow with ranks, and a projection to larger sizes.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "job/job_analysis.h"
#include "job/job_runner.h"
#include "job/scaling.h"
#include "report/job/scaling_report.h"

namespace ferret::cli {

namespace {

struct ScalingCliOptions {
  std::vector<std::string> runs;
  std::vector<int> project;
  bool json = false;
  bool markdown = false;
  unsigned jobs = 0;
  unsigned threads = 0;
  std::string max_memory;
};

void run_scaling(const ScalingCliOptions& cli) {
  if (cli.json && cli.markdown) usage_error("choose one of --json and --md");
  std::vector<ScalingRun> runs;
  int failures = 0;
  for (const std::string& dir : cli.runs) {
    TraceInputs inputs;
    try {
      inputs = expand_inputs({dir});
    } catch (const std::exception& e) {
      print_error(e.what());
      throw ExitCode{2};
    }
    for (const std::string& entry : inputs.left_out) print_error("left out " + entry);
    TraceRunOptions options;
    options.jobs = thread_option(cli.jobs, "--jobs");
    options.threads = thread_option(cli.threads, "--threads");
    options.max_memory = memory_limit(cli.max_memory);
    std::vector<std::size_t> all(inputs.files.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    std::vector<TraceOutcome> outcomes = analyze_trace_files(inputs.files, all, options);
    const TraceTriage triage = triage_trace_outcomes(outcomes, inputs.given_by_name);
    for (const std::string& message : triage.messages) print_error(message);
    failures += triage.failures;
    std::vector<RankResult> ranks;
    for (TraceOutcome& o : outcomes)
      if (o.ok()) ranks.push_back(std::move(o.rank));
    if (ranks.empty()) {
      print_error(dir + ": no rank could be analysed; left out");
      continue;
    }
    runs.push_back(summarize_scaling_run(analyze_job(std::move(ranks)), dir));
  }
  if (runs.empty()) throw ExitCode{2};
  const ScalingAnalysis result = analyze_scaling(std::move(runs), cli.project);
  if (cli.json)
    std::cout << scaling_json(result).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  else
    print_report(cli.markdown ? scaling_markdown(result) : scaling_text(result));
  std::cout.flush();
  if (failures > 0) throw ExitCode{2};
}

}  // namespace

void register_scaling(CLI::App& app) {
  auto opt = std::make_shared<ScalingCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "scaling", "Runs of one job at several world sizes: step time and communication against ranks, and a projection");
  cmd->add_option("runs", opt->runs, "One directory of rank traces per run (e.g. ws-8/ ws-16/ ws-32/)")->required();
  cmd->add_option("--project", opt->project, "World sizes to project (default: 2x, 4x and 8x the largest run)")
      ->delimiter(',')
      ->check(CLI::Range(2, 1 << 24));
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.scaling/1, see docs/DISTRIBUTED.md)");
  cmd->add_flag("--md", opt->markdown, "Print Markdown to paste into a pull request");
  cmd->add_option("--jobs", opt->jobs, "Traces analysed at once (default: one per core)")->check(CLI::Range(1, 4096));
  cmd->add_option("--threads", opt->threads, "Parser threads per trace");
  cmd->add_option("--max-memory", opt->max_memory, "Memory for the models analysed at once, e.g. 8GiB");
  cmd->callback([opt] { run_scaling(*opt); });
}

}  // namespace ferret::cli
