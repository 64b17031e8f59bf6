// What kind of window this is. Real traces are often not a steady-state step: an inference
// server's trace may record CUDA/HIP graph capture (launches that do not run), a training trace
// may be mostly one-time initialisation (CUDA context, library handles, autotuning, compilation).
// Read as a steady step, such a window gives confident, wrong advice; this analysis says what it
// is, with the evidence (docs/WINDOWS.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace ferret {

enum class WindowActivity { kSteady, kGraphCapture, kInitialisation, kMicrobenchmark, kUnknown };
// "steady", "graph_capture", "initialisation", "microbenchmark", "unknown"
const char* window_activity_name(WindowActivity a);

// Thresholds, each with its reason:
// - a capture window: most kernel launches of the window were captured into graphs (recorded, not
//   run) - at least half of them, the point where the window's GPU picture is mostly absent;
inline constexpr double kCaptureLaunchShare = 0.5;
// - an initialisation window: one-time costs cover at least half of the window's wall time, so
//   they, not the repeated work, decide every share the report computes;
inline constexpr double kOneTimeShare = 0.5;
// - a first CUDA/HIP runtime call this long is lazy context creation (typically 0.1-10 s; an
//   ordinary call takes microseconds).
inline constexpr std::int64_t kContextCreationMinNs = 50'000'000;
// - a kernel's first launch this long loaded its code (lazy loading, CUDA_MODULE_LOADING=LAZY, the
//   default since CUDA 11.7; a library's first call): an ordinary launch takes 5-20 us, so 1 ms is
//   fifty of them.
inline constexpr std::int64_t kFirstLaunchLoadMinNs = 1'000'000;
// - a kernel attribute or handle query (cudaFuncGetAttributes, hipFuncGetAttributes,
//   cuModuleGetFunction, cudaGetFuncBySymbol, cuLibraryGetKernel) this long loaded the kernel's
//   module (lazy loading loads on first use, a query included): an ordinary query takes about a
//   microsecond, so 100 us is a hundred of them. Libraries issue thousands on their first calls.
inline constexpr std::int64_t kFunctionQueryLoadMinNs = 100'000;
// - the first DataLoader batch of a window is worker start-up when it takes 10 times the median of
//   the batches after it and at least 10 ms (forking workers and opening datasets takes 0.1-10 s;
//   a batch served from the prefetch queue, microseconds to milliseconds).
inline constexpr std::int64_t kFirstBatchMinNs = 10'000'000;
inline constexpr std::int64_t kFirstBatchFactor = 10;
// - a micro-benchmark: iterations inferred from a loop of at most this many top-level operators
//   (one operator timed in a loop, perhaps with its input's copy or a sync op): no training or
//   inference step, so the device idling between calls is the benchmark's design, not the host's fault.
inline constexpr std::size_t kMicrobenchmarkMaxOps = 3;
//   And the device idles most of the time: busy under half the window (a loop of one fused op
//   that keeps the device busy is a steady loop, analysed as steps).
inline constexpr double kMicrobenchmarkMaxBusy = 0.5;

struct OneTimeCost {
  std::string what;  // "CUDA context creation (first runtime call)", "Inductor/Triton compilation", ...
  std::uint64_t count = 0;
  std::int64_t ns = 0;  // wall time (union of its spans)
};

// torch.compile at work inside the window: Dynamo and Inductor compiling (the compile phases torch
// 2.x records as operators, "entire_frame_compile", "entire_backward_compile", "NAME
// (dynamo_timed)", or the compiler's Python frames). torch numbers compilations F/R - frame F's
// compilation R - in its compiled regions' names ("Torch-Compiled Region: F/R") and in the
// phases' records ("dynamo_data: compile_id=F/R"): R >= 1 is a recompile (a guard failed: a new
// shape, dtype or specialised value).
struct CompileActivity {
  std::int64_t ns = 0;                // wall time compiling (union of the spans)
  std::uint64_t blocks = 0;           // separate stretches of compiling
  std::vector<EventIndex> outermost;  // the outermost compile spans, in time order (the what-if's)
  std::uint32_t frames = 0;           // distinct frames F among the compiled regions the window calls
  std::uint32_t recompiles = 0;       // distinct compilations F/R with R >= 1 that compiled here
  std::uint32_t first_compiles = 0;   // ... with R == 0
  std::int64_t recompile_ns = 0;      // wall time of the stretches that recompiled
  // The analysed steps with no compiling in them: how many, and their mean duration (0 when none).
  std::uint64_t steps_without = 0;
  std::int64_t steps_without_mean_ns = 0;
  std::int64_t first_step_without = -1, last_step_without = -1;  // their ProfilerStep numbers
};

struct WindowActivityResult {
  WindowActivity activity = WindowActivity::kUnknown;
  std::int64_t window_ns = 0;
  // Graph capture: Begin..EndCapture regions (CUDA or HIP) and the kernel launches inside them.
  std::uint64_t capture_regions = 0;
  std::uint64_t kernel_launches = 0;    // kernel launch calls in the window
  std::uint64_t captured_launches = 0;  // of which inside a capture region
  std::uint64_t kernels_executed = 0;   // kernels that ran in the window
  std::uint64_t graph_instantiations = 0;
  std::int64_t capture_ns = 0;  // wall time inside capture regions
  // Inference server recognised from op, annotation and Python frame names ("vLLM", "SGLang"), or "".
  std::string inference_server;
  // One-time costs and their union's share of the window.
  std::vector<OneTimeCost> one_time;
  std::int64_t one_time_ns = 0;
  double one_time_share = 0;
  std::int64_t first_launch_load_ns = 0;  // of which kernels' first launches that loaded code
  CompileActivity compile;                // of which torch.compile compiling
  // Blocking calls at the window's edges waiting on work from outside it (AnalysisContext).
  std::vector<EdgeWait> edge_waits;
  std::int64_t edge_wait_ns = 0;
};

WindowActivityResult analyze_window_activity(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
