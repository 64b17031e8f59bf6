// The libtorch half of `ferret bench` (the only file that includes torch headers): load a
// TorchScript model, make its inputs, warm up, time each call, read the memory peaks, and record
// a profile of extra calls. Options, rules and statistics: bench_options.cpp. Method: docs/BENCH.md.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <fmt/format.h>

#include "base/safe_file.h"
#include "benchmark/environment.h"
#include "benchmark/model_runner.h"

namespace ferret::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// c10 messages carry a C++ backtrace in debug builds; the user needs the first part only.
std::string torch_message(const c10::Error& e) { return e.what_without_backtrace(); }

c10::ScalarType scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return c10::ScalarType::Float;
    case DType::kFloat16: return c10::ScalarType::Half;
    case DType::kBFloat16: return c10::ScalarType::BFloat16;
    case DType::kFloat64: return c10::ScalarType::Double;
    case DType::kInt64: return c10::ScalarType::Long;
    case DType::kInt32: return c10::ScalarType::Int;
    case DType::kUInt8: return c10::ScalarType::Byte;
    case DType::kBool: return c10::ScalarType::Bool;
  }
  return c10::ScalarType::Float;
}

// Random values made in float32 / int64 on the CPU, then converted: not every generator kernel
// exists for every dtype on every device in torch 1.13 (e.g. normal_ for CPU half).
torch::Tensor make_input(const InputSpec& spec, const torch::Device& device) {
  const std::vector<std::int64_t>& shape = spec.shape;
  torch::Tensor t;
  switch (spec.dtype) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat64: t = torch::randn(shape, torch::kFloat32); break;
    case DType::kInt64:
    case DType::kInt32:
    case DType::kUInt8: t = torch::randint(0, 10, shape, torch::kInt64); break;
    case DType::kBool: t = torch::randint(0, 2, shape, torch::kInt64); break;
  }
  return t.to(device, scalar_type(spec.dtype)).contiguous();
}

// ---- CUDA, without CUDA headers --------------------------------------------------------------
// Debian's libtorch is CPU-only and ships no CUDA headers, so this file cannot include
// cuda_runtime_api.h or c10/cuda. The CUDA runtime's C API is stable, so its five event functions
// are resolved at run time: first from the process (a CUDA libtorch has loaded libcudart), then
// from libcudart itself. cudaEvent_t and cudaStream_t are opaque pointers; cudaSuccess is 0.
class CudaEvents {
 public:
  static std::optional<CudaEvents> load() {
    CudaEvents api;
    if (api.resolve(RTLD_DEFAULT)) return api;
    for (const char* name : {"libcudart.so", "libcudart.so.12", "libcudart.so.11.0"}) {
      if (void* lib = ::dlopen(name, RTLD_NOW | RTLD_GLOBAL); lib && api.resolve(lib)) return api;
    }
    return std::nullopt;
  }

  // Milliseconds between two events recorded on the default stream around `body`.
  template <class Body>
  std::optional<double> time_ms(Body&& body) {
    void* start = nullptr;
    void* stop = nullptr;
    if (create_(&start) != 0) return std::nullopt;
    if (create_(&stop) != 0) {
      destroy_(start);
      return std::nullopt;
    }
    bool ok = record_(start, nullptr) == 0;
    body();
    ok = ok && record_(stop, nullptr) == 0 && synchronize_(stop) == 0;
    float ms = 0;
    ok = ok && elapsed_(&ms, start, stop) == 0;
    destroy_(start);
    destroy_(stop);
    if (!ok) return std::nullopt;
    return static_cast<double>(ms);
  }

 private:
  bool resolve(void* handle) {
    create_ = reinterpret_cast<int (*)(void**)>(::dlsym(handle, "cudaEventCreate"));
    record_ = reinterpret_cast<int (*)(void*, void*)>(::dlsym(handle, "cudaEventRecord"));
    synchronize_ = reinterpret_cast<int (*)(void*)>(::dlsym(handle, "cudaEventSynchronize"));
    elapsed_ = reinterpret_cast<int (*)(float*, void*, void*)>(::dlsym(handle, "cudaEventElapsedTime"));
    destroy_ = reinterpret_cast<int (*)(void*)>(::dlsym(handle, "cudaEventDestroy"));
    return create_ && record_ && synchronize_ && elapsed_ && destroy_;
  }
  int (*create_)(void**) = nullptr;
  int (*record_)(void*, void*) = nullptr;
  int (*synchronize_)(void*) = nullptr;
  int (*elapsed_)(float*, void*, void*) = nullptr;
  int (*destroy_)(void*) = nullptr;
};

