// `ferret bench`: benchmark a TorchScript model through libtorch. This header is torch-free: the
// options, the input specs, the warm-up and stopping rules, and the result. The runner itself
// (src/benchmark/torch/model_runner.cpp, library ferret_torch) is built only when CMake finds libtorch,
// which defines FERRET_HAVE_LIBTORCH; everything else lives in bench_options.cpp and builds
// everywhere. Method and output: docs/BENCH.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/statistics.h"
#include "benchmark/run_record.h"

namespace ferret::bench {

// Bad options, a model that will not load or run, a device that is not there. The message is
// written for the user and names the option or file at fault.
class BenchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- Inputs ------------------------------------------------------------------------------------

enum class DType : std::uint8_t { kFloat32, kFloat16, kBFloat16, kFloat64, kInt64, kInt32, kUInt8, kBool };

std::string_view dtype_name(DType dtype);  // "float32", ...
std::size_t dtype_bytes(DType dtype);      // bytes per element (bool: 1)

inline constexpr std::size_t kMaxInputDims = 16;
inline constexpr std::uint64_t kMaxInputBytes = 1ull << 40;  // 1 TiB: a typo, not a tensor

// One forward() argument: a tensor of this shape and dtype, filled with random values (floating
// point: standard normal; integers: uniform in [0, 10); bool: fair coin), from a fixed seed.
struct InputSpec {
  std::vector<std::int64_t> shape;  // every dimension >= 1, at least one dimension
  DType dtype = DType::kFloat32;

  std::string text() const;  // canonical form, "8x3x224x224:float32"
  std::uint64_t elements() const;
  std::uint64_t bytes() const { return elements() * dtype_bytes(dtype); }
};

// "8x3x224x224:float32" or "8x3x224x224" (float32). Dimensions are positive decimal integers
// separated by 'x'; dtypes: float32 (float, f32), float16 (half, f16), bfloat16 (bf16),
// float64 (double, f64), int64 (long), int32 (int), uint8, bool. Throws BenchError quoting the
// spec and saying what is wrong.
InputSpec parse_input_spec(std::string_view text);

// The specs' text() joined by spaces, "" for none.
std::string input_specs_text(const std::vector<InputSpec>& specs);

// Host memory the runner needs to make the inputs: each is drawn as float32 or int64 on the CPU
// and then converted, so every input that stays on the CPU (on_cpu: the device is the CPU) plus
// the largest staging tensor that is converted or moved to the GPU.
std::uint64_t input_host_bytes(const std::vector<InputSpec>& inputs, bool on_cpu);
// Throws BenchError giving the bytes needed and available when input_host_bytes exceeds
// available_bytes (0: unknown, no check). Runs before anything is allocated.
void check_inputs_fit(const std::vector<InputSpec>& inputs, bool on_cpu, std::uint64_t available_bytes);
// MemAvailable from /proc/meminfo in bytes; 0 when it cannot be read.
std::uint64_t available_memory_bytes();

// "UTF-32LE", "UTF-32BE", "UTF-16LE" or "UTF-16BE" when the first bytes of a file are such a
// byte-order mark or, without one, the NUL pattern of ASCII text in that encoding; "" otherwise.
std::string_view unicode_text_encoding(std::string_view head);
// Throws BenchError naming the encoding when the model file is UTF-16 or UTF-32 text (a script
// saved by an editor, not torch.jit.save's zip archive), instead of torch's zip-reader error.
void check_not_unicode_text(const std::string& model_path);

// ---- Device --------------------------------------------------------------------------------------

struct DeviceSpec {
  bool cuda = false;
  int index = 0;  // CUDA device index

  std::string text() const;  // "cpu", "cuda:0"
};

// "cpu", "cuda" (device 0) or "cuda:N". Throws BenchError.
DeviceSpec parse_device(std::string_view text);

// ---- Options -------------------------------------------------------------------------------------

// Automatic warm-up: stop when MSER-5 (stats::steady_state_start) finds no transient in the last
// kAutoWarmupWindow calls (six MSER batches, so a transient of up to ten calls at the window's
// start is seen), or at the cap. The cap protects slow models: at one second a call, a 30-call
// window alone would take half a minute.
inline constexpr std::size_t kAutoWarmupWindow = 30;
inline constexpr std::size_t kAutoWarmupMaxCalls = 1000;
inline constexpr double kAutoWarmupMaxSeconds = 20.0;

// Timed phase by time (--time, and the default): at least kMinTimedRuns calls and at least the
// time, at most kMaxTimedRuns calls. The default mirrors hyperfine's (10 runs, 3 s).
inline constexpr double kDefaultTimeSeconds = 3.0;
inline constexpr std::size_t kMinTimedRuns = 10;
inline constexpr std::size_t kMaxTimedRuns = 20000;
inline constexpr std::size_t kMaxRuns = 1000000;  // --runs

inline constexpr std::size_t kDefaultProfileCalls = 10;
inline constexpr std::size_t kMaxProfileCalls = 10000;
// Calls run (after the timed ones) to read the CUDA caching allocator's peak.
inline constexpr std::size_t kMemoryPassCalls = 3;

struct BenchOptions {
  std::string model_path;
  std::vector<InputSpec> inputs;  // forward()'s arguments, in order
  DeviceSpec device;
  int threads = 0;  // torch::set_num_threads; 0 keeps libtorch's default

  bool warmup_auto = true;
  std::size_t warmup_calls = 0;  // the fixed count when !warmup_auto

  std::size_t runs = 0;     // timed calls; 0: run by time
  double time_seconds = 0;  // with runs == 0; 0 becomes kDefaultTimeSeconds

