// Step-time rules, the macro layer: is the GPU busy, and if not, is the host what it waits for?
// They read the GPU metrics (utilization per device) and the step breakdown (what filled the
// time no GPU work ran).
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/classify.h"
#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

std::string short_device_label(const DeviceMetrics& d) {
  return fmt::format("GPU {} ({})", d.device, d.name.empty() ? "unknown device" : d.name);
}

// Share of the step (0..1) the breakdown gives a category.
double share_of(const StepBreakdownResult& b, StepCategory c) { return b.average_pct_of(c) / 100.0; }

// Host time with the GPU idle: Runtime + CPU Exec + Other. In the breakdown's priority every GPU
// category ranks above these, so this is time no kernel, copy or collective ran while the host
// was in runtime calls, operators or Python (or unrecorded work) - not waiting for input.
double host_idle_share(const StepBreakdownResult& b) {
  return share_of(b, StepCategory::kRuntime) + share_of(b, StepCategory::kCpuExec) + share_of(b, StepCategory::kOther);
}

double gpu_share(const StepBreakdownResult& b) {
  return share_of(b, StepCategory::kKernel) + share_of(b, StepCategory::kMemcpy) + share_of(b, StepCategory::kMemset) +
         share_of(b, StepCategory::kCommunication);
}

// Fewer kernels than this on the analysed window describe a trace fragment (a one-kernel test, a
// CUDA-graph capture, a profiler window that caught the job idle), not a workload: no utilization
// or host-bound verdict is drawn from them. ferret's floor.
constexpr std::uint64_t kUtilizationMinKernels = 10;

std::uint64_t kernels_in_window(const TraceAnalysis& a) {
  std::uint64_t n = 0;
  for (const DeviceMetrics& d : a.gpu_metrics.devices) n += d.kernels;
  return n;
}

// low-gpu-utilization. Threshold: the TensorBoard plugin advises on GPU utilization below 50%;
// < 25% is ferret's "high" (the GPU idles three quarters of the step). Utilization counts every
// kernel, NCCL ones included (the plugin's definition). Macro layer: it says the GPU is starved,
// the breakdown says by what. Gain bound: the idle share - if the GPU never waited, the step
// would shrink to its busy time.
constexpr double kLowUtilization = 0.50, kVeryLowUtilization = 0.25;

}  // namespace

Occurrences gpu_idle_sites(const GpuTimelineResult& timeline, int device) {
  LongestIntervals keep;
  std::uint64_t count = 0;
  for (const DeviceTimeline& d : timeline.devices) {
    if (device >= 0 && d.device != device) continue;
    for (const Interval& gap : d.idle_gaps.longest) keep.offer(gap);
    count += d.idle_gaps.count;
  }
  Occurrences o = keep.take();
  o.count = count;
  return o;
}