// The caching allocator's peak, without c10/cuda headers: every allocator reports each
// allocation, with its running totals, to the thread's PROFILER_STATE debug info when that info
// says memory profiling is on (c10::reportMemoryUsageToProfiler; torch's own test
// cuda_reportMemoryUsage_test listens the same way). The CUDA caching allocator reports its
// aggregate allocated and reserved bytes, so their maximum over a pass is the pass's peak.
class AllocatorPeakListener final : public c10::MemoryReportingInfoBase {
 public:
  explicit AllocatorPeakListener(c10::DeviceType type) : type_(type) {}
  bool memoryProfilingEnabled() const override { return true; }
  void reportMemoryUsage(void*, int64_t, int64_t total_allocated, int64_t total_reserved, c10::Device device) override {
    if (device.type() != type_) return;
    raise(peak_allocated_, total_allocated);
    raise(peak_reserved_, total_reserved);
    reports_.fetch_add(1, std::memory_order_relaxed);
  }
  std::uint64_t peak_allocated() const { return static_cast<std::uint64_t>(std::max<int64_t>(0, peak_allocated_)); }
  std::uint64_t peak_reserved() const { return static_cast<std::uint64_t>(std::max<int64_t>(0, peak_reserved_)); }
  std::uint64_t reports() const { return reports_; }

 private:
  static void raise(std::atomic<int64_t>& peak, int64_t value) {
    int64_t seen = peak.load(std::memory_order_relaxed);
    while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
  }
  c10::DeviceType type_;
  std::atomic<int64_t> peak_allocated_{0}, peak_reserved_{0};
  std::atomic<std::uint64_t> reports_{0};
};

void check_cuda(const DeviceSpec& device) {
  if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA))
    throw BenchError(
        fmt::format("--device {}: this libtorch ({}) was built without CUDA (Debian's libtorch-dev is CPU-only); "
                    "use --device cpu, or build ferret against a CUDA libtorch (-DCMAKE_PREFIX_PATH=/path/to/libtorch)",
                    device.text(), TORCH_VERSION));
  const std::size_t count = torch::cuda::device_count();
  if (count == 0)
    throw BenchError(
        fmt::format("--device {}: libtorch has CUDA but finds no GPU (driver missing, "
                    "CUDA_VISIBLE_DEVICES empty?); use --device cpu",
                    device.text()));
  if (static_cast<std::size_t>(device.index) >= count)
    throw BenchError(
        fmt::format("--device {}: only {} CUDA device{} visible", device.text(), count, count == 1 ? "" : "s"));
}

// One forward call and how it is timed.
class Caller {
 public:
  Caller(torch::jit::Module& module, std::vector<c10::IValue> inputs, const DeviceSpec& device)
      : module_(module), inputs_(std::move(inputs)), cuda_(device.cuda), device_index_(device.index) {
    if (cuda_) events_ = CudaEvents::load();
  }

  std::string timing() const {
    if (!cuda_) return "host steady_clock";
    return events_ ? "CUDA events (synchronized)" : "host steady_clock between device synchronizations";
  }
  bool uses_events() const { return events_.has_value(); }

  // Runs forward() once; returns its latency in seconds. The output is released after the clock
  // stops, so freeing it is not timed.
  double timed_call() {
    double seconds = 0;
    if (cuda_) {
      torch::cuda::synchronize(device_index_);
      std::optional<double> ms;
      const Clock::time_point start = Clock::now();
      if (events_)
        ms = events_->time_ms([&] { output_ = module_.forward(inputs_); });
      else
        output_ = module_.forward(inputs_);
      torch::cuda::synchronize(device_index_);
      seconds = ms ? *ms / 1e3 : seconds_between(start, Clock::now());
    } else {
      const Clock::time_point start = Clock::now();
      output_ = module_.forward(inputs_);
      seconds = seconds_between(start, Clock::now());
    }
    output_ = c10::IValue();
    return seconds;
  }

