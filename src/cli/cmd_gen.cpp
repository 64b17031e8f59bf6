// `ferret gen`: writes large or synthetic traces (see gen/ and docs/GEN.md).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "gen/inflate.h"
#include "gen/scenarios.h"
#include "ingest/byte_source.h"

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

std::string human_bytes(std::uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1ull << 20));
  if (bytes >= (1ull << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / (1ull << 10));
  return fmt::format("{} B", bytes);
}

// The summary goes to stdout, unless the trace itself does.
std::FILE* summary_stream(const std::string& output) { return output == "-" ? stderr : stdout; }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void usage_error(const std::string& message) {
  std::fprintf(stderr, "ferret gen: %s\n", message.c_str());
  throw ExitCode{2};
}

void run_inflate(const InflateArgs& args) {
  if (args.gzip && args.no_gzip) usage_error("--gzip and --no-gzip exclude each other");
  if (args.size.empty() == (args.copies == 0)) usage_error("give exactly one of --size and --copies");
  if (args.gap_us < 0) usage_error("--gap-us cannot be negative");
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
    std::fprintf(stderr, "ferret: %s\n", e.what());
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
  for (const std::string& w : result.warnings) std::fprintf(stderr, "ferret: warning: %s\n", w.c_str());
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

}  // namespace

void register_gen(CLI::App& app) {
  CLI::App* gen = app.add_subcommand("gen", "Generate traces: inflate a real trace, or synthesize a scenario");
  gen->require_subcommand(1);
  gen->footer("See docs/GEN.md for what each scenario contains and its ground truth.");

  auto inflate = std::make_shared<InflateArgs>();
  CLI::App* inf = gen->add_subcommand(
      "inflate",
      "Repeat a real trace's events copy after copy (times shifted, ids renumbered) up to a target size");
  inf->add_option("--from", inflate->input, "Trace to inflate (Kineto JSON, gzip/zstd/plain; a file, read once per copy)")
      ->required();
  inf->add_option("--size", inflate->size,
                  "Target uncompressed size; stops after the copy that reaches it. Suffixes: K M G T or KiB MiB GiB TiB "
                  "(binary), KB MB GB TB (decimal)");
  inf->add_option("--copies", inflate->copies, "Write exactly this many copies instead of a size");
  inf->add_option("-o,--output", inflate->output, "Output file (- for stdout); gzip when it ends in .gz")->required();
  inf->add_flag("--gzip", inflate->gzip, "Compress with gzip whatever the output name");
  inf->add_flag("--no-gzip", inflate->no_gzip, "Write plain JSON even to a .gz name");
  inf->add_option("--gap-us", inflate->gap_us, "Idle time between the end of one copy and the start of the next (us)")
      ->capture_default_str();
  inf->callback([inflate] { run_inflate(*inflate); });

  auto scenario = std::make_shared<ScenarioArgs>();
  std::string names;
  for (const ScenarioInfo& s : scenario_list()) names += fmt::format("\n  {:<20} {}", s.name, s.summary);
  CLI::App* sc = gen->add_subcommand("scenario", "Synthesize an H100 training trace with a known bottleneck" + names);
  sc->add_option("name", scenario->name, "Scenario name (see --list)");
  sc->add_option("-o,--output", scenario->output, "Output file (- for stdout); gzip when it ends in .gz");
  sc->add_option("--steps", scenario->steps, "Number of ProfilerStep spans")->capture_default_str()->check(CLI::Range(1, 100000));
  sc->add_option("--seed", scenario->seed, "Random seed; the same seed gives the same bytes")->capture_default_str();
  sc->add_flag("--gzip", scenario->gzip, "Compress with gzip whatever the output name");
  sc->add_flag("--no-gzip", scenario->no_gzip, "Write plain JSON even to a .gz name");
  sc->add_flag("--list", scenario->list, "List the scenarios and exit");
  sc->callback([scenario] { run_scenario(*scenario); });
}

}  // namespace ferret::cli
