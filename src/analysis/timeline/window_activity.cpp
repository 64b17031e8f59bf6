#include "analysis/timeline/window_activity.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <map>
#include <set>

#include "analysis/intervals.h"
#include "base/text.h"

namespace ferret {

const char* window_activity_name(WindowActivity a) {
  switch (a) {
    case WindowActivity::kSteady: return "steady";
    case WindowActivity::kGraphCapture: return "graph_capture";
    case WindowActivity::kInitialisation: return "initialisation";
    case WindowActivity::kMicrobenchmark: return "microbenchmark";
    case WindowActivity::kUnknown: return "unknown";
  }
  return "unknown";
}

namespace {

bool is_kernel_launch(std::string_view name) {
  return contains(name, "LaunchKernel") || contains(name, "LaunchCooperativeKernel");  // cuda*, hip*, hipModule*, cu*
}

// One-time work, by name. Each class is something a steady-state step never does (or does not
// do every step): the reason the window is not representative.
enum OneTimeClass : int {
  kModuleLoad,
  kAllocation,
  kHandles,
  kAutotuning,
  kCompilation,
  kOneTimeClassCount,
  kFunctionQuery = kOneTimeClassCount,  // one-time only when long: see kFunctionQueryLoadMinNs
};
constexpr std::array<const char*, kOneTimeClassCount> kOneTimeNames = {
    "GPU code module loading", "device memory allocation (cudaMalloc/hipMalloc: first touch)",
    "cuDNN / cuBLAS / MIOpen handle creation", "cuDNN / MIOpen autotuning (cudnn.benchmark)",
    "torch.compile: Dynamo / Inductor / Triton compilation"};

int one_time_class(EventKind kind, std::string_view name) {
  if (is_launch_api(kind)) {
    if (contains(name, "ModuleLoad") || contains(name, "LibraryLoad")) return kModuleLoad;
    if (contains(name, "FuncGetAttribute") || contains(name, "GetFuncBySymbol") ||
        contains(name, "ModuleGetFunction") || contains(name, "LibraryGetKernel"))
      return kFunctionQuery;
    if ((contains(name, "Malloc") || contains(name, "MemCreate")) && !contains(name, "Async")) return kAllocation;
  }
  if (contains(name, "cudnnCreate") || contains(name, "cublasCreate") || contains(name, "cublasLtCreate") ||
      contains(name, "miopenCreate") || contains(name, "rocblas_create_handle") || contains(name, "hipblasCreate") ||
      contains(name, "hipblasLtCreate"))
    return kHandles;
  if (contains(name, "cudnnFind") || contains(name, "FindConvolution") || contains(name, "miopenFind"))
    return kAutotuning;
  // torch 2.x records Dynamo's and Inductor's timed phases as operators.
  if (kind == EventKind::kCpuOp &&
      (name == "entire_frame_compile" || name == "entire_backward_compile" || name.ends_with(" (dynamo_timed)")))
    return kCompilation;
  if (kind == EventKind::kPythonFunction &&
      (contains(name, "_inductor/compile_fx") || contains(name, "_dynamo/convert_frame") ||
       contains(name, "triton/compiler") || contains(name, "_inductor/codecache") ||
       contains(name, "_inductor/async_compile")))
    return kCompilation;
  return -1;
}

// Whether every device's work covers under kMicrobenchmarkMaxBusy of the window (or there is none):
// a loop of a few operators on a busy device is a steady loop (a fused model served in a loop),
// not a micro-benchmark.
bool device_mostly_idle(const TraceModel& model, const AnalysisContext& ctx) {
  std::map<std::int32_t, std::vector<Interval>> busy;
  for (const EventIndex e : model.relations.gpu_events) {
    if (!is_device_work(model.kind[e]) || !ctx.counts_gpu_event(model, e)) continue;
    const std::int64_t start = std::max(model.ts_ns[e], ctx.window_start_ns);
    const std::int64_t end = std::min(model.end_ns(e), ctx.window_end_ns);
    if (end > start) busy[model.pid[e]].push_back({start, end});
  }
  for (auto& [device, intervals] : busy)
    if (static_cast<double>(union_length(std::move(intervals))) >=
        kMicrobenchmarkMaxBusy * static_cast<double>(ctx.window_ns()))
      return false;
  return true;
}

// "F/R" at the start of `text` -> {F, R}; {-1, -1} when it is not there.
std::pair<int, int> frame_and_compile(std::string_view text) {
  int frame = -1, compile = -1;
  const char* const last = text.data() + text.size();
  const auto [slash, e1] = std::from_chars(text.data(), last, frame);
  if (e1 != std::errc() || slash == last || *slash != '/') return {-1, -1};
  if (std::from_chars(slash + 1, last, compile).ec != std::errc()) return {-1, -1};
  return {frame, compile};
}

// "Torch-Compiled Region: 0/1" (a call of compiled code) or a compile phase's record of its id,
// "dynamo_data: compile_id=1/1" (torch 2.x): {frame, compilation}, {-1, -1} for other names.
std::pair<int, int> compiled_region_ids(std::string_view name) {
  constexpr std::string_view kRegion = "Torch-Compiled Region: ";
  if (name.starts_with(kRegion)) return frame_and_compile(name.substr(kRegion.size()));
  return {-1, -1};
}
std::pair<int, int> compile_id_of(std::string_view name) {
  constexpr std::string_view kId = "compile_id=";
  const auto at = name.find(kId);
  if (at == std::string_view::npos) return {-1, -1};
  return frame_and_compile(name.substr(at + kId.size()));
}

CompileActivity compile_activity(const TraceModel& model, std::vector<EventIndex> spans, const AnalysisContext& ctx) {
  CompileActivity c;
  if (spans.empty()) return c;  // nothing compiled in the window: no pass over the events
  const std::int64_t we = ctx.window_end_ns;
  std::sort(spans.begin(), spans.end(), [&](EventIndex a, EventIndex b) {
    return model.ts_ns[a] != model.ts_ns[b] ? model.ts_ns[a] < model.ts_ns[b] : model.dur_ns[a] > model.dur_ns[b];
  });
  // The outermost spans: those not inside an earlier one of their thread.
  std::map<std::pair<std::int32_t, std::int32_t>, std::int64_t> covered_until;
  std::vector<Interval> all;
  for (const EventIndex e : spans) {
    std::int64_t& until = covered_until[{model.pid[e], model.tid[e]}];
    if (model.ts_ns[e] < until) continue;
    until = model.end_ns(e);
    c.outermost.push_back(e);
    all.push_back({model.ts_ns[e], std::min(we, model.end_ns(e))});
  }
  std::vector<Interval> merged = all;
  merge_intervals(merged);
  c.ns = total_length(merged);
  c.blocks = merged.size();
  std::int64_t without_ns = 0;
  for (const Step& step : ctx.steps) {
    if (covered_length(merged, step.start_ns, step.end_ns) > 0) continue;
    ++c.steps_without;
    without_ns += step.end_ns - step.start_ns;
    if (c.first_step_without < 0) c.first_step_without = step.number;
    c.last_step_without = step.number;
  }
  if (c.steps_without > 0) c.steps_without_mean_ns = without_ns / static_cast<std::int64_t>(c.steps_without);
  // Frames called: the compiled regions of the window. Which compilation each stretch was: the
  // compile id its phases record inside it (torch 2.x); compilation R >= 1 of a frame is a
  // recompile. Without ids (older torch), no stretch is called a recompile.
  struct IdMark {
    std::int64_t ts;
    int frame, compile;
  };
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<IdMark>> ids;
  std::vector<std::int8_t> name_kind(model.strings.size(), -1);  // 0 other, 1 region, 2 compile id
  std::set<int> frames;
  for (std::size_t i = 0; i < model.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    if (!is_host_span(model.kind[e]) || !ctx.window().contains(model.ts_ns[e])) continue;
    std::int8_t& kind = name_kind[model.name[e]];
    const std::string_view name = model.name_of(e);
    if (kind < 0) kind = compiled_region_ids(name).first >= 0 ? 1 : compile_id_of(name).first >= 0 ? 2 : 0;
    if (kind == 1) frames.insert(compiled_region_ids(name).first);
    if (kind == 2) {
      const auto [frame, compile] = compile_id_of(name);
      frames.insert(frame);
      ids[{model.pid[e], model.tid[e]}].push_back({model.ts_ns[e], frame, compile});
    }
  }
  c.frames = static_cast<std::uint32_t>(frames.size());
  std::set<std::pair<int, int>> recompiled, compiled;
  for (const EventIndex e : c.outermost) {
    auto it = ids.find({model.pid[e], model.tid[e]});
    if (it == ids.end()) continue;
    for (const IdMark& m : it->second) {
      if (m.ts < model.ts_ns[e] || m.ts >= model.end_ns(e)) continue;
      (m.compile >= 1 ? recompiled : compiled).insert({m.frame, m.compile});
      if (m.compile >= 1) c.recompile_ns += std::min(we, model.end_ns(e)) - model.ts_ns[e];
      break;
    }
  }
  c.recompiles = static_cast<std::uint32_t>(recompiled.size());
  c.first_compiles = static_cast<std::uint32_t>(compiled.size());
  return c;
}

}  // namespace

namespace {

// Per host thread (pid, tid): capture Begin (+1) and End (-1) marks, and kernel launch times.
using CaptureMarks = std::map<std::pair<std::int32_t, std::int32_t>, std::vector<std::pair<std::int64_t, int>>>;
using ThreadLaunches = std::vector<std::pair<std::pair<std::int32_t, std::int32_t>, std::int64_t>>;

// Capture regions: Begin..End pairs per thread, in time order (an unclosed one runs to the end).
// Launches inside a region were captured, not run.
void measure_capture(CaptureMarks& capture_marks, const ThreadLaunches& launches, std::int64_t we,
                     WindowActivityResult& r) {
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<Interval>> regions;
  std::vector<Interval> all_regions;
  for (auto& [thread, marks] : capture_marks) {
    std::sort(marks.begin(), marks.end());
    std::int64_t open_at = std::numeric_limits<std::int64_t>::min();
    for (const auto& [t, delta] : marks) {
      if (delta > 0 && open_at == std::numeric_limits<std::int64_t>::min()) open_at = t;
      if (delta < 0 && open_at != std::numeric_limits<std::int64_t>::min()) {
        regions[thread].push_back({open_at, t});
        open_at = std::numeric_limits<std::int64_t>::min();
      }
    }
    if (open_at != std::numeric_limits<std::int64_t>::min()) regions[thread].push_back({open_at, we});
    r.capture_regions += regions[thread].size();
    all_regions.insert(all_regions.end(), regions[thread].begin(), regions[thread].end());
  }
  merge_intervals(all_regions);
  r.capture_ns = total_length(all_regions);
  r.kernel_launches = launches.size();
  for (const auto& [thread, t] : launches) {
    auto it = regions.find(thread);
    if (it == regions.end()) continue;
    for (const Interval& region : it->second)
      if (t >= region.start && t < region.end) {
        ++r.captured_launches;
        break;
      }
  }
}

// In the window: its end counts where the window is the whole trace (the last event ends it).
bool in_window_of(const AnalysisContext& ctx, std::int64_t t) {
  return t >= ctx.window_start_ns && (t < ctx.window_end_ns || (ctx.whole_trace() && t == ctx.window_end_ns));
}

// The first launch of each kernel that took long loaded its code (lazy module loading, a
// library's first call building its handles and loading its kernels: 1.3 s under a first
// cudnn_convolution, 8.6 ms for a first hipLaunchKernel); later launches of it take microseconds.
void add_first_launch_loads(const TraceModel& model, const AnalysisContext& ctx, EventIndex first_runtime,
                            WindowActivityResult& r, std::vector<Interval>& all_one_time) {
  const std::int64_t we = ctx.window_end_ns;
  auto in_window = [&](std::int64_t t) { return in_window_of(ctx, t); };
  const Relations& rel = model.relations;
  // Per kernel name, its earliest launch: one pass, no sort.
  std::vector<EventIndex> first_launch(model.strings.size(), kNoEvent);
  for (std::size_t i = 0; i < rel.launches.size(); ++i) {
    if (rel.launch_gpu_begin[i] == rel.launch_gpu_begin[i + 1]) continue;
    const EventIndex gpu = rel.launch_gpu[rel.launch_gpu_begin[i]];
    if (model.kind[gpu] != EventKind::kKernel) continue;
    EventIndex& first = first_launch[model.name[gpu]];
    if (first == kNoEvent || model.ts_ns[rel.launches[i]] < model.ts_ns[first]) first = rel.launches[i];
  }
  std::vector<Interval> spans;
  std::uint64_t count = 0;
  for (const EventIndex call : first_launch) {
    if (call == kNoEvent || model.dur_ns[call] < kFirstLaunchLoadMinNs || !in_window(model.ts_ns[call]) ||
        call == first_runtime)
      continue;
    spans.push_back({model.ts_ns[call], std::min(we, model.end_ns(call))});
    ++count;
  }
  if (!spans.empty()) {
    all_one_time.insert(all_one_time.end(), spans.begin(), spans.end());
    merge_intervals(spans);
    r.first_launch_load_ns = total_length(spans);
    r.one_time.push_back({"kernel code loading (first launch of a kernel)", count, r.first_launch_load_ns});
  }
}

// The first DataLoader batch starts the workers (processes forked, datasets opened, the first
// prefetch filled): far longer than the batches after it, and paid once per epoch's iterator.
void add_first_batch(const TraceModel& model, const AnalysisContext& ctx, WindowActivityResult& r,
                     std::vector<Interval>& all_one_time) {
  const std::int64_t we = ctx.window_end_ns;
  auto in_window = [&](std::int64_t t) { return in_window_of(ctx, t); };
  std::vector<EventIndex> batches;
  for (std::size_t i = 0; i < model.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    if (model.phase[e] == 'X' && is_host_span(model.kind[e]) && in_window(model.ts_ns[e]) &&
        model.name_of(e).starts_with("enumerate(DataLoader)#"))
      batches.push_back(e);
  }
  if (batches.size() >= 3) {
    std::sort(batches.begin(), batches.end(),
              [&](EventIndex a, EventIndex b) { return model.ts_ns[a] < model.ts_ns[b]; });
    std::vector<std::int64_t> rest;
    for (std::size_t k = 1; k < batches.size(); ++k) rest.push_back(model.dur_ns[batches[k]]);
    std::nth_element(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(rest.size() / 2), rest.end());
    const std::int64_t median = rest[rest.size() / 2];
    const EventIndex first = batches.front();
    if (model.dur_ns[first] >= kFirstBatchMinNs &&
        model.dur_ns[first] >= kFirstBatchFactor * std::max<std::int64_t>(median, 1)) {
      const Interval span{model.ts_ns[first], std::min(we, model.end_ns(first))};
      all_one_time.push_back(span);
      r.one_time.push_back(
          {"DataLoader start-up (the first batch: workers started, the prefetch filled)", 1, span.end - span.start});
    }
  }
}

}  // namespace

WindowActivityResult analyze_window_activity(const TraceModel& model, const AnalysisContext& ctx) {
  WindowActivityResult r;
  r.window_ns = ctx.window_ns();
  r.edge_waits = ctx.edge_waits;
  for (const EdgeWait& w : r.edge_waits) r.edge_wait_ns += w.duration_ns;
  const std::int64_t we = ctx.window_end_ns;
  auto in_window = [&](std::int64_t t) { return in_window_of(ctx, t); };

  // Inference servers by name: any interned string (ops, annotations, Python frames) from them.
  for (std::size_t id = 0; id < model.strings.size() && r.inference_server.empty(); ++id) {
    const std::string_view s = model.strings.view(static_cast<StrId>(id));
    if (contains(s, "vllm/") || contains(s, "vllm.")) r.inference_server = "vLLM";
    if (contains(s, "sglang/") || contains(s, "sglang.")) r.inference_server = "SGLang";
  }

  // One pass over host spans: capture regions per thread, kernel launches, one-time work.
  CaptureMarks capture_marks;
  ThreadLaunches launches;
  std::array<std::vector<Interval>, kOneTimeClassCount> one_time;
  std::array<std::uint64_t, kOneTimeClassCount> one_time_count{};
  std::vector<EventIndex> one_time_events;  // compile spans in the window, in event order
  EventIndex first_runtime = kNoEvent;
  std::vector<std::int8_t> name_class(model.strings.size(), -2);  // -2: not classified yet
  for (std::size_t i = 0; i < model.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    const EventKind k = model.kind[e];
    if (model.phase[e] != 'X') continue;
    if (k == EventKind::kKernel && ctx.counts_gpu_event(model, e) && in_window(model.ts_ns[e])) ++r.kernels_executed;
    if (!is_host_span(k)) continue;
    const std::int64_t t = model.ts_ns[e];
    if (is_launch_api(k) && (first_runtime == kNoEvent || t < model.ts_ns[first_runtime])) first_runtime = e;
    if (!in_window(t)) continue;
    const std::string_view name = model.name_of(e);
    if (is_launch_api(k)) {
      if (contains(name, "BeginCapture")) capture_marks[{model.pid[e], model.tid[e]}].push_back({t, +1});
      if (contains(name, "EndCapture")) capture_marks[{model.pid[e], model.tid[e]}].push_back({model.end_ns(e), -1});
      if (contains(name, "GraphInstantiate")) ++r.graph_instantiations;
      if (is_kernel_launch(name)) launches.push_back({{model.pid[e], model.tid[e]}, t});
    }
    std::int8_t& cls = name_class[model.name[e]];
    if (cls == -2) cls = static_cast<std::int8_t>(one_time_class(k, name));
    // A kernel attribute query that lasts loaded the kernel's module (lazy loading): a storm of
    // them under the first calls of a library is code loading, not per-step work.
    if (cls == kFunctionQuery) {
      if (model.dur_ns[e] < kFunctionQueryLoadMinNs) continue;
      one_time[kModuleLoad].push_back({t, std::min(we, model.end_ns(e))});
      ++one_time_count[kModuleLoad];
      continue;
    }
    if (cls >= 0) {
      one_time[static_cast<std::size_t>(cls)].push_back({t, std::min(we, model.end_ns(e))});
      ++one_time_count[static_cast<std::size_t>(cls)];
      if (cls == kCompilation) one_time_events.push_back(e);
    }
  }

  measure_capture(capture_marks, launches, we, r);

  // One-time costs: lazy context creation is the first runtime call when it takes long.
  std::vector<Interval> all_one_time;
  if (first_runtime != kNoEvent && in_window(model.ts_ns[first_runtime]) &&
      model.dur_ns[first_runtime] >= kContextCreationMinNs) {
    const Interval span{model.ts_ns[first_runtime], std::min(we, model.end_ns(first_runtime))};
    r.one_time.push_back(
        {"CUDA/HIP context creation (first runtime call, " + std::string(model.name_of(first_runtime)) + ")", 1,
         span.end - span.start});
    all_one_time.push_back(span);
  }
  add_first_launch_loads(model, ctx, first_runtime, r, all_one_time);
  add_first_batch(model, ctx, r, all_one_time);
  for (int c = 0; c < kOneTimeClassCount; ++c) {
    auto& spans = one_time[static_cast<std::size_t>(c)];
    if (spans.empty()) continue;
    all_one_time.insert(all_one_time.end(), spans.begin(), spans.end());
    merge_intervals(spans);
    r.one_time.push_back(
        {kOneTimeNames[static_cast<std::size_t>(c)], one_time_count[static_cast<std::size_t>(c)], total_length(spans)});
  }
  r.compile = compile_activity(model, one_time_events, ctx);
  for (OneTimeCost& cost : r.one_time)  // compiling counts its stretches, not its nested phases
    if (cost.what == kOneTimeNames[kCompilation]) cost.count = r.compile.blocks;
  std::stable_sort(r.one_time.begin(), r.one_time.end(),
                   [](const OneTimeCost& a, const OneTimeCost& b) { return a.ns > b.ns; });
  merge_intervals(all_one_time);
  r.one_time_ns = total_length(all_one_time);
  if (r.window_ns > 0) r.one_time_share = static_cast<double>(r.one_time_ns) / static_cast<double>(r.window_ns);

  const bool mostly_captured =
      r.capture_regions > 0 && r.kernel_launches > 0 &&
      static_cast<double>(r.captured_launches) >= kCaptureLaunchShare * static_cast<double>(r.kernel_launches);
  if (mostly_captured)
    r.activity = WindowActivity::kGraphCapture;
  else if (r.one_time_share >= kOneTimeShare)
    r.activity = WindowActivity::kInitialisation;
  else if (ctx.source == WindowSource::kSteps && model.relations.step_marker_kind == StepMarker::kRepeatedOps &&
           model.relations.step_marker_ops <= kMicrobenchmarkMaxOps && device_mostly_idle(model, ctx))
    r.activity = WindowActivity::kMicrobenchmark;
  else if (ctx.source == WindowSource::kSteps)
    r.activity = WindowActivity::kSteady;
  return r;
}

}  // namespace ferret
