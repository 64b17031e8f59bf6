// `ferret analyze TRACE|DIR...`: the layered diagnosis of each trace, or of a distributed job
// as a whole when the inputs are the ranks of one job.
#include <unistd.h>

#include <iostream>

#include "app/analyze_command.h"
#include "app/analyze_options.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "cli/world.h"
#include "report/trace/html_report.h"

namespace ferret::cli {

namespace {

struct AnalyzeCliOptions {
  std::vector<std::string> traces;
  bool json = false;
  bool markdown = false;
  // --top, --steps, --window, --time, --device, --peaks: the options the API and Python share,
  // mapped by analysis_options_from (app/analyze_options.h).
  AnalyzeOptions shared;
  std::string timeline_definition = "ferret";  // sets shared.hta_timeline
  unsigned threads = 0;
  unsigned jobs = 0;       // traces analysed at once; 0 = one per core
  std::string max_memory;  // "8GiB"; empty = default
  bool job = false;        // force the cross-rank report
  bool per_trace = false;  // force one report per trace
  std::size_t width = 0;   // --width; 0: COLUMNS or 80
  std::string html;        // --html FILE ("-": stdout)
};

AnalysisOptions to_analysis_options(const AnalyzeCliOptions& cli) {
  AnalyzeOptions shared = cli.shared;
  shared.hta_timeline = parse_timeline_definition(cli.timeline_definition) == TimelineDefinition::kHta;
  return analysis_options_from(shared);
}

// MPI_Finalize on every way out.
struct WorldGuard {
  World world;
  ~WorldGuard() { world_stop(world); }
};

void run_analyze_command(const AnalyzeCliOptions& cli) {
  if (cli.json && cli.markdown) usage_error("choose one of --json and --md");
  if (cli.job && cli.per_trace) usage_error("choose one of --job and --per-trace");
  if (!cli.html.empty()) refuse_output_over_input("--html", cli.html, cli.traces);
  AnalyzeRequest request;
  request.inputs = cli.traces;
  request.analysis = to_analysis_options(cli);
  request.format = cli.json ? AnalyzeFormat::kJson : cli.markdown ? AnalyzeFormat::kMarkdown : AnalyzeFormat::kText;
  request.grouping = cli.job         ? AnalyzeGrouping::kJob
                     : cli.per_trace ? AnalyzeGrouping::kPerTrace
                                     : AnalyzeGrouping::kAuto;

  if (launched_by_mpi_launcher() && !built_with_mpi()) {
    exec_sibling_binary("ferret-mpi");
    print_error(
        "started by an MPI launcher, but there is no ferret-mpi beside this ferret: install libopenmpi-dev and "
        "rebuild ferret, or run without mpirun");
    throw ExitCode{2};
  }
  WorldGuard guard{world_start()};
  const World& world = guard.world;
  if (world.size > 1 && cli.per_trace)
    usage_error("--per-trace cannot be spread over MPI processes; run it without mpirun");
  // Under MPI the launcher forwards stdout: whether it ends at a terminal is not known here.
  if (request.format == AnalyzeFormat::kText && world.size == 1) request.style = stdout_style(cli.width);
  request.jobs = thread_option(cli.jobs, "--jobs");
  request.threads = thread_option(cli.threads, "--threads");
  request.max_memory = memory_limit(cli.max_memory);
  request.start_progress = make_progress_bar;
  request.finish_progress = finish_progress_bar;
  request.on_message = [](const std::string& message) { print_error(message); };
  request.every_format = !cli.html.empty();

  WorldProcessGroup group(world);
  const AnalyzeOutput output = run_analyze(request, &group);
  if (request.every_format) {
    // The page from the JSON document; stdout keeps the report asked for, unless the page goes there.
    if (!output.json.empty()) write_html(cli.html, html_page(output.json, html_title(cli.traces)), cli.traces);
    if (cli.html != "-") {
      if (request.format == AnalyzeFormat::kJson)
        std::cout << output.json;
      else
        print_report(request.format == AnalyzeFormat::kMarkdown ? output.markdown : output.text);
    }
  } else if (request.format == AnalyzeFormat::kJson) {
    std::cout << output.out;
  } else {
    print_report(output.out);
  }
  std::cout.flush();
  if (output.exit_code != 0) throw ExitCode{output.exit_code};
}

}  // namespace

void register_analyze(CLI::App& app) {
  auto opt = std::make_shared<AnalyzeCliOptions>();
  CLI::App* cmd =
      app.add_subcommand("analyze",
                         "Diagnose traces: where the time goes, the bottleneck, what to change, the most it can gain; "
                         "the ranks of a distributed job together");
  cmd->add_option("traces", opt->traces,
                  "Trace files (Kineto JSON or legacy export; gzip/zstd/plain; - for stdin), or directories of a "
                  "job's rank traces")
      ->required();
  cmd->add_flag("--json", opt->json,
                "Print a JSON document (schema ferret.analysis/1, or ferret.job/1 for a job; see docs/ANALYSIS_JSON.md "
                "and docs/DISTRIBUTED.md)");
  cmd->add_flag("--md", opt->markdown, "Print Markdown to paste into a pull request");
  cmd->add_option("--html", opt->html,
                  "Also write the report as one self-contained HTML page to FILE (- for stdout, instead of the "
                  "report; docs/HTML.md)")
      ->type_name("FILE");
  add_width_option(*cmd, opt->width);
  cmd->add_flag("--job", opt->job,
                "Treat the traces as the ranks of one job (the default for a directory, or for "
                "traces that name distinct ranks)");
  cmd->add_flag("--per-trace", opt->per_trace, "One report per trace, even for the ranks of one job");
  cmd->add_option("--top", opt->shared.top, "Rows in top-N tables (default 10)")->check(CLI::Range(1, 1000));
  cmd->add_option("--steps", opt->shared.steps, "Analyse only these ProfilerStep numbers: A-B, A-, -B or N");
  cmd->add_option("--window", opt->shared.window,
                  "Analyse only the K-th span named NAME (a record_function / user annotation, e.g. warmup or "
                  "inference): NAME or NAME#K (docs/WINDOWS.md)");
  cmd->add_option("--time", opt->shared.time,
                  "Analyse only this stretch: A-B or A- (milliseconds from the trace start)");
  cmd->add_option("--timeline-definition", opt->timeline_definition,
                  "GPU timeline as ferret defines it (default) or as HolisticTraceAnalysis does (hta: its window "
                  "and rounding, to check ferret against HTA; docs/HTA.md)");
  cmd->add_option("--peaks", opt->shared.peaks,
                  "Device ceilings for the roofline (JSON: device, hbm_tb_per_s, matrix_tflop_per_s and "
                  "vector_tflop_per_s by dtype), replacing the datasheet figures");
  cmd->add_option("--device", opt->shared.device, "Analyse only this GPU device index")->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--threads", opt->threads,
                  "Parser threads per trace (default: one per core for a single trace, "
                  "one per trace when several are analysed at once)");
  cmd->add_option("--jobs", opt->jobs, "Traces analysed at once (default: one per core)")->check(CLI::Range(1, 4096));
  cmd->add_option("--max-memory", opt->max_memory,
                  "Memory bound of the run: loading stops (keeping what was read) early enough that the models, "
                  "read buffers and analyses fit, e.g. 8GiB (default: 3/4 of RAM or of the cgroup limit)");
  cmd->callback([opt] { run_analyze_command(*opt); });
}

}  // namespace ferret::cli
