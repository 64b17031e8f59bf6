// Host rules: the CPU side of feeding the GPU - launch overhead, syncs, allocator calls, copies that
// block the host. They read HostBlockersResult (the operator that dominates GPU time is
// rules_operator_cost.cpp's). docs/rules/host.md describes each rule, its threshold and its source.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "analysis/operator/tensor_cores.h"
#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// One severity scale for host-side overheads: XProf's levels for kernel launch overhead (>= 15% of
// step time high, >= 3% moderate), and ferret's floor of 1% below which no fix is worth a user's
// time (the same floor rules_hardware uses).
constexpr double kHostHigh = 0.15;
constexpr double kHostMedium = 0.03;
constexpr double kHostFloor = 0.01;

Severity host_severity(double share) {
  return share >= kHostHigh ? Severity::kHigh : share >= kHostMedium ? Severity::kMedium : Severity::kLow;
}

std::string list_names(const std::vector<NamedTime>& rows, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < rows.size() && i < n; ++i) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} ({}x, {:.2f} ms)", rows[i].name, rows[i].count, ns_to_ms(rows[i].total_ns));
  }
  return out;
}

// launch-bound. Fires when the launch regime is launch-bound (analysis/causal/host_blockers.h): GPU busy
// < 70% (SageMaker's low-utilization level), at least half of its idle time falls while the launching
// thread issues work (ferret), median kernel < 10 us (a kernel shorter than a ~5-10 us launch cannot
// keep the GPU fed; HTA's "short kernel"), and launch calls >= 3% of the window (XProf, moderate).
// Severity high when launch calls take >= 15% of the window (XProf, high).
// The roofline's latency-bound groups (analysis/operator/roofline.h: mean kernel < 5 us, or a grid under
// half the SMs): the operators whose kernels are too small for their launch, named in launch-bound.
std::string latency_bound_text(const RooflineResult& r, double& share_of_gpu) {
  share_of_gpu = 0;
  if (r.kernel_ns <= 0) return "";
  std::int64_t latency_ns = 0;
  std::string names;
  int listed = 0;
  for (const RooflineGroup& g : r.groups) {  // by kernel time, descending
    if (g.bound != Bound::kLatency) continue;
    latency_ns += g.kernel_ns;
    if (listed++ < 3)
      names += fmt::format(
          "{}{} ({} calls, {:.1f} us a kernel)", names.empty() ? "" : ", ", g.op, g.calls,
          ns_to_us(static_cast<double>(g.kernel_ns) / static_cast<double>(std::max<std::uint64_t>(1, g.kernels))));
  }
  if (latency_ns == 0) return "";
  share_of_gpu = static_cast<double>(latency_ns) / static_cast<double>(r.kernel_ns);
  return fmt::format(
      " The roofline places {:.0f}% of the GPU time launched by operators in latency-bound ones, too little work "
      "per kernel to fill the device: {}.",
      share_to_pct(share_of_gpu), names);
}

// The operators that launch the most short kernels (mean under the launch-bound median bar), for
// the fusion fix: what fusing would merge, as the user's code names it. At most three, by launches.
std::string ops_launching_short_kernels(const HotSpotsResult& hot) {
  std::map<std::string, std::pair<std::uint64_t, std::int64_t>> by_op;  // launches, kernel time
  for (const KernelStat& k : hot.kernels) {
    if (k.kind != EventKind::kKernel || k.calls == 0 || k.mean_ns >= static_cast<double>(kLaunchBoundMedianKernelNs))
      continue;
    for (const KernelLaunchPath& p : k.launched_by) {
      if (p.op.empty()) continue;
      by_op[p.op].first += p.calls;
      by_op[p.op].second += p.total_ns;
    }
  }
  std::vector<std::pair<std::string, std::pair<std::uint64_t, std::int64_t>>> ops(by_op.begin(), by_op.end());
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::string out;
  for (std::size_t i = 0; i < ops.size() && i < 3; ++i)
    out += fmt::format("{}{} ({} short kernels, mean {:.1f} us)", out.empty() ? "" : ", ", ops[i].first,
                       ops[i].second.first,
                       ns_to_us(static_cast<double>(ops[i].second.second) / static_cast<double>(ops[i].second.first)));
  return out;
}