namespace {

// Whom the device's idle time waited on (analysis/causal/causality.h): " While it idled, ..." or "".
std::string who_waited_text(const CausalityResult& c, std::int32_t device) {
  for (const DeviceCausality& d : c.devices) {
    if (d.device != device || d.window_ns <= 0) continue;
    const auto pct = [&](std::int64_t ns) {
      return 100.0 * static_cast<double>(ns) / static_cast<double>(d.window_ns);
    };
    const std::int64_t host_blocked_idle = d.host_waited_on_device_ns - (d.busy_ns - d.both_busy_ns);
    return fmt::format(
        " While it idled, it waited on the host for {:.1f}% of the window; the host sat blocked on work the trace "
        "does not show for {:.1f}%; for {:.1f}% neither waited on the other (a dependency, a stall with work "
        "queued, the window's tail).",
        pct(d.device_waited_on_host_ns), pct(host_blocked_idle), pct(d.neither_ns));
  }
  return "";
}

void rule_low_gpu_utilization(const TraceAnalysis& a, std::vector<Finding>& out) {
  const StepBreakdownResult& b = a.breakdown;
  for (const DeviceMetrics& d : a.gpu_metrics.devices) {
    const double utilization = d.utilization_pct / 100.0;
    if (d.window_ns <= 0 || d.kernels < kUtilizationMinKernels || utilization >= kLowUtilization) continue;
    const double idle = 1.0 - utilization;

    // What the host did while the GPU idled, largest first (from the breakdown, all devices).
    struct Cause {
      StepCategory category;
      double share;
    };
    std::vector<Cause> causes;
    for (StepCategory c :
         {StepCategory::kDataLoader, StepCategory::kCpuExec, StepCategory::kRuntime, StepCategory::kOther})
      if (!b.steps.empty()) causes.push_back({c, share_of(b, c)});
    std::sort(causes.begin(), causes.end(), [](const Cause& x, const Cause& y) { return x.share > y.share; });
    std::string cause_text;
    for (const Cause& c : causes) {
      if (c.share < 0.01) continue;
      cause_text +=
          fmt::format("{}{} {:.0f}%", cause_text.empty() ? "" : ", ", step_category_label(c.category), 100 * c.share);
    }

    Finding f = finding_for("low-gpu-utilization");
    f.title = fmt::format("Low GPU utilization: {} runs kernels {:.0f}% of the time, idle {:.0f}%",
                          short_device_label(d), 100 * utilization, 100 * idle);
    f.layer = Layer::kMacro;
    f.severity = utilization < kVeryLowUtilization ? Severity::kHigh : Severity::kMedium;
    f.detail = fmt::format("Over {:.1f} ms of {} the device ran kernels for {:.1f} ms ({:.1f}%).{}{}",
                           ns_to_ms(static_cast<double>(d.window_ns)), a.context.has_steps ? "steps" : window_noun(a),
                           ns_to_ms(static_cast<double>(d.kernel_busy_ns)), d.utilization_pct,
                           who_waited_text(a.causality, d.device),
                           cause_text.empty() ? ""
                                              : fmt::format(" While no GPU work ran, the step was in: {} (step "
                                                            "breakdown).",
                                                            cause_text));
    f.evidence = {{"gpu_utilization_pct", d.utilization_pct, "%"},
                  {"gpu_idle_pct", 100 * idle, "%"},
                  {"kernel_busy_ms", ns_to_ms(static_cast<double>(d.kernel_busy_ns)), "ms"},
                  {"window_ms", ns_to_ms(static_cast<double>(d.window_ns)), "ms"}};
    for (const Cause& c : causes)
      f.evidence.push_back({std::string(step_category_key(c.category)) + "_pct", 100 * c.share, "%"});
    // The fixes follow the largest cause first.
    const StepCategory top = causes.empty() ? StepCategory::kOther : causes.front().category;
    if (top == StepCategory::kDataLoader)
      f.fixes.push_back(
          "The input pipeline starves the GPU (see input-bound): `DataLoader(..., num_workers=<cores per GPU>, "
          "pin_memory=True, persistent_workers=True, prefetch_factor=4)`");
    f.fixes.push_back(
        "Remove per-kernel host overhead: `model = torch.compile(model, mode=\"reduce-overhead\")` (fused kernels, "
        "replayed as a CUDA graph)");
    f.fixes.push_back(
        "Give each step more GPU work: raise the batch size while memory allows (gradient accumulation keeps the "
        "optimizer's effective batch)");
    f.fixes.push_back(
        "Drop host syncs from the loop: no `.item()`, `.cpu()` or `print(tensor)` every step - log `loss.detach()` "
        "and read it every N steps");
    if (top != StepCategory::kDataLoader)
      f.fixes.push_back(
          "If the input pipeline is slow too: `DataLoader(..., num_workers=<cores per GPU>, pin_memory=True, "
          "persistent_workers=True)`");
    f.time_share = idle;
    f.max_speedup = amdahl_speedup(idle);
    f.threshold = "GPU utilization < 50% (TensorBoard plugin); < 25% high (ferret)";
    f.where = gpu_idle_sites(a.timeline, d.device);
    out.push_back(std::move(f));
  }
}

// cpu-bound. The GPU idles while the host runs operators, runtime calls or Python: the
// breakdown's Runtime + CPU Exec + Other (time with no GPU work and no DataLoader wait). Fires
// when that host time is >= 20% of the step and exceeds the DataLoader wait (so cpu-bound and
// input-bound never claim the same idle time as their main cause), in a trace with GPU work
// (at least kUtilizationMinKernels kernels).
// Thresholds: ferret's own. 20% mirrors XProf's "highly input-bound" bar for the same amount of
// idle GPU from a different cause; >= 40% (the GPU idles for the host close to half the step)
// is high.
// Who waits on whom (analysis/causal/causality.h) must agree: at least half of that idle time must be
// the device waiting for a launch that had not come. Idle time the device spent with its work
// already queued (a backlog from before the trace, a dependency), or while the host was blocked
// on work outside the trace, is not the host being slow - on a host far ahead of its device the
// breakdown alone read 44-49% "CPU-bound".
constexpr double kCpuBoundModerate = 0.20, kCpuBoundHigh = 0.40;
constexpr double kCpuBoundConfirmedShare = 0.5;

// The busiest device's share of the window spent waiting on the host (causality), or -1 unknown.
double device_waited_on_host_share(const TraceAnalysis& a) {
  const CausalityResult& c = a.causality;
  if (c.busiest < 0) return -1;
  const DeviceCausality& d = c.devices[static_cast<std::size_t>(c.busiest)];
  return d.window_ns > 0 ? static_cast<double>(d.device_waited_on_host_ns) / static_cast<double>(d.window_ns) : -1;
}

void rule_cpu_bound(const TraceAnalysis& a, std::vector<Finding>& out) {
  const StepBreakdownResult& b = a.breakdown;
  if (b.steps.empty() || b.average_duration_ns <= 0) return;
  // A CPU-only trace: everything is host time and nothing waits for it. A fragment: see kUtilizationMinKernels.
  if (gpu_share(b) <= 0 || kernels_in_window(a) < kUtilizationMinKernels) return;
  const double host = host_idle_share(b);
  const double dataloader = share_of(b, StepCategory::kDataLoader);
  if (host < kCpuBoundModerate || host <= dataloader) return;
  const double waited = device_waited_on_host_share(a);
  if (waited >= 0 && waited < kCpuBoundConfirmedShare * host) return;

  const double runtime = share_of(b, StepCategory::kRuntime);
  const double cpu_exec = share_of(b, StepCategory::kCpuExec);
  const double other = share_of(b, StepCategory::kOther);
  Finding f = finding_for("cpu-bound");
  const std::string period = b.has_steps
                                 ? fmt::format("each {:.1f} ms step", ns_to_ms(b.average_duration_ns))
                                 : fmt::format("the {:.1f} ms {}", ns_to_ms(b.average_duration_ns), window_noun(a));
  f.title = fmt::format(
      "CPU-bound: the GPU waits on the host for {:.0f}% of {} (CPU ops {:.0f}%, runtime {:.0f}%, other {:.0f}%)",
      100 * host, period, 100 * cpu_exec, 100 * runtime, 100 * other);
  f.layer = Layer::kFramework;
  f.severity = host >= kCpuBoundHigh ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "For {:.1f} ms of {} no kernel, copy or collective runs while the host executes operators ({:.1f} ms), "
      "CUDA runtime calls ({:.1f} ms) or code the profiler does not name, mostly Python between operators "
      "({:.1f} ms). The GPU finishes each launch faster than the host issues the next: work per launch is too "
      "small for the host's per-operator cost.",
      ns_to_ms(host * b.average_duration_ns), b.has_steps ? "each step" : std::string("the ") + window_noun(a),
      ns_to_ms(b.average_of(StepCategory::kCpuExec)), ns_to_ms(b.average_of(StepCategory::kRuntime)),
      ns_to_ms(b.average_of(StepCategory::kOther)));
  f.evidence = {{"host_idle_gpu_pct", 100 * host, "%"},
                {"cpu_exec_pct", 100 * cpu_exec, "%"},
                {"runtime_pct", 100 * runtime, "%"},
                {"other_pct", 100 * other, "%"},
                {"gpu_busy_pct", 100 * gpu_share(b), "%"},
                {"dataloader_pct", 100 * dataloader, "%"},
                {"device_waited_on_host_pct", 100 * std::max(0.0, waited), "%"},
                {"step_ms", ns_to_ms(b.average_duration_ns), "ms"}};
  f.fixes = {
      "Compile the model: `model = torch.compile(model, mode=\"reduce-overhead\")` - fuses small operators and replays "
      "the step as a CUDA graph, so the host launches once per step instead of once per kernel",
      "Or capture the steady-state step yourself: `g = torch.cuda.CUDAGraph()`; `with torch.cuda.graph(g): "
      "static_out = model(static_in)`; then per step `static_in.copy_(x); g.replay()`",
      "More GPU work per host operation: raise the batch size while memory allows",
      "Fused optimizer step: `torch.optim.AdamW(model.parameters(), lr=lr, fused=True)` (one kernel set per step, "
      "not several per parameter)",
      "Keep Python out of the step: no `.item()` / `.cpu()` / per-step logging of tensors; move preprocessing into "
      "the DataLoader workers",
  };
  f.time_share = host;
  f.max_speedup = amdahl_speedup(host);
  f.threshold = "Runtime + CPU Exec + Other >= 20% of step and > DataLoader share; >= 40% high (ferret)";
  f.where = gpu_idle_sites(a.timeline);
  out.push_back(std::move(f));
}

}  // namespace

