// `ferret gen`: writes large or synthetic traces (see gen/ and docs/GEN.md).
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/input_error.h"
#include "base/units.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "gen/inflate.h"
#include "gen/job.h"
#include "gen/scenarios.h"

namespace ferret::cli {

namespace {

struct InflateArgs {
  std::string input;
  std::string output;
  std::string size;
  std::uint64_t copies = 0;
  double gap_us = 10;
  bool gzip = false;
  bool no_gzip = false;
};

struct ScenarioArgs {
  std::string name;
  std::string output;
  int steps = 10;
  std::uint64_t seed = 1;
  bool gzip = false;
  bool no_gzip = false;
  bool list = false;
};

struct JobArgs {
  std::string output;
  int ranks = 0;
  std::vector<int> world_sizes;  // gen scaling
  int steps = 10;
  std::uint64_t seed = 1;
  int ranks_per_host = 8;
  int straggler = -1;
  std::string straggler_cause = "compute";
  std::string sharding = "ddp";
  double straggler_delay_ms = 5.0;
  int slow_link = -1;
  double clock_skew_ms = 0.0;
  bool no_seq = false;
  bool no_distributed_info = false;
  std::string target_size;
  bool gzip = false;
  unsigned threads = 0;
};

// The summary goes to stdout, unless the trace itself does.
std::FILE* summary_stream(const std::string& output) { return output == "-" ? stderr : stdout; }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void run_inflate(const InflateArgs& args) {
  if (args.gzip && args.no_gzip) usage_error("--gzip and --no-gzip exclude each other");
  if (args.size.empty() == (args.copies == 0)) usage_error("give exactly one of --size and --copies");
  InflateOptions options;
  options.input = args.input;
  options.output = args.output;
  options.compression = output_compression_for(args.output, args.gzip, args.no_gzip);
  options.copies = args.copies;
  options.gap_ns = static_cast<std::int64_t>(args.gap_us * 1000.0 + 0.5);
  if (!args.size.empty()) {
    try {
      options.target_bytes = parse_size(args.size);
    } catch (const std::invalid_argument& e) {
      usage_error(e.what());
    }
    if (options.target_bytes == 0) usage_error("--size must be above 0");
    options.progress = make_progress_bar("inflating " + args.output, options.target_bytes);
  }
  const auto start = std::chrono::steady_clock::now();
  InflateResult result;
  try {
    result = inflate_trace(options);
  } catch (const InputError& e) {
    finish_progress_bar();
    print_error(e.what());
    throw ExitCode{2};
  }
  finish_progress_bar();
  const double elapsed = seconds_since(start);
  std::FILE* out = summary_stream(args.output);
  std::fprintf(out, "wrote %s: %s of JSON", args.output.c_str(), human_bytes(result.json_bytes).c_str());
  if (options.compression == OutputCompression::kGzip)
    std::fprintf(out, " (%s gzip)", human_bytes(result.file_bytes).c_str());
  std::fprintf(out, ", %llu copies of %llu events + %llu metadata = %llu events, in %.1f s\n",
               static_cast<unsigned long long>(result.copies), static_cast<unsigned long long>(result.events_per_copy),
               static_cast<unsigned long long>(result.metadata_events),
               static_cast<unsigned long long>(result.events_written), elapsed);
  std::fprintf(out, "per copy: ts +%.3f us, ids +%lld, ProfilerStep numbers +%lld\n",
               static_cast<double>(result.period_ns) / 1000.0, static_cast<long long>(result.id_stride),
               static_cast<long long>(result.step_stride));
  for (const std::string& w : result.warnings) print_error("warning: " + w);
}

void run_scenario(const ScenarioArgs& args) {
  if (args.list) {
    for (const ScenarioInfo& s : scenario_list()) std::printf("%-20s %s\n", s.name.c_str(), s.summary.c_str());
    return;
  }
  if (args.name.empty()) usage_error("scenario: give a NAME (see --list)");
  if (args.output.empty()) usage_error("scenario: give an output file with -o");
  if (args.gzip && args.no_gzip) usage_error("--gzip and --no-gzip exclude each other");
  ScenarioOptions options;
  options.name = args.name;
  options.output = args.output;
  options.steps = args.steps;
  options.seed = args.seed;
  options.compression = output_compression_for(args.output, args.gzip, args.no_gzip);
  const auto start = std::chrono::steady_clock::now();
  ScenarioResult result;
  try {
    result = write_scenario(options);
  } catch (const std::invalid_argument& e) {
    usage_error(e.what());
  }
  std::FILE* out = summary_stream(args.output);
  std::fprintf(out, "wrote %s: scenario %s, %d steps, seed %llu, %llu events, %s of JSON", args.output.c_str(),
               args.name.c_str(), args.steps, static_cast<unsigned long long>(args.seed),
               static_cast<unsigned long long>(result.events), human_bytes(result.json_bytes).c_str());
  if (options.compression == OutputCompression::kGzip)
    std::fprintf(out, " (%s gzip)", human_bytes(result.file_bytes).c_str());
  std::fprintf(out, ", in %.2f s\nground truth: %s\n", seconds_since(start), result.ground_truth_json.c_str());
}

JobOptions job_options(const JobArgs& args) {
  if (args.output.empty()) usage_error("give an output directory with -o");
  JobOptions options;
  options.output_dir = args.output;
  options.ranks = args.ranks;
  options.ranks_per_host = args.ranks_per_host;
  options.steps = args.steps;
  options.seed = args.seed;
  options.straggler = args.straggler;
  options.straggler_cause = args.straggler_cause;
  options.sharding = args.sharding;
  options.straggler_delay_ms = args.straggler_delay_ms;
  options.slow_link_host = args.slow_link;
  options.clock_skew_ms = args.clock_skew_ms;
  options.seq = !args.no_seq;
  options.distributed_info = !args.no_distributed_info;
  options.compression = args.gzip ? OutputCompression::kGzip : OutputCompression::kNone;
  options.threads = thread_option(args.threads, "--threads");
  if (!args.target_size.empty()) {
    try {
      options.target_bytes = parse_size(args.target_size);
    } catch (const std::invalid_argument& e) {
      usage_error(e.what());
    }
    if (options.target_bytes == 0) usage_error("--target-size must be above 0");
  }
  return options;
}

// A one-line count of rank files written, on stderr when it is a terminal.
std::function<void(int, int)> rank_progress(const std::string& label) {
  auto bar = make_progress_bar(label, kProgressMinBytes);  // shown whenever stderr is a terminal
  if (!bar) return {};
  return [bar](int done, int total) { bar(static_cast<std::uint64_t>(done), static_cast<std::uint64_t>(total)); };
}

void print_job(std::FILE* out, const std::string& dir, const JobResult& r, OutputCompression compression) {
  std::fprintf(out, "wrote %s: %zu rank files, %d steps, %llu events, %s of JSON", dir.c_str(), r.files.size(), r.steps,
               static_cast<unsigned long long>(r.events), human_bytes(r.json_bytes).c_str());
  if (compression == OutputCompression::kGzip) std::fprintf(out, " (%s gzip)", human_bytes(r.file_bytes).c_str());
  std::fprintf(out, "\n");
}

void run_job_command(const JobArgs& args) {
  JobOptions options = job_options(args);
  options.progress = rank_progress("writing ranks");
  const auto start = std::chrono::steady_clock::now();
  JobResult result;
  try {
    result = write_job(options);
  } catch (const std::invalid_argument& e) {
    finish_progress_bar();
    usage_error(e.what());
  }
  finish_progress_bar();
  print_job(stdout, args.output, result, options.compression);
  const auto truth = nlohmann::json::parse(result.ground_truth_json);
  std::printf("in %.2f s; ground truth: %s/job_truth.json\n", seconds_since(start), args.output.c_str());
  for (const auto& finding : truth["expected_findings"]) std::printf("  %s\n", finding.get<std::string>().c_str());
}

void run_scaling_command(const JobArgs& args) {
  JobOptions options = job_options(args);
  options.progress = rank_progress("writing ranks");
  const auto start = std::chrono::steady_clock::now();
  ScalingResult result;
  try {
    result = write_scaling(options, args.world_sizes);
  } catch (const std::invalid_argument& e) {
    finish_progress_bar();
    usage_error(e.what());
  }
  finish_progress_bar();
  for (std::size_t i = 0; i < result.jobs.size(); ++i) {
    const std::string dir = args.output + "/ws-" + std::to_string(result.jobs[i].files.size());
    print_job(stdout, dir, result.jobs[i], options.compression);
  }
  std::printf("in %.2f s; ground truth: %s/scaling_truth.json\n", seconds_since(start), args.output.c_str());
  const auto truth = nlohmann::json::parse(result.ground_truth_json);
  std::printf("  %6s %6s %-11s %12s %12s %16s %10s\n", "ranks", "hosts", "link", "step ms", "exposed ms",
              "transfer ms/step", "efficiency");
  for (const auto& row : truth["by_world_size"])
    std::printf("  %6d %6d %-11s %12.3f %12.3f %16.3f %10.3f\n", row["world_size"].get<int>(), row["hosts"].get<int>(),
                row["link"].get<std::string>().c_str(), row["step_ns"].get<double>() / 1e6,
                row["exposed_comm_ns"].get<double>() / 1e6, row["transfer_ns_per_step"].get<double>() / 1e6,
                row["scaling_efficiency"].get<double>());
}

// The options `gen job` and `gen scaling` share.
void add_job_options(CLI::App* cmd, JobArgs& args) {
  cmd->add_option("-o,--output", args.output, "Output directory (created): rank-<r>.json[.gz] and the ground truth")
      ->required();
  cmd->add_option("--steps", args.steps, "ProfilerStep spans per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--seed", args.seed, "Random seed; the same options give the same bytes")->capture_default_str();
  cmd->add_option("--ranks-per-host", args.ranks_per_host, "GPUs (ranks) per host")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--straggler", args.straggler,
                  "Rank that arrives late at the collectives, by --straggler-delay-ms per step");
  cmd->add_option("--straggler-cause", args.straggler_cause,
                  "Why it is late: compute (slower forward kernels), input "
                  "(longer DataLoader wait), sync (host syncs that stall its launches)")
      ->capture_default_str()
      ->check(CLI::IsMember({"compute", "input", "sync"}));
  cmd->add_option("--straggler-delay-ms", args.straggler_delay_ms, "How late the straggler is per step (ms)")
      ->check(finite_range(0, 1e6))
      ->capture_default_str();
  cmd->add_option("--slow-link", args.slow_link,
                  "Host whose network link is slow (12 GB/s socket fallback instead of 50 GB/s IB)");
  cmd->add_option("--clock-skew-ms", args.clock_skew_ms,
                  "Host clock offsets drawn uniformly in +-this (host 0 is exact)")
      ->check(finite_range(0, 1e6))
      ->capture_default_str();
  cmd->add_option("--sharding", args.sharding,
                  "How gradients are synchronised: ddp (an all-reduce per bucket) or zero2 (a reduce-scatter per "
                  "bucket, AdamW on each rank's shard, then an all-gather of the parameters per bucket)")
      ->capture_default_str()
      ->check(CLI::IsMember({"ddp", "zero2"}));
  cmd->add_flag("--no-seq", args.no_seq, "Leave the Seq arg out of the collectives (older torch)");
  cmd->add_flag("--no-distributed-info", args.no_distributed_info,
                "Leave distributedInfo and the Rank arg out: the rank is only in the file name");
  cmd->add_option("--target-size", args.target_size,
                  "Repeat steps until each rank's JSON is about this size (e.g. 100MB); overrides --steps");
  cmd->add_flag("--gzip", args.gzip, "Write rank-<r>.json.gz");
  cmd->add_option("--threads", args.threads, "Rank files written at once (default: one per core)");
}

}  // namespace