void rule_launch_bound(const HostBlockersResult& h, const RooflineResult& roofline, const GpuTimelineResult& timeline,
                       const HotSpotsResult& hot, std::int64_t first_launch_load_ns, std::vector<Finding>& out) {
  const LaunchRegime& l = h.launch;
  if (l.regime != HostRegime::kLaunchBound || h.window_ns <= 0) return;
  // Launch time that is mostly kernels' first launches loading their code is a cold start: warming
  // up before profiling removes it, CUDA graphs would not (window_activity.h counts it one-time).
  if (2 * first_launch_load_ns >= l.launch_call_ns) return;
  // Bound: CUDA graphs / fusion remove the host's issue time from the GPU's critical path, so at most
  // the GPU idle time spent waiting for the host to issue work comes back.
  const double share = share_of(l.idle.issuing_ns(), h.window_ns);
  Finding f = finding_for("launch-bound");
  f.title = fmt::format(
      "Launch-bound: {:.0f}% of the time the GPU waits while the host launches {} kernels of median {:.1f} us",
      share_to_pct(share), l.kernels, ns_to_us(l.median_kernel_ns));
  f.layer = Layer::kFramework;
  f.severity = l.launch_overhead_share >= kHostHigh ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "The GPU is busy {:.0f}% of the window. Kernels are short (median {:.1f} us; {} of {} are shorter than the call "
      "that launched them), and {} launch calls take {:.1f}% of the window on the host ({:.2f} ms). Of the GPU's "
      "{:.2f} ms "
      "of idle time, {:.2f} ms fall while the launching thread is inside ops or launch calls: the host cannot issue "
      "kernels as fast as the GPU finishes them.",
      share_to_pct(l.gpu_busy_share), ns_to_us(l.median_kernel_ns), l.short_kernels, l.kernels, l.launch_calls,
      share_to_pct(l.launch_overhead_share), ns_to_ms(l.launch_call_ns), ns_to_ms(l.idle.gpu_idle_ns),
      ns_to_ms(l.idle.issuing_ns()));
  double latency_share = 0;
  f.detail += latency_bound_text(roofline, latency_share);
  f.evidence = {{"gpu_busy_pct", share_to_pct(l.gpu_busy_share), "%"},
                {"median_kernel_us", ns_to_us(l.median_kernel_ns), "us"},
                {"kernels", static_cast<double>(l.kernels), "count"},
                {"short_kernels", static_cast<double>(l.short_kernels), "count"},
                {"launch_calls", static_cast<double>(l.launch_calls), "count"},
                {"launch_overhead_pct", share_to_pct(l.launch_overhead_share), "%"},
                {"gpu_idle_while_host_issues_pct", share_to_pct(share), "%"}};
  if (latency_share > 0) f.evidence.push_back({"latency_bound_gpu_pct", share_to_pct(latency_share), "%"});
  f.fixes = {
      "Replay the step as a CUDA graph: `model = torch.compile(model, mode=\"reduce-overhead\")`",
      "Or capture by hand: `g = torch.cuda.CUDAGraph()`; after warm-up on a side stream, `with torch.cuda.graph(g): "
      "static_out = model(static_in)`; then each step `static_in.copy_(batch); g.replay()`",
      "Fuse small kernels: `model = torch.compile(model)`; for the optimizer `torch.optim.AdamW(params, fused=True)` "
      "(or `foreach=True`)",
      "Give each kernel more work: raise the batch size (or micro-batch) so the launch cost is amortized",
  };
  if (const std::string ops = ops_launching_short_kernels(hot); !ops.empty())
    add_because(f.fixes[2], "the operators launching the most short kernels: " + ops);
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  f.threshold =
      "GPU busy < 70% (SageMaker), >= 50% of GPU idle while the host issues work (ferret), median kernel "
      "< 10 us (HTA short kernels), launch calls >= 3% of the window (XProf moderate; >= 15% high)";
  f.where = gpu_idle_sites(timeline);
  out.push_back(std::move(f));
}

// host-sync. The cost of a sync is the GPU bubble it leaves (HostSyncs::gpu_stall_ns: per sync the
// GPU idle after it returns, at most the sync's own duration). Fires at >= 1% of the window (ferret's
// floor); severity on the host-overhead scale. A CPU-only trace has no GPU to stall: its aten::item
// calls are reported (info) when they recur in at least half of the steps, since each becomes a
// device sync once the loop runs on a GPU.
constexpr double kSyncRecurringSteps = 0.5;

