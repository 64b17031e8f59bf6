// `ferret analyze TRACE|DIR...`: the layered diagnosis of each trace, or of a distributed job
// as a whole when the inputs are the ranks of one job.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/rank_analysis.h"
#include "cli/world.h"
#include "ingest/trace_loader.h"
#include "job/job_analysis.h"
#include "job/job_diagnosis.h"
#include "job/rank_files.h"
#include "report/job_report.h"

namespace ferret::cli {

namespace {

struct AnalyzeCliOptions {
  std::vector<std::string> traces;
  bool json = false;
  bool markdown = false;
  int top = 10;
  std::string steps;
  std::string window;  // --window NAME[#K]
  std::string time;    // --time A-B (ms)
  std::string timeline_definition = "ferret";
  int device = -1;
  unsigned threads = 0;
  unsigned jobs = 0;       // traces analysed at once; 0 = one per core
  std::string max_memory;  // "8GiB"; empty = default
  bool job = false;        // force the cross-rank report
  bool per_trace = false;  // force one report per trace
};

AnalysisOptions to_analysis_options(const AnalyzeCliOptions& cli) {
  AnalysisOptions o;
  o.top_k = cli.top;
  if (cli.device >= 0) o.device = cli.device;
  parse_step_range(cli.steps, o);
  parse_time_range(cli.time, o);
  o.window_name = cli.window;
  o.timeline_definition = parse_timeline_definition(cli.timeline_definition);
  return o;
}

// Inputs are the ranks of one job when each says which rank it is (distributedInfo or its file
// name), no two say the same, and they agree on the world size.
bool looks_like_one_job(const std::vector<TraceOutcome>& outcomes) {
  std::set<int> ranks, world_sizes;
  std::size_t ok = 0;
  for (const TraceOutcome& o : outcomes) {
    if (!o.error.empty()) continue;
    ++ok;
    int rank = o.rank.rank;
    if (rank < 0) rank = rank_from_file_name(o.path).value_or(-1);
    if (rank < 0 || !ranks.insert(rank).second) return false;
    if (o.rank.world_size > 0) world_sizes.insert(o.rank.world_size);
  }
  return ok >= 2 && world_sizes.size() <= 1;
}

// The files each MPI process analyses: largest first to the least loaded process (LPT), the
// same on every process since it depends only on the file sizes.
std::vector<std::size_t> my_share(const std::vector<std::string>& files, const World& world) {
  std::vector<std::size_t> mine;
  if (world.size <= 1) {
    for (std::size_t i = 0; i < files.size(); ++i) mine.push_back(i);
    return mine;
  }
  std::vector<std::pair<std::uint64_t, std::size_t>> by_size;
  for (std::size_t i = 0; i < files.size(); ++i) by_size.push_back({input_file_size(files[i]), i});
  std::stable_sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::uint64_t> load(static_cast<std::size_t>(world.size), 0);
  for (const auto& [size, index] : by_size) {
    const auto p = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[p] += std::max<std::uint64_t>(size, 1);
    if (static_cast<int>(p) == world.rank) mine.push_back(index);
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

// What a process sends to process 0: per analysed file, its index and its rank result or error.
std::vector<std::uint8_t> encode_share(const std::vector<std::size_t>& indices,
                                       const std::vector<TraceOutcome>& outcomes) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const TraceOutcome& o = outcomes[k];
    rows.push_back(
        {indices[k], o.error,
         nlohmann::json::binary(o.error.empty() ? encode_rank_result(o.rank) : std::vector<std::uint8_t>{})});
  }
  return nlohmann::json::to_msgpack(rows);
}

void decode_share(const std::vector<std::uint8_t>& bytes, const std::vector<std::string>& files,
                  std::vector<TraceOutcome>& all) {
  const nlohmann::json rows = nlohmann::json::from_msgpack(bytes);
  for (const nlohmann::json& row : rows) {
    const auto index = row.at(0).get<std::size_t>();
    if (index >= all.size()) throw std::runtime_error("a process sent a result for an unknown file");
    TraceOutcome& o = all[index];
    o.path = files[index];
    o.error = row.at(1).get<std::string>();
    if (o.error.empty()) o.rank = decode_rank_result(row.at(2).get_binary());
  }
}

// MPI_Finalize on every way out.
struct WorldGuard {
  World world;
  ~WorldGuard() { world_stop(world); }
};

void run_analyze(const AnalyzeCliOptions& cli) {
  if (cli.json && cli.markdown) {
    std::fprintf(stderr, "ferret: choose one of --json and --md\n");
    throw ExitCode{2};
  }
  if (cli.job && cli.per_trace) {
    std::fprintf(stderr, "ferret: choose one of --job and --per-trace\n");
    throw ExitCode{2};
  }
  const AnalysisOptions options = to_analysis_options(cli);
  const TraceInputs inputs = expand_inputs(cli.traces);
  const std::vector<std::string>& files = inputs.files;
  const std::vector<bool>& given_by_name = inputs.given_by_name;
  const bool directory_given = inputs.directory_given;

  if (launched_by_mpi_launcher() && !built_with_mpi()) {
    exec_sibling_binary("ferret-mpi");
    std::fprintf(stderr,
                 "ferret: started by an MPI launcher, but there is no ferret-mpi beside this ferret: "
                 "install libopenmpi-dev and rebuild ferret, or run without mpirun\n");
    throw ExitCode{2};
  }
  WorldGuard guard{world_start()};
  const World& world = guard.world;
  if (world.size > 1 && cli.per_trace) {
    std::fprintf(stderr, "ferret: --per-trace cannot be spread over MPI processes; run it without mpirun\n");
    throw ExitCode{2};
  }
  const std::vector<std::size_t> mine = my_share(files, world);
  // Under MPI the launcher forwards stdout: whether it ends at a terminal is not known here.
  const Style style = (cli.json || cli.markdown || world.size > 1) ? Style{} : style_for_fd(STDOUT_FILENO);

  TraceRunOptions run;
  run.analysis = options;
  run.rendering = cli.json ? TraceRendering::kJson : cli.markdown ? TraceRendering::kMarkdown : TraceRendering::kText;
  run.style = style;
  run.jobs = thread_option(cli.jobs, "--jobs");
  run.threads = thread_option(cli.threads, "--threads");
  run.max_memory = memory_limit(cli.max_memory);
  run.progress = world.size == 1;
  std::vector<TraceOutcome> outcomes = analyze_trace_files(files, mine, run);
  if (world.size > 1) {
    // Process 0 gathers the rank results and writes the one report; the others only analyse.
    const std::vector<std::vector<std::uint8_t>> shares = world_gather(world, encode_share(mine, outcomes));
    int exit_code = 0;
    if (world.rank == 0) {
      outcomes.assign(files.size(), TraceOutcome{});
      try {
        for (const std::vector<std::uint8_t>& share : shares) decode_share(share, files, outcomes);
      } catch (const std::exception& e) {
        print_error(fmt::format("cannot read a process's results: {}", e.what()));
        world_broadcast(world, 2);
        throw ExitCode{2};
      }
    }
    if (world.rank != 0) {
      exit_code = world_broadcast(world, 0);
      if (exit_code != 0) throw ExitCode{exit_code};
      return;
    }
  }

  // A directory can hold other JSON beside the rank traces (a config, a ground truth): a file
  // found in one that is not a trace document at all is left out with a note, not a failure.
  const int failures = report_trace_errors(outcomes, given_by_name);

  const bool job_mode =
      !cli.per_trace && (world.size > 1 || cli.job || directory_given || looks_like_one_job(outcomes));
  if (job_mode) {
    std::vector<RankResult> ranks;
    for (TraceOutcome& o : outcomes) {
      if (o.error.empty()) {
        ranks.push_back(std::move(o.rank));
      } else {
        RankResult failed;
        failed.source = o.path;
        failed.error = o.error;
        ranks.push_back(std::move(failed));
      }
    }
    const JobAnalysis job = analyze_job(std::move(ranks));
    const JobDiagnosis diagnosis = diagnose_job(job);
    if (cli.json)
      std::cout << job_json(job, diagnosis).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                << '\n';
    else
      print_report(cli.markdown ? job_markdown(job, diagnosis) : job_text(job, diagnosis, style));
  } else if (cli.json) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (TraceOutcome& o : outcomes)
      all.push_back(o.error.empty() ? std::move(o.json)
                                    : nlohmann::ordered_json{{"source", o.path}, {"error", o.error}});
    nlohmann::ordered_json doc = {{"schema", "ferret.analysis/1"}, {"traces", all}};
    std::cout << doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  } else {
    bool first = true;
    for (const TraceOutcome& o : outcomes) {
      if (!o.error.empty()) continue;
      if (!first) std::cout << '\n';
      print_report(o.report);
      first = false;
    }
  }
  std::cout.flush();
  const int exit_code = world_broadcast(world, failures > 0 ? 2 : 0);
  if (exit_code != 0) throw ExitCode{exit_code};
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
  cmd->add_flag("--job", opt->job,
                "Treat the traces as the ranks of one job (the default for a directory, or for "
                "traces that name distinct ranks)");
  cmd->add_flag("--per-trace", opt->per_trace, "One report per trace, even for the ranks of one job");
  cmd->add_option("--top", opt->top, "Rows in top-N tables (default 10)")->check(CLI::Range(1, 1000));
  cmd->add_option("--steps", opt->steps, "Analyse only these ProfilerStep numbers: A-B, A-, -B or N");
  cmd->add_option("--window", opt->window,
                  "Analyse only the K-th span named NAME (a record_function / user annotation, e.g. warmup or "
                  "inference): NAME or NAME#K (docs/WINDOWS.md)");
  cmd->add_option("--time", opt->time, "Analyse only this stretch: A-B or A- (milliseconds from the trace start)");
  cmd->add_option("--timeline-definition", opt->timeline_definition,
                  "GPU timeline as ferret defines it (default) or as HolisticTraceAnalysis does (hta: its window "
                  "and rounding, to check ferret against HTA; docs/HTA.md)");
  cmd->add_option("--device", opt->device, "Analyse only this GPU device index")->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--threads", opt->threads,
                  "Parser threads per trace (default: one per core for a single trace, "
                  "one per trace when several are analysed at once)");
  cmd->add_option("--jobs", opt->jobs, "Traces analysed at once (default: one per core)")->check(CLI::Range(1, 4096));
  cmd->add_option("--max-memory", opt->max_memory,
                  "Memory bound of the run: loading stops (keeping what was read) early enough that the models, "
                  "read buffers and analyses fit, e.g. 8GiB (default: 3/4 of RAM or of the cgroup limit)");
  cmd->callback([opt] { run_analyze(*opt); });
}

}  // namespace ferret::cli