void register_gen(CLI::App& app) {
  CLI::App* gen =
      app.add_subcommand("gen", "Generate traces: inflate a real trace, synthesize a scenario or a multi-rank job");
  gen->require_subcommand(1);
  gen->footer("See docs/GEN.md for what each scenario contains and its ground truth.");

  auto inflate = std::make_shared<InflateArgs>();
  CLI::App* inf = gen->add_subcommand(
      "inflate", "Repeat a real trace's events copy after copy (times shifted, ids renumbered) up to a target size");
  inf->add_option("--from", inflate->input,
                  "Trace to inflate (Kineto JSON, gzip/zstd/plain; a file, read once per copy)")
      ->required();
  inf->add_option(
      "--size", inflate->size,
      "Target uncompressed size; stops after the copy that reaches it. Suffixes: K M G T or KiB MiB GiB TiB "
      "(binary), KB MB GB TB (decimal)");
  inf->add_option("--copies", inflate->copies, "Write exactly this many copies instead of a size");
  inf->add_option("-o,--output", inflate->output, "Output file (- for stdout); gzip when it ends in .gz")->required();
  inf->add_flag("--gzip", inflate->gzip, "Compress with gzip whatever the output name");
  inf->add_flag("--no-gzip", inflate->no_gzip, "Write plain JSON even to a .gz name");
  inf->add_option("--gap-us", inflate->gap_us, "Idle time between the end of one copy and the start of the next (us)")
      ->check(finite_range(0, 1e9))
      ->capture_default_str();
  inf->callback([inflate] { run_inflate(*inflate); });

  auto scenario = std::make_shared<ScenarioArgs>();
  std::string names;
  for (const ScenarioInfo& s : scenario_list()) names += fmt::format("\n  {:<20} {}", s.name, s.summary);
  CLI::App* sc = gen->add_subcommand("scenario", "Synthesize an H100 training trace with a known bottleneck" + names);
  sc->add_option("name", scenario->name, "Scenario name (see --list)");
  sc->add_option("-o,--output", scenario->output, "Output file (- for stdout); gzip when it ends in .gz");
  sc->add_option("--steps", scenario->steps, "Number of ProfilerStep spans")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  sc->add_option("--seed", scenario->seed, "Random seed; the same seed gives the same bytes")->capture_default_str();
  sc->add_flag("--gzip", scenario->gzip, "Compress with gzip whatever the output name");
  sc->add_flag("--no-gzip", scenario->no_gzip, "Write plain JSON even to a .gz name");
  sc->add_flag("--list", scenario->list, "List the scenarios and exit");
  sc->callback([scenario] { run_scenario(*scenario); });

  auto job = std::make_shared<JobArgs>();
  CLI::App* jb = gen->add_subcommand(
      "job",
      "Synthesize a multi-rank DDP job on H100 hosts: one trace per rank, with a straggler, a slow link, clock skew");
  jb->add_option("--ranks", job->ranks, "World size (2 .. 4096)")->required()->check(CLI::Range(2, 4096));
  add_job_options(jb, *job);
  jb->callback([job] { run_job_command(*job); });

  auto scaling = std::make_shared<JobArgs>();
  CLI::App* sl = gen->add_subcommand(
      "scaling", "Synthesize the same DDP job at several world sizes: DIR/ws-<n>/rank-<r>.json and scaling_truth.json");
  sl->add_option("--world-sizes", scaling->world_sizes, "World sizes, comma-separated (e.g. 2,4,8,16)")
      ->required()
      ->delimiter(',')
      ->check(CLI::Range(2, 4096));
  add_job_options(sl, *scaling);
  sl->callback([scaling] { run_scaling_command(*scaling); });
}

}  // namespace ferret::cli