// The blocking device-to-host copies among the syncs: bytes, wait against transfer, op stacks.
std::string copy_sync_text(const HostSyncs& s) {
  const double n = static_cast<double>(s.copy_syncs);
  std::string stacks;
  for (std::size_t i = 0; i < s.copy_sync_stacks.size() && i < 3; ++i)
    stacks +=
        fmt::format("{}{} ({}x)", stacks.empty() ? "" : "; ", s.copy_sync_stacks[i].name, s.copy_sync_stacks[i].count);
  return fmt::format(
      " {} of them are blocking device-to-host copies of {:.0f} bytes each on average that held the host {:.2f} ms "
      "each for a {:.1f} us transfer: the copy waited for all queued GPU work (a `.item()`, `.cpu()`, `.tolist()`, "
      "`print(tensor)` or `if tensor:` in the code). Op stack: {}.",
      s.copy_syncs, static_cast<double>(s.copy_sync_bytes) / n, ns_to_ms(s.copy_sync_host_ns) / n,
      ns_to_us(s.copy_sync_transfer_ns) / n, stacks);
}

// "aten::item (30x, 36.98 ms), train.py(88): step (4x, 1.20 ms)".
std::string where_text(const HostSyncs::Kind& k) {
  std::string out;
  for (const NamedTime& w : k.where)
    out += fmt::format("{}{} ({}x, {:.2f} ms)", out.empty() ? "" : ", ", w.name.empty() ? "no op around it" : w.name,
                       w.count, ns_to_ms(static_cast<double>(w.total_ns)));
  return out;
}

// The host-sync fixes for the syncs this trace has, the kind that blocks longest first, each
// saying which calls it is for; a fix for a kind the trace does not have is left out with why.
void host_sync_fixes(const HostSyncs& s, Finding& f) {
  struct Candidate {
    const HostSyncs::Kind* kind;
    Fix fix;
    const char* absent;  // why it is left out when the kind has no sync
  };
  std::vector<Candidate> candidates = {
      {&s.reads,
       Fix("Keep values on the device in the loop: accumulate `total_loss += loss.detach()` and call `.item()` once "
           "per log interval, not every step; `.cpu()`, `.tolist()`, `print(tensor)` and `if tensor:` read the same "
           "way"),
       "no value is read on the host (aten::item, a blocking copy) among the syncs"},
      {&s.data_dependent,
       Fix("Keep shapes independent of the data: an op whose output size depends on the values (`torch.nonzero`, "
           "`x[mask]`, `torch.unique`, `repeat_interleave` without `output_size`) waits for the device to size it; "
           "use fixed-size forms (`torch.where(mask, x, 0)`, `torch.nonzero_static(x, size=n)`, "
           "`repeat_interleave(..., output_size=n)`)"),
       "no data-dependent-shape op (nonzero, masked_select, unique, ...) syncs in the trace"},
      {&s.explicit_calls,
       Fix("Remove the explicit synchronize calls from the step (`torch.cuda.synchronize()`, "
           "`stream.synchronize()`, `event.synchronize()`): keep them only around timing code, and time with events "
           "(`torch.cuda.Event(enable_timing=True)`) read after the loop"),
       "no device, stream or event sync is called outside an op"},
      {&s.inside_ops,
       Fix("Look inside the ops that sync by themselves: a library or custom op that copies a size or a flag to the "
           "host; check for an asynchronous variant or an argument that gives the size up front"),
       "no op syncs by itself"},
  };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.kind->total_ns > b.kind->total_ns; });
  for (Candidate& c : candidates) {
    if (c.kind->count == 0) {
      f.fixes_left_out.push_back({c.fix.text, c.absent});
      continue;
    }
    add_because(c.fix,
                fmt::format("{} syncs, {:.2f} ms: {}", c.kind->count, ns_to_ms(c.kind->total_ns), where_text(*c.kind)));
    f.fixes.push_back(std::move(c.fix));
  }
  if (s.copy_syncs > 0) {
    Fix later(
        "Read results later without blocking: `host = t.to(\"cpu\", non_blocking=True)` into pinned memory, "
        "`ev = torch.cuda.Event(); ev.record()`, and `ev.synchronize()` only when the value is needed");
    add_because(later, fmt::format("{} blocking device-to-host copies of {:.0f} bytes on average", s.copy_syncs,
                                   static_cast<double>(s.copy_sync_bytes) / static_cast<double>(s.copy_syncs)));
    f.fixes.push_back(std::move(later));
  } else {
    f.fixes_left_out.push_back(
        {"Read results later without blocking: `t.to(\"cpu\", non_blocking=True)` into pinned "
         "memory, synchronized on an event only when the value is needed",
         "no blocking device-to-host copy among the syncs"});
  }
  // Where the callers are ops and annotations only, the trace cannot name the lines of code: the
  // sync debug mode can.
  bool frames = false;
  for (const NamedTime& c : s.callers) frames = frames || c.name.find(".py(") != std::string::npos;
  const Fix debug(
      "Find every hidden sync: `torch.cuda.set_sync_debug_mode(\"warn\")` before the loop warns with a stack trace "
      "at each synchronizing call");
  if (frames)
    f.fixes_left_out.push_back({debug.text, "the trace's Python frames already name the calling lines"});
  else
    f.fixes.push_back(debug);
}