  void untimed_call() {
    output_ = module_.forward(inputs_);
    if (cuda_) torch::cuda::synchronize(device_index_);
    output_ = c10::IValue();
  }

 private:
  torch::jit::Module& module_;
  std::vector<c10::IValue> inputs_;
  bool cuda_;
  int device_index_;
  std::optional<CudaEvents> events_;
  c10::IValue output_;
};

void report(const BenchOptions& o, std::string_view phase, std::size_t calls) {
  if (o.progress) o.progress(phase, calls);
}

// Progress is reported about ten times a second at most.
class Ticker {
 public:
  bool due() {
    const Clock::time_point now = Clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return false;
    last_ = now;
    return true;
  }

 private:
  Clock::time_point last_ = Clock::now();
};

// A model failure as one headline (the last line of torch's message: "RuntimeError: mat1 and
// mat2 shapes cannot be multiplied (8x65 and 64x256)") followed by the TorchScript traceback.
std::string model_failure(const BenchOptions& o, std::string_view phase, const std::string& message) {
  std::string_view text = message;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  const std::size_t cut = text.rfind('\n');
  const std::string_view headline = cut == std::string_view::npos ? text : text.substr(cut + 1);
  std::string out = fmt::format("{} failed {} on the inputs [{}]: {}", o.model_path, phase,
                                o.inputs.empty() ? std::string("none") : input_specs_text(o.inputs), headline);
  if (cut != std::string_view::npos) out += fmt::format("\n{}", text.substr(0, cut));
  return out;
}

// Warm-up, timed calls, the memory pass and the profile.
void measure(const BenchOptions& o, Caller& caller, BenchResult& result, std::string& phase) {
  // Warm-up. The first call always runs (it also checks that the model takes these inputs) and
  // always counts as warm-up: it pays for TorchScript's profiling run and lazy initialization.
  phase = "in its first call";
  WarmupTracker warmup(o);
  Ticker ticker;
  const double first = caller.timed_call();
  double first_call = 0;  // counted here when a fixed warm-up of 0 calls does not take it
  if (warmup.done())
    first_call = first;
  else
    warmup.add(first);
  phase = "during warm-up";
  while (!warmup.done()) {
    warmup.add(caller.timed_call());
    if (ticker.due()) report(o, "warm-up", warmup.calls());
  }
  result.warmup.automatic = warmup.automatic();
  result.warmup.calls = warmup.calls() + (warmup.calls() == 0 ? 1 : 0);
  result.warmup.seconds = warmup.seconds() + first_call;
  result.warmup.steady = warmup.steady();

  // The timed calls.
  phase = "during the timed calls";
  std::vector<double>& samples = result.record.samples;
  samples.reserve(o.runs > 0 ? o.runs : 1024);
  const Clock::time_point timed_start = Clock::now();
  double elapsed = 0;
  while (!timed_runs_done(o, samples.size(), elapsed)) {
    samples.push_back(caller.timed_call());
    elapsed = seconds_between(timed_start, Clock::now());
    if (ticker.due()) report(o, "timed", samples.size());
  }
  result.timed_seconds = elapsed;
  result.peak_rss_bytes = peak_rss_bytes();

  // The CUDA caching allocator's peak, in a few extra calls so the listener never runs during
  // the timed ones.
  if (o.device.cuda || o.allocator_pass_on_cpu) {
    phase = "during the memory pass";
    result.allocator.device = o.device.cuda ? "cuda" : "cpu";
    auto listener =
        std::make_shared<AllocatorPeakListener>(o.device.cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU);
    {
      c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, listener);
      for (std::size_t i = 0; i < kMemoryPassCalls; ++i) caller.untimed_call();
    }
    result.allocator.calls = kMemoryPassCalls;
    result.allocator.measured = listener->reports() > 0;
    result.allocator.allocated_bytes = listener->peak_allocated();
    result.allocator.reserved_bytes = listener->peak_reserved();
    if (!result.allocator.measured)
      result.notes.push_back(
          fmt::format("the {} allocator reported no allocation during the memory pass", result.allocator.device));
  }

  // The profile: extra calls after the timed ones, each in a ProfilerStep#N span so that
  // `ferret analyze` sees steps. The legacy autograd profiler writes the chrome trace.
  if (!o.profile_path.empty()) {
    phase = "while profiled";
    // In memory first, then base/safe_file.h: the trace appears whole, never over the model.
    std::ostringstream out;
    {
      torch::autograd::profiler::RecordProfile profile(out);
      for (std::size_t step = 0; step < o.profile_calls; ++step) {
        RECORD_USER_SCOPE(fmt::format("ProfilerStep#{}", step));
        caller.untimed_call();
        if (ticker.due()) report(o, "profile", step + 1);
      }
    }
    try {
      write_file_safely(o.profile_path, out.str(), {o.model_path});
    } catch (const std::runtime_error& e) {
      throw BenchError(fmt::format("--profile {}", e.what()));
    }
    result.profile_path = o.profile_path;
    result.profile_calls = o.profile_calls;
  }
}

}  // namespace

