// Rules on the window itself: a window that records graph capture or initialisation is not a
// steady state, and a blocking call at its edge waits on work from outside it. Said first, so
// that no other finding is read as a description of the steady state (docs/WINDOWS.md).
#include <algorithm>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "analysis/timeline/window_activity.h"
#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// graph-capture-window. Threshold: at least half of the window's kernel launches were captured
// (window_activity.h); capture launches record graph nodes and run nothing, so the GPU picture
// (utilisation, kernels, memory) is that of the capture, not of serving.
void rule_graph_capture(const TraceAnalysis& a, const WindowActivityResult& w, std::vector<Finding>& out) {
  if (w.activity != WindowActivity::kGraphCapture) return;
  const std::string api = a.model->info.platform == Platform::kRocm ? "HIP" : "CUDA";
  Finding f = finding_for("graph-capture-window");
  f.layer = Layer::kMacro;
  f.severity = Severity::kHigh;
  f.title = fmt::format(
      "This window records {} graph capture, not {}: {} of {} kernel launches were captured, "
      "{} kernel{} ran",
      api, w.inference_server.empty() ? "the steady state" : "serving", w.captured_launches, w.kernel_launches,
      w.kernels_executed, w.kernels_executed == 1 ? "" : "s");
  f.detail = fmt::format(
      "{} capture region{} ({:.1f} ms) record{} graph nodes: the launches inside them do not run, so GPU utilisation, "
      "kernel times and memory in this trace describe the capture, not the replays that serve requests. {}The numbers "
      "below are kept for reference only.",
      w.capture_regions, w.capture_regions == 1 ? "" : "s", ns_to_ms(w.capture_ns), w.capture_regions == 1 ? "s" : "",
      w.inference_server.empty()
          ? ""
          : fmt::format("{} captures its graphs at start-up and then replays them; ", w.inference_server));
  f.evidence = {{"capture_regions", static_cast<double>(w.capture_regions), "count"},
                {"captured_launches", static_cast<double>(w.captured_launches), "count"},
                {"kernel_launches", static_cast<double>(w.kernel_launches), "count"},
                {"kernels_executed", static_cast<double>(w.kernels_executed), "count"},
                {"capture_ms", ns_to_ms(w.capture_ns), "ms"}};
  if (w.graph_instantiations > 0)
    f.evidence.push_back({"graph_instantiations", static_cast<double>(w.graph_instantiations), "count"});
  if (w.inference_server == "vLLM")
    f.fixes.push_back(
        "Profile replay, not capture: start the server with VLLM_TORCH_PROFILER_DIR=/tmp/prof, send warm-up "
        "requests, then POST /start_profile, send the requests to study, POST /stop_profile");
  if (w.inference_server == "SGLang")
    f.fixes.push_back(
        "Profile replay, not capture: after the server is ready and warmed up, POST /start_profile (or "
        "python -m sglang.bench_one_batch --profile), then analyse that trace");
  f.fixes.push_back(
      "Start the profiler after the graphs are captured: torch.profiler.profile(schedule="
      "torch.profiler.schedule(wait=2, warmup=2, active=3)) around the replayed steps, calling prof.step() per step");
  f.fixes.push_back(
      fmt::format("In the replay trace, graph launches ({}GraphLaunch) carry the replayed kernels; "
                  "ferret attributes them to the ops that captured them",
                  api == "HIP" ? "hip" : "cuda"));
  f.threshold = "at least 50% of the window's kernel launches inside stream capture (ferret)";
  f.time_share = 0;
  f.max_speedup = 1.0;
  out.push_back(std::move(f));
}