void rule_host_sync(const HostBlockersResult& h, const AnalysisContext& ctx, std::vector<Finding>& out) {
  const HostSyncs& s = h.syncs;
  if (s.count == 0 || h.window_ns <= 0) return;
  const bool recurring = !s.per_step.empty() && static_cast<double>(s.steps_with_syncs) >=
                                                    kSyncRecurringSteps * static_cast<double>(s.per_step.size());
  double share = 0;
  Severity severity = Severity::kInfo;
  if (h.has_gpu) {
    share = share_of(s.gpu_stall_ns, h.window_ns);
    if (share < kHostFloor) return;
    severity = host_severity(share);
  } else {
    if (!recurring) return;
    // Reads the optimizer makes of its own step counters (torch/optim: `_get_value(step)`) read
    // CPU tensors - the counters stay on the CPU unless `capturable=True` - so they will not wait
    // for a GPU either: no finding on a CPU trace whose reads are all those.
    std::uint64_t in_optimizer = 0;
    for (const NamedTime& c : s.callers)
      if (c.name.find("torch/optim/") != std::string::npos) in_optimizer += c.count;
    if (in_optimizer == s.count) return;
    share = share_of(s.total_ns, h.window_ns);
  }
  Finding f = finding_for("host-sync");
  if (h.has_gpu)
    f.title =
        fmt::format("Host syncs: {} device syncs leave the GPU idle {:.1f}% of the time", s.count, share_to_pct(share));
  else
    f.title = fmt::format(
        "Host syncs: {} tensor reads on the host ({} of {} steps); each stalls the GPU once this runs on CUDA", s.count,
        s.steps_with_syncs, s.per_step.size());
  f.layer = Layer::kFramework;
  f.severity = severity;
  std::string per_step;
  if (ctx.has_steps && !s.per_step.empty())
    per_step = fmt::format(" They occur in {} of {} steps ({:.1f} per step).", s.steps_with_syncs, s.per_step.size(),
                           static_cast<double>(s.count) / static_cast<double>(s.per_step.size()));
  const double steps = ctx.has_steps && !s.per_step.empty() ? static_cast<double>(s.per_step.size()) : 1.0;
  if (h.has_gpu && ctx.has_steps && !s.per_step.empty())
    f.title += fmt::format(" ({:.1f} ms per step)", ns_to_ms(s.gpu_stall_ns) / steps);
  // On the CPU a read is cheap; the words say what it becomes on a GPU, not that a GPU idles now.
  const std::string consequence =
      h.has_gpu ? fmt::format(
                      " A sync drains the GPU's queue, so when it returns the GPU idles until the host "
                      "launches again ({:.2f} ms of GPU idle in this window).",
                      ns_to_ms(s.gpu_stall_ns))
                : std::string(
                      " On the CPU each read is cheap; once the model runs on a GPU each one waits for all "
                      "queued GPU work, and the GPU idles until the host launches again.");
  f.detail =
      fmt::format("{} syncs block the host for {:.2f} ms in total: {}. Called from: {}.{}{}", s.count,
                  ns_to_ms(s.total_ns), list_names(s.by_name, 4), list_names(s.callers, 4), per_step, consequence);
  if (s.copy_syncs > 0) f.detail += copy_sync_text(s);
  f.evidence = {{"syncs", static_cast<double>(s.count), "count"},
                {"sync_host_ms", ns_to_ms(s.total_ns), "ms"},
                {"gpu_stall_ms", ns_to_ms(s.gpu_stall_ns), "ms"},
                {"gpu_stall_pct", h.has_gpu ? share_to_pct(share) : 0.0, "%"},
                {"steps_with_syncs", static_cast<double>(s.steps_with_syncs), "count"}};
  if (h.has_gpu && ctx.has_steps && !s.per_step.empty())
    f.evidence.push_back({"gpu_stall_ms_per_step", ns_to_ms(s.gpu_stall_ns) / steps, "ms"});
  if (s.copy_syncs > 0) {
    f.evidence.push_back({"copy_syncs", static_cast<double>(s.copy_syncs), "count"});
    f.evidence.push_back({"copy_sync_bytes_per_copy",
                          static_cast<double>(s.copy_sync_bytes) / static_cast<double>(s.copy_syncs), "bytes"});
    f.evidence.push_back({"copy_sync_host_ms", ns_to_ms(s.copy_sync_host_ns), "ms"});
    f.evidence.push_back({"copy_sync_transfer_us", ns_to_us(s.copy_sync_transfer_ns), "us"});
  }
  host_sync_fixes(s, f);
  f.time_share = share;
  // On a CPU-only trace nothing waits on the reads yet: no gain to bound until the loop runs on a GPU.
  f.max_speedup = h.has_gpu ? amdahl_speedup(share) : 1.0;
  f.threshold =
      "GPU stall after syncs >= 1% of the window (ferret); >= 3% medium, >= 15% high (XProf's host-overhead "
      "levels); CPU-only traces: host reads in >= half of the steps (info)";
  f.where = s.sites;
  out.push_back(std::move(f));
}