BenchResult run_benchmark(const BenchOptions& o) {
  BenchResult result;
  result.torch_version = TORCH_VERSION;
  result.device = o.device.text();
  result.inputs = o.inputs;
  result.run_rule = run_rule_text(o);
  if (o.device.cuda) check_cuda(o.device);
  if (o.threads > 0) torch::set_num_threads(o.threads);
  result.threads = torch::get_num_threads();
  const torch::Device device = o.device.cuda
                                   ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(o.device.index))
                                   : torch::Device(torch::kCPU);

  report(o, "loading", 0);
  if (!std::ifstream(o.model_path)) throw BenchError(fmt::format("cannot open the model file {}", o.model_path));
  check_not_unicode_text(o.model_path);
  torch::jit::Module module;
  try {
    module = torch::jit::load(o.model_path, device);
  } catch (const c10::Error& e) {
    throw BenchError(fmt::format("cannot load {} as a TorchScript model: {}", o.model_path, torch_message(e)));
  } catch (const std::exception& e) {
    throw BenchError(fmt::format("cannot load {} as a TorchScript model: {}", o.model_path, e.what()));
  }
  module.eval();

  // Inference mode: no autograd recording, no version counters (stronger than NoGradGuard).
  c10::InferenceMode inference;
  std::string phase = "making the inputs";
  try {
    torch::manual_seed(o.input_seed);
    std::vector<c10::IValue> inputs;
    for (const InputSpec& spec : o.inputs) inputs.emplace_back(make_input(spec, device));
    Caller caller(module, std::move(inputs), o.device);
    result.timing = caller.timing();
    if (o.device.cuda && !caller.uses_events())
      result.notes.push_back(
          "the CUDA runtime's event API was not found: calls are timed on the host clock "
          "between two device synchronizations");
    measure(o, caller, result, phase);
  } catch (const BenchError&) {
    throw;
  } catch (const c10::Error& e) {
    throw BenchError(model_failure(o, phase, torch_message(e)));
  } catch (const std::exception& e) {
    throw BenchError(model_failure(o, phase, e.what()));
  }

  RunRecord& record = result.record;
  record.created_at = iso8601_utc_now();
  record.kind = "bench";
  record.subject = o.model_path;
  record.unit = "s";
  record.warmup = result.warmup.calls;
  record.batch_size = o.batch_size;
  record.settings = bench_settings(o);
  record.settings.emplace_back("timing", result.timing);
  record.environment = capture_environment(result.torch_version, result.device);
  summarize_samples(result);
  record.metrics.emplace_back("items_per_second", result.items_per_second);
  if (result.peak_rss_bytes > 0)
    record.metrics.emplace_back("peak_rss_bytes", static_cast<double>(result.peak_rss_bytes));
  if (result.allocator.measured) {
    const std::string& dev = result.allocator.device;
    record.metrics.emplace_back(dev + "_peak_allocated_bytes", static_cast<double>(result.allocator.allocated_bytes));
    record.metrics.emplace_back(dev + "_peak_reserved_bytes", static_cast<double>(result.allocator.reserved_bytes));
  }
  record.metrics.emplace_back("warmup_seconds", result.warmup.seconds);
  return result;
}

}  // namespace ferret::bench