// initialisation-window. Threshold: one-time costs cover at least half of the window's wall time
// (window_activity.h): every share in the report is then mostly a share of start-up.
void rule_initialisation(const TraceAnalysis& a, const WindowActivityResult& w, std::vector<Finding>& out) {
  if (w.activity != WindowActivity::kInitialisation) return;
  Finding f = finding_for("initialisation-window");
  f.layer = Layer::kMacro;
  f.severity = Severity::kHigh;
  f.title = fmt::format(
      "This window is mostly initialisation, not steady state: one-time costs take {:.0f}% of it "
      "({:.1f} of {:.1f} ms)",
      100 * w.one_time_share, ns_to_ms(w.one_time_ns), ns_to_ms(w.window_ns));
  std::string what;
  for (std::size_t i = 0; i < w.one_time.size() && i < 4; ++i)
    what += fmt::format("{}{} {:.1f} ms ({}x)", i ? "; " : "", w.one_time[i].what, ns_to_ms(w.one_time[i].ns),
                        w.one_time[i].count);
  f.detail = fmt::format(
      "{}. These costs are paid once per process (or once per new shape); a profile of them says little about the "
      "step time of a long run. The findings below are dominated by them.",
      what);
  for (const OneTimeCost& c : w.one_time) f.evidence.push_back({c.what, ns_to_ms(c.ns), "ms"});
  f.evidence.push_back({"one_time_share_pct", 100 * w.one_time_share, "%"});
  f.fixes = {"Profile the steady state: torch.profiler.schedule(wait=1, warmup=2, active=3) skips the first iterations",
             "Analyse the steady part of this trace: ferret analyze --window NAME (a record_function span) or "
             "--time A-B (ms from the trace start)",
             "torch.compile: run a few iterations before profiling; compilation happens on the first call per shape"};
  if (a.hot_spots.gpu_activities > 0 || w.kernel_launches > 0)
    f.fixes.emplace_back(
        "Initialise CUDA before timing (torch.cuda.init(), one warm-up iteration); with cudnn.benchmark=True the "
        "first iterations of each input shape autotune");
  // Mostly torch.compile at work: that is what to say, and its fixes (a recompile has its own).
  const CompileActivity& c = w.compile;
  if (c.ns * 2 >= w.one_time_ns) {
    f.title = fmt::format(
        "This window is mostly torch.compile {}, not steady state: compiling takes {:.0f}% of it ({:.1f} of {:.1f} ms)",
        c.recompiles > 0 ? "recompiling" : "compiling",
        100.0 * static_cast<double>(c.ns) / static_cast<double>(w.window_ns), ns_to_ms(c.ns), ns_to_ms(w.window_ns));
    f.detail = fmt::format("{}: {}. {}", what, compile_detail(c),
                           "Compiling is paid once per frame and input signature (again after a failed guard); a "
                           "profile of it says little about the compiled model's steps.");
    f.fixes = compile_fixes(c);
  }
  f.threshold = "one-time costs >= 50% of the window (ferret)";
  f.time_share = w.one_time_share;
  f.max_speedup = 1.0;  // not a cost of the steady state: nothing to gain there
  (void)a;
  out.push_back(std::move(f));
}

// window-edge-wait. No threshold beyond its definition (AnalysisContext: >= 1 ms, GPU busy < 10%
// of it): informational, and kept out of the host-sync and synchronous-copy rules' evidence.
void rule_edge_wait(const TraceAnalysis& a, const WindowActivityResult& w, std::vector<Finding>& out) {
  if (w.edge_waits.empty()) return;
  const TraceModel& m = *a.model;
  const EdgeWait& longest =
      *std::max_element(w.edge_waits.begin(), w.edge_waits.end(),
                        [](const EdgeWait& x, const EdgeWait& y) { return x.duration_ns < y.duration_ns; });
  Finding f = finding_for("window-edge-wait");
  f.layer = Layer::kFramework;
  f.severity = Severity::kInfo;
  f.title = fmt::format(
      "A {:.1f} ms {} at the window's {} waits on work from outside it (the GPU shows no work "
      "during it)",
      ns_to_ms(longest.duration_ns), m.name_of(longest.event), longest.at_start ? "start" : "end");
  f.detail = fmt::format(
      "{} blocking call{} ({:.1f} ms in all) at the edges of the window wait on GPU work launched before profiling "
      "began (or after it ended): the trace holds none of it. They are not a cost of this window: a wait that opens "
      "or closes the window is cut off it, and none counts in the host-sync or synchronous-copy findings.",
      w.edge_waits.size(), w.edge_waits.size() == 1 ? "" : "s", ns_to_ms(w.edge_wait_ns));
  f.evidence = {{"edge_waits", static_cast<double>(w.edge_waits.size()), "count"},
                {"edge_wait_ms", ns_to_ms(w.edge_wait_ns), "ms"},
                {"longest_ms", ns_to_ms(longest.duration_ns), "ms"}};
  f.fixes = {
      "Synchronise before starting the profiler (torch.cuda.synchronize()) so the trace starts with an idle "
      "queue, or skip the first steps with torch.profiler.schedule(wait=1, warmup=1, active=N)"};
  f.threshold = "blocking call >= 1 ms at the window's edge with the GPU busy < 10% of it (ferret)";
  out.push_back(std::move(f));
}