// allocator-in-steady-state. cudaMalloc / cudaFree after the first step mean the caching allocator
// misses (new shapes, fragmentation, empty_cache); cudaFree also synchronizes the device. Fires when
// the calls recur (at least one per steady step on average) or cost >= 1% of the steady steps; with
// no steps to tell warm-up from steady state, when they cost >= 3% of the window (then at most medium).
void rule_allocator(const HostBlockersResult& h, std::vector<Finding>& out) {
  const AllocatorCalls& a = h.allocator;
  double share = 0;
  std::uint64_t calls = 0;
  std::int64_t call_ns = 0;
  Severity severity = Severity::kLow;
  if (a.steady_state_known) {
    if (a.steady_count == 0) return;
    share = share_of(a.steady_ns, a.steady_window_ns);
    const bool recurring = a.steady_count >= a.steady_steps;
    if (!recurring && share < kHostFloor) return;
    severity = host_severity(share);
    calls = a.steady_count;
    call_ns = a.steady_ns;
  } else {
    if (a.count == 0) return;
    share = share_of(a.total_ns, h.window_ns);
    if (share < kHostMedium) return;
    severity = Severity::kMedium;
    calls = a.count;
    call_ns = a.total_ns;
  }
  Finding f = finding_for("allocator-in-steady-state");
  f.title = a.steady_state_known
                ? fmt::format(
                      "Allocator calls in steady state: {} cudaMalloc/cudaFree-type calls after the first step take "
                      "{:.1f}% of those steps",
                      calls, share_to_pct(share))
                : fmt::format("Allocator calls: {} cudaMalloc/cudaFree-type calls take {:.1f}% of the trace", calls,
                              share_to_pct(share));
  f.layer = Layer::kFramework;
  f.severity = severity;
  f.detail = fmt::format(
      "{} device allocator calls take {:.2f} ms{}: {}. PyTorch's caching allocator should serve every allocation from "
      "its "
      "cache once the first step has run; a cudaMalloc later means the cache missed (new tensor shapes, fragmentation, "
      "torch.cuda.empty_cache()), and cudaFree synchronizes the whole device.",
      calls, ns_to_ms(call_ns),
      a.steady_state_known ? fmt::format(" in {} steps after the first", a.steady_steps)
                           : std::string(" (the trace has no steps, so warm-up is included)"),
      list_names(a.by_name, 4));
  f.evidence = {{"allocator_calls", static_cast<double>(calls), "count"},
                {"allocator_ms", ns_to_ms(call_ns), "ms"},
                {"allocator_pct", share_to_pct(share), "%"},
                {"steady_steps", static_cast<double>(a.steady_steps), "count"}};
  f.fixes = {
      "Let segments grow in place: `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py`",
      "Keep shapes stable: pad variable-length batches to a few bucket sizes and use `DataLoader(..., drop_last=True)`",
      "Preallocate buffers once outside the loop and reuse them (`out=` arguments); never call "
      "`torch.cuda.empty_cache()` "
      "inside the loop",
      "Check for allocator retries under memory pressure: `torch.cuda.memory_stats()[\"num_alloc_retries\"]` > 0 means "
      "lower the batch size or enable expandable segments",
  };
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  // The what-if: a warm cache serves every allocation, so the calls all but vanish (a thousandth of
  // their time stays; the first step's calls too, which the steps re-timed include).
  fix_speeds_up_host_ops(f, "device allocator calls", static_cast<double>(call_ns),
                         0.999 * static_cast<double>(call_ns), is_allocator_call);
  f.threshold =
      "allocator calls in steps after the first, >= 1 per step or >= 1% of those steps (ferret); without "
      "steps >= 3% of the trace; >= 3% medium, >= 15% high (XProf's host-overhead levels)";
  out.push_back(std::move(f));
}

