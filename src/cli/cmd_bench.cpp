// `ferret bench MODEL.pt --input 8x3x224x224:float32`: benchmark a TorchScript model through
// libtorch. Without libtorch in the build, it says how to get it and exits 2.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "benchmark/history_store.h"
#include "benchmark/model_runner.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/world.h"
#include "report/bench/bench_report.h"

namespace ferret::cli {

namespace {

struct BenchCliOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::string device = "cpu";
  int threads = 0;
  std::string warmup = "auto";
  std::size_t runs = 0;
  double time_seconds = 0;
  double batch_size = 0;
  std::string profile;
  std::size_t profile_calls = bench::kDefaultProfileCalls;
  std::size_t width = 0;  // --width; 0: COLUMNS or 80
  bool json = false;
  bool markdown = false;
  bool record = false;
  std::string label;
  std::string db;
};

#if defined(FERRET_HAVE_LIBTORCH)
bench::BenchOptions to_bench_options(const BenchCliOptions& cli) {
  bench::BenchOptions o;
  o.model_path = cli.model;
  for (const std::string& spec : cli.inputs) o.inputs.push_back(bench::parse_input_spec(spec));
  o.device = bench::parse_device(cli.device);
  o.threads = cli.threads;
  bench::parse_warmup(cli.warmup, o);
  o.runs = cli.runs;
  o.time_seconds = cli.time_seconds;
  o.batch_size = cli.batch_size;
  o.profile_path = cli.profile;
  o.profile_calls = cli.profile_calls;
  bench::finalize_options(o);
  return o;
}

// A one-line status on stderr while the benchmark runs, when stderr is a terminal.
std::function<void(std::string_view, std::size_t)> status_line() {
  if (!::isatty(STDERR_FILENO)) return {};
  return [](std::string_view phase, std::size_t calls) {
    std::fprintf(stderr, "\r\033[Kferret bench: %.*s%s", static_cast<int>(phase.size()), phase.data(),
                 calls > 0 ? fmt::format(" ({} calls)", calls).c_str() : "");
    std::fflush(stderr);
  };
}

void clear_status_line() {
  if (::isatty(STDERR_FILENO)) std::fprintf(stderr, "\r\033[K");
}

#else
[[noreturn]] void explain_missing_libtorch() {
  std::fprintf(stderr,
               "ferret: `ferret bench` runs TorchScript models through libtorch, and this ferret was built "
               "without it.\n"
               "  1. install it:   sudo apt-get install libtorch-dev   (Debian 12 / Ubuntu; CPU only)\n"
               "                   or unpack a libtorch from pytorch.org and pass\n"
               "                   -DCMAKE_PREFIX_PATH=/path/to/libtorch to CMake (CUDA builds)\n"
               "  2. reconfigure:  cmake -S . -B build -DFERRET_WITH_LIBTORCH=ON\n"
               "  3. rebuild:      cmake --build build\n"
               "CMake prints \"ferret: ferret bench through libtorch <version>\" when it finds it.\n");
  throw ExitCode{2};
}
#endif

#if !defined(FERRET_HAVE_LIBTORCH)
// libtorch's shared libraries take about a second to load, which every `ferret analyze` would
// pay; so `ferret` is built without them and hands `bench` to `ferret-torch`, the same CLI linked
// with libtorch, built beside it when CMake finds libtorch.
void forward_to_torch_build() { exec_sibling_binary("ferret-torch"); }
#endif

void run_bench(const BenchCliOptions& cli) {
#if !defined(FERRET_HAVE_LIBTORCH)
  (void)cli;
  forward_to_torch_build();
  explain_missing_libtorch();
#else
  if (cli.json && cli.markdown) usage_error("choose one of --json and --md");
  if (cli.record && cli.label.empty()) usage_error("--record needs --label NAME (the name runs are compared under)");
  if (!cli.record && (!cli.label.empty() || !cli.db.empty())) usage_error("--label and --db need --record");
  bench::BenchOptions options;
  try {
    options = to_bench_options(cli);
  } catch (const bench::BenchError& e) {
    usage_error(e.what());
  }

  // Open the store first: a bad database path should fail before minutes of benchmarking.
  std::optional<HistoryStore> store;
  if (cli.record) {
    try {
      store.emplace(HistoryStore::open(cli.db.empty() ? default_history_path() : cli.db));
    } catch (const StoreError& e) {
      usage_error(e.what());
    }
  }

  options.progress = status_line();
  bench::BenchResult result;
  try {
    result = bench::run_benchmark(options);
    clear_status_line();
  } catch (const bench::BenchError& e) {
    clear_status_line();
    usage_error(e.what());
  }

  std::optional<BenchRecorded> recorded;
  if (store) {
    result.record.label = cli.label;
    try {
      result.record.id = store->record(result.record);
    } catch (const StoreError& e) {
      usage_error(e.what());
    }
    recorded = BenchRecorded{result.record.id, cli.label, store->path()};
  }

  if (cli.json)
    std::cout << bench_json(result, recorded).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
              << '\n';
  else if (cli.markdown)
    print_report(bench_markdown(result, recorded));
  else
    print_report(bench_text(result, recorded, stdout_style(cli.width)));
  std::cout.flush();
#endif
}

}  // namespace

void register_bench(CLI::App& app) {
  auto opt = std::make_shared<BenchCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Benchmark a TorchScript model through libtorch: latency percentiles, throughput, memory");
  cmd->add_option("model", opt->model, "TorchScript model file (torch.jit.save, module.save)")->required();
  cmd->add_option("--input", opt->inputs,
                  "One forward() argument: SHAPE[:DTYPE], e.g. 8x3x224x224:float32; repeat for each argument. "
                  "DTYPE: float32 (default), float16, bfloat16, float64, int64, int32, uint8, bool")
      ->allow_extra_args(false);
  cmd->add_option("--device", opt->device, "cpu (default), cuda or cuda:N");
  cmd->add_option("--threads", opt->threads, "Intra-op threads (torch::set_num_threads; default: libtorch's)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--warmup", opt->warmup,
                  "Warm-up calls to discard: a count, or auto (default: until the last 30 calls are steady, "
                  "at most 1000 calls or 20 s)");
  CLI::Option* runs = cmd->add_option("--runs", opt->runs, "Timed calls")->check(CLI::Range(1, 1000000));
  cmd->add_option("--time", opt->time_seconds,
                  "Time the model for this many seconds (at least 10, at most 20000 calls; default 3)")
      ->check(finite_range(1e-6, 1e7))
      ->excludes(runs);
  cmd->add_option("--batch-size", opt->batch_size,
                  "Items per call for throughput (default: the first dimension of the first input)")
      ->check(finite_range(1e-9, 1e15));
  cmd->add_option("--profile", opt->profile,
                  "Also record extra calls (after the timed ones) as a chrome trace for `ferret analyze`");
  cmd->add_option("--profile-calls", opt->profile_calls, "Calls to profile (default 10)")->check(CLI::Range(1, 10000));
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.bench/1, see docs/BENCH.md)");
  add_width_option(*cmd, opt->width);
  cmd->add_flag("--md", opt->markdown, "Print Markdown to paste into a pull request");
  cmd->add_flag("--record", opt->record, "Store the run with all its samples in the history database");
  cmd->add_option("--label", opt->label, "Name of the recorded run (with --record), e.g. resnet50-bs8");
  cmd->add_option("--db", opt->db, "History database (default .ferret/history.db)");
  cmd->callback([opt] { run_bench(*opt); });
}

}  // namespace ferret::cli