// device-activity-missing. Threshold: at least kMissingDeviceMinLaunches kernel launch calls in
// the window outside any stream capture, and kernels recorded for at most kMissingDeviceMaxShare of
// them. Every eager launch runs one kernel, so a trace that records (almost) none of them lost its
// device side: the profiler's CUPTI/roctracer half never delivered. Read as it stands, such a trace
// shows an idle GPU and a host that does nothing but launch - a wrong "bottleneck".
// Ten launches: fewer could be a script that touched the GPU once at the window's edge, where the
// kernels may fall outside the window; a model's forward pass launches hundreds.
constexpr std::uint64_t kMissingDeviceMinLaunches = 10;
// 1%: a capture that works records about one kernel per launch, and a buffer that overflowed late
// in the run still keeps its first records; at or under 1% nothing usable reached the trace.
constexpr double kMissingDeviceMaxShare = 0.01;

bool is_kernel_launch_call(std::string_view name) {
  return name.find("LaunchKernel") != std::string_view::npos ||
         name.find("LaunchCooperativeKernel") != std::string_view::npos;  // cuda*, hip*, hipModule*, cu*
}

void rule_device_activity_missing(const TraceAnalysis& a, const WindowActivityResult& w, std::vector<Finding>& out) {
  const std::uint64_t eager_launches = w.kernel_launches - std::min(w.kernel_launches, w.captured_launches);
  if (eager_launches < kMissingDeviceMinLaunches) return;
  if (static_cast<double>(w.kernels_executed) > kMissingDeviceMaxShare * static_cast<double>(eager_launches)) return;
  const TraceModel& m = *a.model;
  const AnalysisContext& ctx = a.context;
  // CUPTI's range profiler (torch.profiler's experimental_config with profiler_metrics) records
  // one cuda_profiler_range per kernel instead of kernel activity: the device side is there, as
  // counters, by the user's choice.
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m.category_of(static_cast<EventIndex>(i)) == "cuda_profiler_range") return;
  // The launch call the program used most, to name it as the trace does (cudaLaunchKernel,
  // hipLaunchKernel, cuLaunchKernel, ...).
  std::map<std::string_view, std::uint64_t> calls_by_name;
  for (const EventIndex launch : m.relations.launches) {
    const std::string_view name = m.name_of(launch);
    const std::int64_t t = m.ts_ns[launch];
    if (is_kernel_launch_call(name) && t >= ctx.window_start_ns && t < ctx.window_end_ns) ++calls_by_name[name];
  }
  std::string_view launch_name = "kernel launch";
  std::uint64_t most = 0;
  for (const auto& [name, calls] : calls_by_name)
    if (calls > most) most = calls, launch_name = name;
  const bool rocm = m.info.platform == Platform::kRocm || launch_name.substr(0, 3) == "hip";
  const std::size_t device_records = m.relations.gpu_events.size();
  Finding f = finding_for("device-activity-missing");
  f.layer = Layer::kMacro;
  f.severity = Severity::kHigh;
  f.title = fmt::format(
      "The trace recorded no device activity: {} kernel launch{} ({}) and {} kernel{} - the capture is broken, so "
      "no bottleneck can be read from it",
      eager_launches, eager_launches == 1 ? "" : "es", launch_name, w.kernels_executed,
      w.kernels_executed == 1 ? "" : "s");
  f.detail = fmt::format(
      "The host launched {} kernels in this {} but the profiler recorded {} of them running{}. The device half of "
      "the trace comes from {}; when it records nothing, the usual causes are: the device activity was not "
      "requested (torch.profiler.profile(activities=[ProfilerActivity.CPU]) only); another profiler held the "
      "tracing interface ({}), which allows one subscriber per process; the activity buffers overflowed or were "
      "dropped; or the process stopped (crash, kill, timeout) before the profiler flushed them. GPU utilisation, "
      "kernel times and the host's share would all be read off a trace without its device side; no other finding "
      "below describes the program.",
      eager_launches, window_noun(a), w.kernels_executed == 0 ? "none" : fmt::format("{}", w.kernels_executed),
      device_records == 0 ? " (no kernel, copy or fill at all)" : "", rocm ? "roctracer/rocprofiler" : "CUPTI",
      rocm ? "rocprof, rocprofv3 or omnitrace wrapping the run"
           : "Nsight Systems or Nsight Compute wrapping the run, or DCGM's profiling metrics on the node");
  f.evidence = {{"kernel_launches", static_cast<double>(eager_launches), "count"},
                {"kernels_recorded", static_cast<double>(w.kernels_executed), "count"},
                {"device_activities_in_trace", static_cast<double>(device_records), "count"},
                {"launches_without_gpu_in_trace", static_cast<double>(m.relations.launches_without_gpu), "count"}};
  f.fixes = {
      "Ask for device activity: `torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, "
      "torch.profiler.ProfilerActivity.CUDA])` (ROCm builds use ProfilerActivity.CUDA too)",
      rocm ? "Run without another tracer on the process: no rocprof/rocprofv3/omnitrace wrapper while "
             "torch.profiler records"
           : "Run without another CUPTI client: no nsys/ncu wrapper while torch.profiler records, and pause "
             "DCGM profiling metrics on the node (`dcgmi profile --pause`, `dcgmi profile --resume` after)",
      "Let the profiler finish: leave the `with torch.profiler.profile(...)` block (or call prof.stop()) before the "
      "process exits, and export the trace after it; a crash or kill mid-run loses the device records",
      "Keep the window short so the activity buffers hold it: torch.profiler.schedule(wait=1, warmup=1, active=3) "
      "with prof.step() each iteration"};
  f.threshold = fmt::format(
      ">= {} kernel launch calls outside stream capture and kernels recorded for <= {:.0f}% of them (ferret)",
      kMissingDeviceMinLaunches, 100 * kMissingDeviceMaxShare);
  f.time_share = 0;
  f.max_speedup = 1.0;  // nothing measured: nothing to gain
  out.push_back(std::move(f));
}

}  // namespace

