#include "analysis/causal/critical_path.h"

#include <algorithm>
#include <unordered_map>

#include "analysis/causal/causality.h"
#include "analysis/causal/host_blockers.h"
#include "analysis/causal/step_graph.h"
#include "analysis/classify.h"
#include "analysis/intervals.h"
#include "model/relations.h"

namespace ferret {

const char* path_category_key(PathCategory c) {
  switch (c) {
    case PathCategory::kCpu: return "cpu";
    case PathCategory::kInput: return "input";
    case PathCategory::kGpuCompute: return "gpu_compute";
    case PathCategory::kCommunication: return "communication";
    case PathCategory::kLaunchOverhead: return "launch_overhead";
    case PathCategory::kKernelGaps: return "kernel_gaps";
    case PathCategory::kSyncWait: return "sync_wait";
  }
  return "cpu";
}

const char* path_category_label(PathCategory c) {
  switch (c) {
    case PathCategory::kCpu: return "CPU";
    case PathCategory::kInput: return "input";
    case PathCategory::kGpuCompute: return "GPU compute";
    case PathCategory::kCommunication: return "communication";
    case PathCategory::kLaunchOverhead: return "launch overhead";
    case PathCategory::kKernelGaps: return "kernel-kernel gaps";
    case PathCategory::kSyncWait: return "sync waits";
  }
  return "CPU";
}

PathCategory largest_category(const std::array<double, kPathCategoryCount>& ns) {
  int best = 0;
  for (int c = 1; c < kPathCategoryCount; ++c)
    if (ns[c] > ns[best]) best = c;
  return static_cast<PathCategory>(best);
}

namespace {

// What one host thread was doing, by priority: sync > input > communication > launch; the rest
// of its time (ops, Python, untraced) is CPU.
struct HostLanes {
  std::array<std::vector<Interval>, 4> lanes;  // sync, input, communication, launch
  std::vector<std::uint32_t> syncs;            // GPU-bound synchronising calls (RetimeResult::syncs), by end
  std::vector<std::int64_t> top_starts;        // starts of its top-level spans, in time order
};
constexpr PathCategory kLaneCategory[4] = {PathCategory::kSyncWait, PathCategory::kInput, PathCategory::kCommunication,
                                           PathCategory::kLaunchOverhead};

}  // namespace

// NOLINTNEXTLINE(readability-function-size): over 120 lines from before the limit; split pending
CriticalPathResult analyze_critical_path(const TraceModel& model, const AnalysisContext& ctx,
                                         StepGraphOrder* order_out) {
  // Communication kernels by name, memoised: a busy device's path runs through most of its kernels.
  std::vector<std::int8_t> communication_name(model.strings.size(), -1);
  auto communication = [&](EventIndex e) {
    std::int8_t& c = communication_name[model.name[e]];
    if (c < 0) c = is_communication_kernel(model.name_of(e)) ? 1 : 0;
    return c == 1;
  };
  CriticalPathResult result;
  result.has_steps = ctx.has_steps;
  const RetimeResult graph = retime_steps(model, ctx, {}, nullptr, order_out);
  if (graph.steps.empty()) return result;

  // Host lanes of every thread over the window.
  const std::int64_t lo = std::min(graph.steps.front().start_ns,
                                   ctx.has_steps ? model.ts_ns[ctx.steps.front().event] : ctx.window_start_ns);
  const std::int64_t hi = graph.steps.back().end_ns;
  std::unordered_map<std::uint64_t, HostLanes> threads;
  std::vector<std::int8_t> lane_of_name(model.strings.size(), -2);
  for (std::size_t i = 0; i < model.size(); ++i) {
    const EventIndex e = static_cast<EventIndex>(i);
    const EventKind k = model.kind[e];
    if (model.phase[e] != 'X' || !(k == EventKind::kCpuOp || k == EventKind::kUserAnnotation || is_launch_api(k)))
      continue;
    if (model.end_ns(e) <= lo || model.ts_ns[e] >= hi) continue;
    const EventIndex parent = model.relations.parent[e];
    if (parent == kNoEvent || model.kind[parent] == EventKind::kPythonFunction)
      threads[thread_key(model.pid[e], model.tid[e])].top_starts.push_back(model.ts_ns[e]);
    std::int8_t& lane = lane_of_name[model.name[e]];
    if (lane == -2) {
      const std::string_view n = model.name_of(e);
      lane = -1;
      if (is_graph_sync(model, e))
        lane = 0;
      else if (is_dataloader_span(n))
        lane = 1;
      else if (n.starts_with("gloo:"))
        lane = 2;
      else if (is_launch_api(k) && is_launch_call(n))
        lane = 3;
    }
    if (lane >= 0)
      threads[thread_key(model.pid[e], model.tid[e])].lanes[lane].push_back({model.ts_ns[e], model.end_ns(e)});
  }
  for (std::uint32_t s = 0; s < graph.syncs.size(); ++s) {
    const SyncNode& sync = graph.syncs[s];
    HostLanes& h = threads[thread_key(model.pid[sync.event], model.tid[sync.event])];
    h.lanes[0].push_back({sync.start_ns, sync.end_ns});
    if (sync.waited != kNoNode) h.syncs.push_back(s);
  }
  // Each device's busy time (its re-timed work), for the launch-to-start delays on the path: past a
  // launch latency, a kernel that started late waited on its device, busy with other work or with
  // a queue the window does not show - device time, not launch overhead (analysis/causal/causality.h).
  std::unordered_map<std::int32_t, std::vector<Interval>> device_busy;
  std::unordered_map<std::int32_t, std::vector<std::pair<std::int64_t, std::uint32_t>>> device_ends;  // (end, node)
  for (std::uint32_t n = 0; n < graph.gpu.size(); ++n) {
    const GpuNode& g = graph.gpu[n];
    if (!is_device_work(model.kind[g.event])) continue;
    device_busy[model.pid[g.event]].push_back({g.start_ns, g.end_ns});
    device_ends[model.pid[g.event]].push_back({g.end_ns, n});
  }
  for (auto& [device, busy] : device_busy) merge_intervals(busy);
  for (auto& [device, ends] : device_ends) std::sort(ends.begin(), ends.end());
  // The device's work that ended last in (after, t], other than `self`: what a kernel that started
  // late waited on when its device was busy.
  const auto device_work_before = [&](std::int32_t device, std::int64_t after, std::int64_t t, std::uint32_t self) {
    const auto& ends = device_ends[device];
    for (auto it = std::upper_bound(ends.begin(), ends.end(), std::make_pair(t, UINT32_MAX)); it != ends.begin();) {
      --it;
      if (it->first <= after) break;
      if (it->second != self) return it->second;
    }
    return kNoNode;
  };
  // The steps' thread: other threads' top-level work starts from it (analysis/causal/step_graph.h).
  const std::uint64_t main_thread =
      ctx.has_steps ? thread_key(model.pid[ctx.steps.front().event], model.tid[ctx.steps.front().event]) : 0;
  for (auto& [key, h] : threads) {
    std::sort(h.top_starts.begin(), h.top_starts.end());
    std::vector<Interval> above;
    for (std::vector<Interval>& lane : h.lanes) {
      merge_intervals(lane);
      if (!above.empty()) lane = subtract(lane, above);
      above.insert(above.end(), lane.begin(), lane.end());
      merge_intervals(above);
    }
  }

  for (const RetimedStep& step : graph.steps) {
    CriticalPathStep out;
    out.number = step.number;
    out.start_ns = step.start_ns;
    out.duration_ns = step.duration_ns();
    const std::int64_t floor = step.start_ns;
    auto add = [&](PathCategory c, std::int64_t from, std::int64_t to) {
      from = std::max(from, floor);
      if (to > from) out.ns[static_cast<int>(c)] += to - from;
    };
    auto add_host = [&](const HostLanes* h, std::int64_t from, std::int64_t to) {
      from = std::max(from, floor);
      if (to <= from) return;
      std::int64_t rest = to - from;
      if (h != nullptr)
        for (int l = 0; l < 4; ++l) {
          const std::int64_t part = covered_length(h->lanes[l], from, to);
          out.ns[static_cast<int>(kLaneCategory[l])] += part;
          rest -= part;
        }
      out.ns[static_cast<int>(PathCategory::kCpu)] += rest;
    };

    // Walk back from the step's end: on a GPU node or on a host thread at time t.
    std::uint32_t node = kNoNode;
    std::uint64_t thread = 0;
    std::int64_t t = step.end_ns;
    if (step.last_gpu != kNoNode && graph.gpu[step.last_gpu].end_ns >= step.cpu_end_ns) {
      node = step.last_gpu;
      add(PathCategory::kKernelGaps, graph.gpu[node].end_ns, t);  // nothing: the step ends with it
      t = std::min(t, graph.gpu[node].end_ns);
    } else {
      thread = ctx.has_steps ? thread_key(model.pid[step.event], model.tid[step.event]) : 0;
      if (!ctx.has_steps) {
        // Without steps: the thread whose last host work ends last.
        std::int64_t latest = INT64_MIN;
        for (std::size_t i = 0; i < model.size(); ++i) {
          const EventKind k = model.kind[i];
          if (model.phase[i] != 'X' || !is_host_span(k) || k == EventKind::kPythonFunction) continue;
          if (model.end_ns(static_cast<EventIndex>(i)) > latest && model.end_ns(static_cast<EventIndex>(i)) <= hi) {
            latest = model.end_ns(static_cast<EventIndex>(i));
            thread = thread_key(model.pid[i], model.tid[i]);
          }
        }
      }
      add(PathCategory::kKernelGaps, step.cpu_end_ns, t);
      t = std::min(t, step.cpu_end_ns);
    }
    for (std::size_t guard = 0; t > floor && guard <= graph.gpu.size() + graph.syncs.size() + 1; ++guard) {
      ++out.links;
      if (node != kNoNode) {
        const GpuNode& g = graph.gpu[node];
        const EventKind k = model.kind[g.event];
        if (g.binding == GpuBinding::kWait) {  // a GPU-side wait: follow what it waited on
          const GpuNode& w = graph.gpu[g.previous];
          add(PathCategory::kKernelGaps, w.end_ns, t);
          t = std::min(t, w.end_ns);
          node = g.previous;
          continue;
        }
        const PathCategory own = k == EventKind::kSync                                 ? PathCategory::kKernelGaps
                                 : (k == EventKind::kKernel && communication(g.event)) ? PathCategory::kCommunication
                                                                                       : PathCategory::kGpuCompute;
        add(own, g.start_ns, t);
        t = std::min(t, g.start_ns);
        if (g.binding == GpuBinding::kStream) {
          const GpuNode& p = graph.gpu[g.previous];
          add(PathCategory::kKernelGaps, p.end_ns, t);
          t = std::min(t, p.end_ns);
          node = g.previous;
        } else if (g.binding == GpuBinding::kLaunch) {
          // Launch to start: the launch latency is launch overhead; a longer wait was the device's
          // - busy with other work (GPU compute) or idle with work queued where the window does
          // not show it (kernel gaps).
          const std::int64_t launched = model.ts_ns[g.launch];
          const std::int64_t latency_end = std::min(t, launched + kLaunchLatencyMaxNs);
          // Started past the launch latency, right after other work of its device: the path runs
          // on through that work (a device-bound step's path runs through its kernels).
          if (const std::uint32_t before =
                  t > latency_end ? device_work_before(model.pid[g.event], latency_end, t, node) : kNoNode;
              before != kNoNode) {
            add(PathCategory::kKernelGaps, graph.gpu[before].end_ns, t);
            t = std::min(t, graph.gpu[before].end_ns);
            node = before;
            continue;
          }
          if (t > latency_end) {
            const auto busy = device_busy.find(model.pid[g.event]);
            const std::int64_t from = std::max(latency_end, floor);
            const std::int64_t queued =
                busy == device_busy.end() || t <= from ? 0 : covered_length(busy->second, from, t);
            add(PathCategory::kGpuCompute, t - queued, t);
            add(PathCategory::kKernelGaps, latency_end, t - queued);
          }
          add(PathCategory::kLaunchOverhead, launched, latency_end);
          t = std::min(t, launched);
          node = kNoNode;
          thread = thread_key(model.pid[g.launch], model.tid[g.launch]);
        } else {
          add(PathCategory::kKernelGaps, floor, t);
          t = floor;
        }
        continue;
      }
      auto it = threads.find(thread);
      const HostLanes* h = it == threads.end() ? nullptr : &it->second;
      // The latest GPU-bound sync on this thread that returned by t.
      std::uint32_t sync = kNoNode;
      if (h != nullptr && !h->syncs.empty()) {
        auto s = std::upper_bound(h->syncs.begin(), h->syncs.end(), t,
                                  [&](std::int64_t v, std::uint32_t i) { return v < graph.syncs[i].end_ns; });
        if (s != h->syncs.begin()) sync = *(s - 1);
      }
      // On another thread: back to the start of its top-level span, then on the steps' thread,
      // unless a sync on this thread returned after that start.
      std::int64_t top_start = INT64_MIN;
      if (ctx.has_steps && thread != main_thread && h != nullptr) {
        auto s = std::upper_bound(h->top_starts.begin(), h->top_starts.end(), t);
        if (s != h->top_starts.begin()) top_start = *(s - 1);
      }
      const std::int64_t sync_end = sync == kNoNode ? INT64_MIN : graph.syncs[sync].end_ns;
      if (top_start > floor && top_start >= sync_end) {
        add_host(h, top_start, t);
        t = top_start;
        thread = main_thread;
        continue;
      }
      if (sync == kNoNode || graph.syncs[sync].end_ns <= floor) {
        add_host(h, floor, t);
        t = floor;
        continue;
      }
      const SyncNode& sn = graph.syncs[sync];
      add_host(h, sn.end_ns, t);
      t = std::min(t, sn.end_ns);
      const GpuNode& w = graph.gpu[sn.waited];
      add(PathCategory::kSyncWait, w.end_ns, t);
      t = std::min(t, w.end_ns);
      node = sn.waited;
    }
    std::int64_t sum = 0;
    for (std::int64_t v : out.ns) sum += v;
    if (sum < out.duration_ns) out.ns[static_cast<int>(PathCategory::kCpu)] += out.duration_ns - sum;
    std::array<double, kPathCategoryCount> as_double{};
    for (int c = 0; c < kPathCategoryCount; ++c) as_double[c] = static_cast<double>(out.ns[c]);
    out.bound_by = largest_category(as_double);
    result.steps.push_back(out);
  }

  const double count = static_cast<double>(result.steps.size());
  for (const CriticalPathStep& s : result.steps) {
    result.mean_duration_ns += static_cast<double>(s.duration_ns) / count;
    for (int c = 0; c < kPathCategoryCount; ++c) result.mean_ns[c] += static_cast<double>(s.ns[c]) / count;
  }
  result.bound_by = largest_category(result.mean_ns);
  return result;
}

}  // namespace ferret