  double batch_size = 0;  // items per call; 0: the first dimension of the first input (1 without inputs)

  std::string profile_path;  // --profile: a chrome trace of extra calls after the timed ones
  std::size_t profile_calls = kDefaultProfileCalls;

  std::uint64_t input_seed = 0;  // torch::manual_seed for the random inputs

  // Run the allocator memory pass on the CPU too (it always runs on CUDA). On the CPU, c10's
  // allocator counts only the bytes allocated while the pass listens, so the peak is the most
  // tensor memory one call holds at once, weights and inputs excluded. Not on the command line:
  // the tests use it to check the CUDA path's mechanism on machines without a GPU.
  bool allocator_pass_on_cpu = false;

  // Called now and then with the phase ("loading", "warm-up", "timed", "profile") and the calls
  // done in it; may be empty.
  std::function<void(std::string_view phase, std::size_t calls)> progress;
};

// "auto" or a count. Throws BenchError.
void parse_warmup(std::string_view text, BenchOptions& options);

// Checks the options and fills the defaults (time, batch size). Throws BenchError.
void finalize_options(BenchOptions& options);

// Human description of the stopping rule, e.g. "50 calls" or "3 s (10..20000 calls)".
std::string run_rule_text(const BenchOptions& options);

// ---- Warm-up and stopping rules (torch-free, so they are unit-tested) -----------------------

class WarmupTracker {
 public:
  explicit WarmupTracker(const BenchOptions& options);

  // True when no (further) warm-up call is needed.
  bool done() const { return done_; }
  // Adds one warm-up call's latency in seconds; returns done().
  bool add(double seconds);

  std::size_t calls() const { return calls_; }
  double seconds() const { return seconds_; }
  bool automatic() const { return automatic_; }
  // Automatic mode: a steady window was seen (false when the cap stopped it). Fixed: true.
  bool steady() const { return steady_; }

 private:
  bool automatic_;
  std::size_t target_ = 0;
  std::size_t calls_ = 0;
  double seconds_ = 0;
  bool steady_ = false;
  bool done_ = false;
  std::deque<double> window_;
};

// True when the timed phase has its calls: `calls` taken over `elapsed_seconds` of wall time.
bool timed_runs_done(const BenchOptions& options, std::size_t calls, double elapsed_seconds);

// Bootstrap resamples for n samples: stats::kDefaultBootstrapResamples up to 10 000 samples, then
// 10^8 / n (at least 1000) so the interval takes about a second at most.
int bootstrap_resamples_for(std::size_t n);

// ---- Result ------------------------------------------------------------------------------------

struct WarmupReport {
  bool automatic = true;
  std::size_t calls = 0;  // discarded, the first (loading) call included
  double seconds = 0;     // their summed latency
  bool steady = true;     // automatic: a steady state was seen before the cap
};

struct AllocatorPeak {
  bool measured = false;
  std::string device;                 // "cuda" (or "cpu" with allocator_pass_on_cpu)
  std::uint64_t allocated_bytes = 0;  // peak of the caching allocator's allocated bytes
  std::uint64_t reserved_bytes = 0;   // peak of its reserved (cached) bytes
  std::size_t calls = 0;              // calls of the memory pass
};

struct BenchResult {
  // The run as the history store keeps it: samples (seconds per call, warm-up excluded),
  // settings, metrics and the environment.
  RunRecord record;

  stats::Summary summary;  // of record.samples
  stats::Interval median_ci;
  stats::TukeyOutliers outliers;
  double relative_iqr = stats::kNaN;
  bool noisy = false;
  double items_per_second = stats::kNaN;  // batch_size / median

  std::vector<InputSpec> inputs;  // as given
  std::string run_rule;           // run_rule_text() of the options, e.g. "50 calls"
  WarmupReport warmup;
  double timed_seconds = 0;          // wall time of the timed phase
  std::uint64_t peak_rss_bytes = 0;  // VmHWM after the timed phase; 0 when unknown
  AllocatorPeak allocator;           // CUDA (see BenchOptions::allocator_pass_on_cpu)
  std::string profile_path;          // empty: no profile
  std::size_t profile_calls = 0;

  std::string device;  // "cpu", "cuda:0"
  std::string timing;  // how a call was timed, e.g. "host steady_clock"
  int threads = 0;     // torch::get_num_threads() during the run
  std::string torch_version;
  std::vector<std::string> notes;  // caveats worth a line in the report
};

// Fills summary, median_ci, outliers, the noise check and the throughput from result.record.
void summarize_samples(BenchResult& result);

// RunRecord.settings for these options (device, threads, inputs, warm-up, runs, batch size).
Fields bench_settings(const BenchOptions& options);

// ISO 8601 UTC, e.g. "2026-12-02T15:40:00Z".
std::string iso8601_utc_now();

// VmHWM (peak resident set) from the text of /proc/self/status, in bytes; 0 when absent.
std::uint64_t parse_vm_hwm(std::string_view proc_status);
// The same for this process; 0 when /proc is not there.
std::uint64_t peak_rss_bytes();

// ---- The runner (libtorch) -----------------------------------------------------------------------

// Runs the benchmark: loads the model on the device, makes the inputs, warms up, times, reads
// the memory peaks, and records the profile. Defined only in builds with FERRET_HAVE_LIBTORCH.
// Throws BenchError for anything the user can fix (missing file, inputs the model rejects, no GPU).
BenchResult run_benchmark(const BenchOptions& options);

}  // namespace ferret::bench