// device-bound. The causal timeline (analysis/causal/causality.h) of the busiest device: it works at least
// 80% of the window and waits on the host under 10% of it (the host keeps its queue filled). The
// step is then as fast as the device's work: host-side fixes (CUDA graphs, workers, fewer syncs)
// cannot shorten it. The finding names where the device's time goes; the operator findings
// (precision, fusion, shapes) carry the gains. It bounds none itself.
constexpr double kDeviceBoundBusy = 0.80, kDeviceBoundMaxWaitOnHost = 0.10;
// Collectives holding half of the device's work make it bound in them, not in its compute.
constexpr double kDeviceBoundCommunication = 0.50;

void rule_device_bound(const TraceAnalysis& a, std::vector<Finding>& out) {
  const CausalityResult& c = a.causality;
  if (c.busiest < 0) return;
  const DeviceCausality& d = c.devices[static_cast<std::size_t>(c.busiest)];
  if (d.window_ns <= 0) return;
  const double window = static_cast<double>(d.window_ns);
  const double busy = static_cast<double>(d.busy_ns) / window;
  const double waited = static_cast<double>(d.device_waited_on_host_ns) / window;
  if (busy < kDeviceBoundBusy || waited >= kDeviceBoundMaxWaitOnHost) return;
  const KernelStat* top = nullptr;
  std::int64_t device_total = 0, communication = 0;
  for (const KernelStat& k : a.hot_spots.kernels) {
    device_total += k.total_ns;
    if (k.kind == EventKind::kKernel && is_communication_kernel(k.name)) communication += k.total_ns;
    if (top == nullptr || k.total_ns > top->total_ns) top = &k;
  }
  auto of_device = [&](std::int64_t ns) {
    return device_total > 0 ? static_cast<double>(ns) / static_cast<double>(device_total) : 0.0;
  };
  // A device busy in collectives waits in them (for its peers, or on a slow transport): that is
  // the device's time, but not work a faster kernel removes.
  const bool in_collectives = of_device(communication) >= kDeviceBoundCommunication;
  Finding f = finding_for("device-bound");
  f.dimension = in_collectives ? Dimension::kDistributed : Dimension::kCompute;
  f.layer = Layer::kMacro;
  f.severity = Severity::kMedium;
  const std::string top_text =
      top != nullptr && device_total > 0
          ? fmt::format(" ({} {:.0f}% of it)", top->name.substr(0, 60), 100 * of_device(top->total_ns))
          : std::string();
  f.title = in_collectives ? fmt::format(
                                 "Device-bound in collectives: device {} works {:.0f}% of the window, {:.0f}% of it in "
                                 "communication kernels{}",
                                 d.device, 100 * busy, 100 * of_device(communication), top_text)
                           : fmt::format(
                                 "Device-bound: device {} works {:.0f}% of the window and waits on the host {:.1f}%: "
                                 "steps are as fast as its work{}",
                                 d.device, 100 * busy, 100 * waited, top_text);
  f.detail = fmt::format(
      "The host keeps the device's queue filled (a launch waits a median {} to start) and the device idles only "
      "{:.1f}% of the window for want of work, so removing host overhead (CUDA graphs, DataLoader workers, fewer "
      "syncs) cannot shorten the step: the device's own work must get faster or smaller.",
      human_duration(d.median_launch_to_start_ns), 100 * waited);
  if (in_collectives)
    f.detail +=
        " Most of that work is collectives: a rank spends them waiting for its slowest peer and moving data over "
        "its transport, so the lever is the other ranks and the network, not this rank's kernels.";
  f.evidence = {{"device_busy_pct", 100 * busy, "%"},
                {"device_waited_on_host_pct", 100 * waited, "%"},
                {"host_waited_on_device_pct", 100 * static_cast<double>(d.host_waited_on_device_ns) / window, "%"},
                {"communication_of_device_work_pct", 100 * of_device(communication), "%"},
                {"median_launch_to_start_ms", static_cast<double>(d.median_launch_to_start_ns) / 1e6, "ms"}};
  if (in_collectives)
    f.fixes = {
        "Find the rank the others wait for: `ferret analyze rank*.json.gz` (every rank's trace together) "
        "names the straggler and splits each collective into waiting and transfer",
        "Check the transport: `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH` logs of every rank, read "
        "with `ferret nccl LOG...`",
        "Overlap the collectives with compute (DDP buckets, FSDP prefetch) so that their time hides behind "
        "the kernels"};
  else
    f.fixes = {
        "Make the device's top kernels faster: the operator findings and the roofline table name them with their "
        "gains (precision on the matrix units, fusion, shapes)",
        "Compile the model so that small kernels fuse and GEMMs autotune: `model = torch.compile(model, "
        "mode=\"max-autotune\")`",
        "Less work per step where the model allows: activation checkpointing off if memory permits, smaller "
        "sequence padding, no redundant casts"};
  f.threshold =
      "busiest device busy >= 80% of the window and waiting on the host < 10% of it (ferret's causal "
      "timeline)";
  f.time_share = busy;
  f.max_speedup = 1.0;  // where the time goes; the gains are the operator findings'
  out.push_back(std::move(f));
}