// pageable-copy. A copy from or to pageable memory is staged through a pinned bounce buffer and
// returns to the host only when done, "Async" or not (nsys flags every one). Its cost
// (CopyBlockers::pageable_cost_ns): host-to-device, the host's staging time; device-to-host, the
// GPU bubble after the call, as for a sync. Fires at >= 1% of the window (ferret's floor).
// rules_hardware's "pageable-copies" judges the same copies by bandwidth; this rule by what they
// cost the host and the GPU's queue.
void rule_pageable_copy(const HostBlockersResult& h, std::vector<Finding>& out) {
  const CopyBlockers& c = h.copies;
  if (c.pageable_copies == 0 || h.window_ns <= 0) return;
  const double share = share_of(c.pageable_cost_ns, h.window_ns);
  if (share < kHostFloor) return;
  Finding f = finding_for("pageable-copy");
  f.title = fmt::format("Pageable copies block the host: {} copies cost {:.1f}% of the time", c.pageable_copies,
                        share_to_pct(share));
  f.layer = Layer::kHardware;
  f.severity = host_severity(share);
  f.detail = fmt::format(
      "{} copies to or from pageable host memory ({:.1f} MB, {:.2f} ms on the GPU: {}) kept their host threads in the "
      "copy "
      "call for {:.2f} ms; staging host-to-device data and the GPU idle after device-to-host reads cost {:.2f} ms. "
      "Pinned "
      "memory lets the copy run asynchronously while the host prepares the next step.",
      c.pageable_copies, static_cast<double>(c.pageable_bytes) / 1e6, ns_to_ms(c.pageable_ns),
      list_names(c.pageable_by_name, 3), ns_to_ms(c.pageable_host_ns), ns_to_ms(c.pageable_cost_ns));
  f.evidence = {{"pageable_copies", static_cast<double>(c.pageable_copies), "count"},
                {"pageable_bytes", static_cast<double>(c.pageable_bytes), "bytes"},
                {"pageable_gpu_ms", ns_to_ms(c.pageable_ns), "ms"},
                {"pageable_host_ms", ns_to_ms(c.pageable_host_ns), "ms"},
                {"pageable_cost_pct", share_to_pct(share), "%"}};
  f.fixes = {
      "Pin input batches: `DataLoader(dataset, ..., pin_memory=True)`, then `batch = batch.to(\"cuda\", "
      "non_blocking=True)`",
      "Other host tensors: `x = x.pin_memory()` once (not every step), then `x.to(\"cuda\", non_blocking=True)`",
  };
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  f.threshold =
      "pageable copy cost (host staging, GPU bubble after reads) >= 1% of the window (ferret; nsys flags "
      "any); >= 3% medium, >= 15% high";
  out.push_back(std::move(f));
}