// microbenchmark-window. Iterations inferred from a loop of at most kMicrobenchmarkMaxOps top-level
// operators (window_activity.h): one operator timed in a loop. Its figures are per call; the
// device's idle time between calls is the loop's design, so no host-bound verdict stands on it.
void rule_microbenchmark(const TraceAnalysis& a, const WindowActivityResult& w, std::vector<Finding>& out) {
  if (w.activity != WindowActivity::kMicrobenchmark) return;
  const Relations& rel = a.model->relations;
  const StepBreakdownResult& b = a.breakdown;
  const AnalysisContext& ctx = a.context;
  if (b.steps.empty()) return;
  const double calls = static_cast<double>(b.steps.size());
  const double per_call_ns = b.average_duration_ns;
  const double device_ns = b.average_of(StepCategory::kKernel) + b.average_of(StepCategory::kMemcpy) +
                           b.average_of(StepCategory::kMemset) + b.average_of(StepCategory::kCommunication);
  Finding f = finding_for("microbenchmark-window");
  f.layer = Layer::kMacro;
  f.severity = Severity::kMedium;
  f.title = fmt::format(
      "Micro-benchmark: {} in a loop of {} calls, {} per call ({} of it on the device)",
      rel.step_marker_ops == 1 ? rel.step_marker : fmt::format("{} ops from {}", rel.step_marker_ops, rel.step_marker),
      b.steps.size(), human_duration(static_cast<std::int64_t>(per_call_ns)),
      human_duration(static_cast<std::int64_t>(device_ns)));
  f.detail = fmt::format(
      "No ProfilerStep marks a step and the trace repeats {} top-level operator{} {} times: a loop timing {}, not a "
      "training or inference step. Per call: {} on the host (operators and runtime calls), {} on the device. The "
      "device idles between calls by the loop's design (a sync, or a host that issues one small call at a time), "
      "so it says nothing about a step's bottleneck; the operator and kernel figures below are the benchmark's "
      "result.",
      rel.step_marker_ops, rel.step_marker_ops == 1 ? "" : "s", b.steps.size() + (ctx.cold_first_step ? 1 : 0),
      rel.step_marker,
      human_duration(
          static_cast<std::int64_t>(b.average_of(StepCategory::kCpuExec) + b.average_of(StepCategory::kRuntime))),
      human_duration(static_cast<std::int64_t>(device_ns)));
  f.evidence = {{"calls", calls, "count"},
                {"per_call_us", per_call_ns / 1e3, "us"},
                {"device_per_call_us", device_ns / 1e3, "us"},
                {"ops_per_call", static_cast<double>(rel.step_marker_ops), "count"}};
  if (ctx.cold_first_step) {
    const double cold_ns = static_cast<double>(ctx.cold_first_step->end_ns - ctx.cold_first_step->start_ns);
    f.evidence.push_back({"first_call_us", cold_ns / 1e3, "us"});
    f.detail += fmt::format(
        " The first call took {} ({:.0f}x a steady one): one-time costs (context, library handles, kernel code "
        "loading, "
        "autotuning), left out of the figures.",
        human_duration(static_cast<std::int64_t>(cold_ns)), per_call_ns > 0 ? cold_ns / per_call_ns : 0.0);
  }
  f.fixes = {
      "Time it with warm-up and synchronisation built in: `t = torch.utils.benchmark.Timer(stmt=\"fn(x)\", "
      "globals={\"fn\": fn, \"x\": x}); print(t.blocked_autorange(min_run_time=1))`",
      "Device time alone: CUDA events around the loop - `start = torch.cuda.Event(enable_timing=True); end = "
      "torch.cuda.Event(enable_timing=True); start.record(); ...; end.record(); torch.cuda.synchronize(); "
      "print(start.elapsed_time(end) / n)`",
      "To see the operator inside a model instead, profile the model's steps with "
      "`torch.profiler.schedule(wait=1, warmup=2, active=5)` and `prof.step()` each iteration"};
  f.threshold = "no ProfilerStep; iterations from a loop of <= 3 top-level operators (ferret)";
  f.time_share = 0;
  f.max_speedup = 1.0;  // a benchmark has no step to speed up
  out.push_back(std::move(f));
}

void rules_window(const TraceAnalysis& a, std::vector<Finding>& out) {
  rule_device_activity_missing(a, a.window_activity, out);
  rule_graph_capture(a, a.window_activity, out);
  rule_initialisation(a, a.window_activity, out);
  rule_microbenchmark(a, a.window_activity, out);
  rule_edge_wait(a, a.window_activity, out);
}

namespace {
constexpr RuleInfo kWindowRules[] = {
    RuleInfo{"device-activity-missing", RuleSource::kTrace, Dimension::kBenchmark, RuleRole::kWindow},
    RuleInfo{"graph-capture-window", RuleSource::kTrace, Dimension::kBenchmark, RuleRole::kWindow},
    RuleInfo{"initialisation-window", RuleSource::kTrace, Dimension::kBenchmark, RuleRole::kWindow},
    RuleInfo{"microbenchmark-window", RuleSource::kTrace, Dimension::kBenchmark, RuleRole::kWindow},
    RuleInfo{"window-edge-wait", RuleSource::kTrace, Dimension::kBenchmark, RuleRole::kCause},
};
}  // namespace

FERRET_RULE_FAMILY(window){"rules_window", 120, kWindowRules, rule_run<rules_window>()};

}  // namespace ferret