void rules_step_time(const TraceAnalysis& a, std::vector<Finding>& out) {
  rule_low_gpu_utilization(a, out);
  rule_cpu_bound(a, out);
  rule_device_bound(a, out);
}

namespace {
// What a symptom with no cause asks the user to record next, so that a rule can name the cause.
constexpr std::string_view kRecordIdleGpu =
    "No rule named why the GPU idles; record what the host does: `torch.profiler.profile(activities=["
    "ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True, record_shapes=True, "
    "schedule=torch.profiler.schedule(wait=1, warmup=2, active=5))` (several steady steps, Python frames, shapes), "
    "once with `torch.cuda.set_sync_debug_mode(\"warn\")` to print every hidden CUDA sync; then analyze the new trace";
// Low GPU utilization and CPU-bound say that the GPU idles (CPU-bound: while the host runs), not
// why: the causes that explain them say so in their rows (kExplainsIdleHost). Utilization counts
// NCCL kernels as busy, so what explains them is what keeps the GPU from starting work. Low
// utilization with no cause but a CPU-bound host is that one symptom, told more precisely: it folds
// into cpu-bound. The GPU waiting on the host's per-operator work: the fix (a captured graph, a
// compiled step) issues the step's work at no host cost.
constexpr RuleInfo kStepTimeRules[] = {
    waiting_on_host(removes(
        RuleInfo{
            "low-gpu-utilization", RuleSource::kTrace, Dimension::kCompute, RuleRole::kSymptom, {}, {}, kRecordIdleGpu},
        &RetimeChanges::remove_host_overhead)),
    waiting_on_host(removes(RuleInfo{"cpu-bound",
                                     RuleSource::kTrace,
                                     Dimension::kCompute,
                                     RuleRole::kSymptom,
                                     kExplainsIdleDevice,
                                     {},
                                     kRecordIdleGpu},
                            &RetimeChanges::remove_host_overhead)),
    RuleInfo{"device-bound", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause},
};
}  // namespace

FERRET_RULE_FAMILY(step_time){"rules_step_time", 10, kStepTimeRules, rule_run<rules_step_time>()};

}  // namespace ferret