// sync-copy. Synchronous memcpy / memset calls (cudaMemcpy, cudaMemset, hipMemcpyWithStream, ...)
// block the host until the GPU finishes the copy and everything queued before it (nsys flags them).
// Fires at >= 1% of the window in such calls (ferret's floor); severity on the host-overhead scale.
void rule_sync_copy(const HostBlockersResult& h, std::vector<Finding>& out) {
  const CopyBlockers& c = h.copies;
  if (c.sync_copy_calls == 0 || h.window_ns <= 0) return;
  const double share = share_of(c.sync_copy_ns, h.window_ns);
  if (share < kHostFloor) return;
  Finding f = finding_for("sync-copy");
  // A synchronous copy waits for the GPU's queue like a device sync: one cause with host-sync (its
  // registry row's cause key), so when both fire one finding carries both (copies that were syncs
  // are counted there only).
  f.title = fmt::format("Synchronous copies: {} blocking memcpy/memset calls take {:.1f}% of the time",
                        c.sync_copy_calls, share_to_pct(share));
  f.layer = Layer::kFramework;
  f.severity = host_severity(share);
  f.detail = fmt::format(
      "{} synchronous copy or fill calls hold the host for {:.2f} ms: {}. Each waits for the GPU to drain its queue, "
      "like a "
      "device sync, and then for the copy itself.",
      c.sync_copy_calls, ns_to_ms(c.sync_copy_ns), list_names(c.sync_copy_by_name, 4));
  f.evidence = {{"sync_copy_calls", static_cast<double>(c.sync_copy_calls), "count"},
                {"sync_copy_ms", ns_to_ms(c.sync_copy_ns), "ms"},
                {"sync_copy_pct", share_to_pct(share), "%"}};
  f.fixes = {
      "Copy asynchronously from pinned memory: `x.pin_memory().to(\"cuda\", non_blocking=True)` instead of a blocking "
      "`.to(\"cuda\")` / `.cuda()` (on ROCm the blocking form is hipMemcpyWithStream)",
      "In C++/CUDA extensions use `cudaMemcpyAsync(dst, src, n, kind, at::cuda::getCurrentCUDAStream())` and "
      "`cudaMemsetAsync` instead of `cudaMemcpy` / `cudaMemset`",
      "Create tensors on the device directly (`torch.zeros(n, device=\"cuda\")`) rather than copying host tensors in",
  };
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  f.threshold =
      "host time in synchronous memcpy/memset calls >= 1% of the window (ferret; nsys flags any); >= 3% "
      "medium, >= 15% high";
  out.push_back(std::move(f));
}

}  // namespace

void rules_host(const TraceAnalysis& a, std::vector<Finding>& out) {
  rule_launch_bound(a.host_blockers, a.roofline, a.timeline, a.hot_spots, a.window_activity.first_launch_load_ns, out);
  rule_host_sync(a.host_blockers, a.context, out);
  rule_allocator(a.host_blockers, out);
  rule_pageable_copy(a.host_blockers, out);
  rule_sync_copy(a.host_blockers, out);
}

namespace {
constexpr RuleInfo kHostRules[] = {
    waiting_on_host(removes(explaining(kExplainsIdleHost, RuleInfo{"launch-bound", RuleSource::kTrace,
                                                                   Dimension::kCompute, RuleRole::kCause}),
                            &RetimeChanges::remove_launch_overhead)),
    // A synchronous copy waits for the GPU's queue like a device sync: one cause with sync-copy.
    judging("device-sync", removes(explaining(kExplainsIdleHost, RuleInfo{"host-sync", RuleSource::kTrace,
                                                                          Dimension::kCompute, RuleRole::kCause}),
                                   &RetimeChanges::remove_host_sync)),
    explaining(kExplainsIdleHost,
               RuleInfo{"allocator-in-steady-state", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause}),
    // rules_host and rules_hardware judge the same pageable copies.
    judging("pageable-upload", removes(explaining(kExplainsIdleHost, RuleInfo{"pageable-copy", RuleSource::kTrace,
                                                                              Dimension::kCompute, RuleRole::kCause}),
                                       &RetimeChanges::pin_pageable_uploads)),
    judging("device-sync", removes(explaining(kExplainsIdleHost, RuleInfo{"sync-copy", RuleSource::kTrace,
                                                                          Dimension::kCompute, RuleRole::kCause}),
                                   &RetimeChanges::remove_sync_copies)),
};
}  // namespace

FERRET_RULE_FAMILY(host){"rules_host", 50, kHostRules, rule_run<rules_host>()};

}  // namespace ferret
