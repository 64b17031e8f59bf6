// device-stall. The device idles with its next work already launched: the causal timeline
// (analysis/causal/causality.h) finds idle gaps that end in work whose launch call had returned before the
// gap began, with nothing traced running on any stream of the device meanwhile. The host is not
// what the device waits for (it is ahead), so host-side fixes cannot close these gaps; something
// the profiler does not record holds the device: a stream waiting on an event of work outside the
// trace, graph nodes it did not trace, or another process on the GPU.
//
// Fires when such stalls fill >= 20% of the window (cpu-bound's bar for idle time from one cause),
// the device waited on the host for under half as long as it stalled, and the queue in front of the device
// is deep (median launch-to-start >= kUntracedQueueNs: the host runs ahead). >= 40% is high.
// Predicted gain: the what-if with the stalls closed (`ferret whatif --remove device-stalls`).
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/causal/causality.h"
#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

constexpr double kStallShare = 0.20, kStallShareHigh = 0.40;
// The host's part of the idle time stays under half the stalls': "the host is not what the device
// waits for" must hold clearly (a rank of a 128-rank job idled 23% on the host and stalled 25%).
constexpr double kHostShareMax = 0.5;
constexpr std::uint64_t kStallMinLaunched = 10;  // as rules_step_time's kUtilizationMinKernels

}  // namespace

void rule_device_stall(const TraceAnalysis& a, std::vector<Finding>& out) {
  const CausalityResult& c = a.causality;
  for (const DeviceCausality& d : c.devices) {
    if (d.window_ns <= 0 || d.launched < kStallMinLaunched) continue;
    const double window = static_cast<double>(d.window_ns);
    const double stalled = static_cast<double>(d.stall_ns) / window;
    const double waited = static_cast<double>(d.device_waited_on_host_ns) / window;
    if (stalled < kStallShare || waited >= kHostShareMax * stalled || d.median_launch_to_start_ns < kUntracedQueueNs)
      continue;
    const bool rocm = a.model != nullptr && a.model->info.platform == Platform::kRocm;
    const double idle = 1.0 - static_cast<double>(d.busy_ns) / window;

    Finding f = finding_for("device-stall");
    f.layer = Layer::kMacro;
    f.severity = stalled >= kStallShareHigh ? Severity::kHigh : Severity::kMedium;
    f.title = fmt::format(
        "Device stalls with work queued: device {} idles {:.0f}% of the window with its next work already "
        "launched (median launch to start {}); the host is not what it waits for",
        d.device, 100 * stalled, human_duration(d.median_launch_to_start_ns));
    f.detail = fmt::format(
        "The device is idle {:.1f}% of the window. It waited on the host for {:.1f}% of the window; for {:.1f}% it "
        "sat idle in {} gap{} that ended in work launched before the gap began, with nothing traced running on any "
        "of its streams. The host runs ahead of the device (a launch waits a median {} to start), so host-side "
        "fixes (graphs, DataLoader workers, fewer syncs) cannot close these gaps: something the profiler does not "
        "record holds the device - a stream waiting on an event of work outside the trace, graph nodes it did not "
        "trace, or another process on the same GPU.",
        100 * idle, 100 * waited, 100 * stalled, d.stalls, d.stalls == 1 ? "" : "s",
        human_duration(d.median_launch_to_start_ns));
    if (d.stalls_before_graph_work > 0)
      f.detail += fmt::format(
          " {} of the {} stalls end in work a graph launch queued: the graph's untraced nodes or its dependencies "
          "are the first suspect.",
          d.stalls_before_graph_work, d.stalls);
    f.evidence = {{"stall_pct", 100 * stalled, "%"},
                  {"stalls", static_cast<double>(d.stalls), ""},
                  {"stalls_before_graph_work", static_cast<double>(d.stalls_before_graph_work), ""},
                  {"device_idle_pct", 100 * idle, "%"},
                  {"device_waited_on_host_pct", 100 * waited, "%"},
                  {"median_launch_to_start_ms", static_cast<double>(d.median_launch_to_start_ns) / 1e6, "ms"}};
    if (rocm)
      f.fixes = {
          "See what the device waits for: `rocprofv3 --kernel-trace --memory-copy-trace --hip-trace -- python "
          "train.py` records every kernel and stream wait the PyTorch profiler leaves out",
          "Rule out another process on the GPU: `amd-smi process` (or `rocm-smi --showpids`) while the job runs"};
    else
      f.fixes = {
          "See what the device waits for: `nsys profile --trace=cuda,nvtx --cuda-graph-trace=node python train.py` "
          "records every graph node and cross-stream event wait the PyTorch profiler leaves out",
          "Rule out another process on the GPU: `nvidia-smi --query-compute-apps=pid,process_name,used_memory "
          "--format=csv` while the job runs (MPS clients and a second job share the SMs)"};
    f.fixes.push_back(
        "Look for streams that wait on work recorded elsewhere: `stream.wait_event(e)` / `wait_stream(s)` on an "
        "event from another process (IPC) or from work queued before profiling began; record the stream's "
        "producer in the same trace");
    if (d.stalls_before_graph_work > 0)
      f.fixes.push_back(
          "Record once without graph replay (`torch.compile(model, mode=\"max-autotune-no-cudagraphs\")`, or the "
          "eager step): if the stalls go, the graph's untraced nodes or its dependencies hold the device");
    f.time_share = stalled;
    f.max_speedup = amdahl_speedup(stalled);
    f.threshold =
        "idle gaps with the next work already launched >= 20% of the window (>= 40% high), over twice as long as the "
        "device "
        "waited on the host, median launch to start >= 1 ms (ferret's causal timeline)";
    f.where = gpu_idle_sites(a.timeline, d.device);
    out.push_back(std::move(f));
  }
}

namespace {
constexpr RuleInfo kDeviceStallRules[] = {
    [] {
      RuleInfo r = removes(explaining(kExplainsIdleDevice, RuleInfo{"device-stall", RuleSource::kTrace,
                                                                    Dimension::kCompute, RuleRole::kCause}),
                           &RetimeChanges::remove_device_stalls);
      r.device_stalled = true;
      return r;
    }(),
};
}  // namespace

FERRET_RULE_FAMILY(device_stall){"rule_device_stall", 20, kDeviceStallRules, rule_run<rule_device_stall>()};

}  // namespace ferret
