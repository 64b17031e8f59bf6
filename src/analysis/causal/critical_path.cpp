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

// The critical path of each re-timed step, walked back from its end: the host lanes of every
// thread and each device's busy time are built once, then each step is walked.
class CriticalPathWalk {
 public:
  CriticalPathWalk(const TraceModel& model, const AnalysisContext& ctx, const RetimeResult& graph)
      : model_(model),
        ctx_(ctx),
        graph_(graph),
        communication_name_(model.strings.size(), -1),
        lo_(std::min(graph.steps.front().start_ns,
                     ctx.has_steps ? model.ts_ns[ctx.steps.front().event] : ctx.window_start_ns)),
        hi_(graph.steps.back().end_ns),
        // The steps' thread: other threads' top-level work starts from it (analysis/causal/step_graph.h).
        main_thread_(ctx.has_steps ? thread_key(model.pid[ctx.steps.front().event], model.tid[ctx.steps.front().event])
                                   : 0) {
    host_lanes();
    device_work();
  }

  CriticalPathStep step(const RetimedStep& step) {
    out_ = {};
    out_.number = step.number;
    out_.start_ns = step.start_ns;
    out_.duration_ns = step.duration_ns();
    floor_ = step.start_ns;
    start_walk(step);
    for (std::size_t guard = 0; t_ > floor_ && guard <= graph_.gpu.size() + graph_.syncs.size() + 1; ++guard) {
      ++out_.links;
      if (node_ != kNoNode)
        back_from_gpu_node();
      else
        back_on_host_thread();
    }
    std::int64_t sum = 0;
    for (std::int64_t v : out_.ns) sum += v;
    if (sum < out_.duration_ns) out_.ns[static_cast<int>(PathCategory::kCpu)] += out_.duration_ns - sum;
    std::array<double, kPathCategoryCount> as_double{};
    for (int c = 0; c < kPathCategoryCount; ++c) as_double[c] = static_cast<double>(out_.ns[c]);
    out_.bound_by = largest_category(as_double);
    return out_;
  }

 private:
  // Host lanes of every thread over the window.
  void host_lanes() {
    const TraceModel& model = model_;
    std::vector<std::int8_t> lane_of_name(model.strings.size(), -2);
    for (std::size_t i = 0; i < model.size(); ++i) {
      const EventIndex e = static_cast<EventIndex>(i);
      const EventKind k = model.kind[e];
      if (model.phase[e] != 'X' || !(k == EventKind::kCpuOp || k == EventKind::kUserAnnotation || is_launch_api(k)))
        continue;
      if (model.end_ns(e) <= lo_ || model.ts_ns[e] >= hi_) continue;
      const EventIndex parent = model.relations.parent[e];
      if (parent == kNoEvent || model.kind[parent] == EventKind::kPythonFunction)
        threads_[thread_key(model.pid[e], model.tid[e])].top_starts.push_back(model.ts_ns[e]);
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
        threads_[thread_key(model.pid[e], model.tid[e])].lanes[lane].push_back({model.ts_ns[e], model.end_ns(e)});
    }
    for (std::uint32_t s = 0; s < graph_.syncs.size(); ++s) {
      const SyncNode& sync = graph_.syncs[s];
      HostLanes& h = threads_[thread_key(model.pid[sync.event], model.tid[sync.event])];
      h.lanes[0].push_back({sync.start_ns, sync.end_ns});
      if (sync.waited != kNoNode) h.syncs.push_back(s);
    }
    for (auto& [key, h] : threads_) {
      std::sort(h.top_starts.begin(), h.top_starts.end());
      std::vector<Interval> above;
      for (std::vector<Interval>& lane : h.lanes) {
        merge_intervals(lane);
        if (!above.empty()) lane = subtract(lane, above);
        above.insert(above.end(), lane.begin(), lane.end());
        merge_intervals(above);
      }
    }
  }

  // Each device's busy time (its re-timed work), for the launch-to-start delays on the path: past a
  // launch latency, a kernel that started late waited on its device, busy with other work or with
  // a queue the window does not show - device time, not launch overhead (analysis/causal/causality.h).
  void device_work() {
    for (std::uint32_t n = 0; n < graph_.gpu.size(); ++n) {
      const GpuNode& g = graph_.gpu[n];
      if (!is_device_work(model_.kind[g.event])) continue;
      device_busy_[model_.pid[g.event]].push_back({g.start_ns, g.end_ns});
      device_ends_[model_.pid[g.event]].push_back({g.end_ns, n});
    }
    for (auto& [device, busy] : device_busy_) merge_intervals(busy);
    for (auto& [device, ends] : device_ends_) std::sort(ends.begin(), ends.end());
  }

  // Communication kernels by name, memoised: a busy device's path runs through most of its kernels.
  bool communication(EventIndex e) {
    std::int8_t& c = communication_name_[model_.name[e]];
    if (c < 0) c = is_communication_kernel(model_.name_of(e)) ? 1 : 0;
    return c == 1;
  }

  // The device's work that ended last in (after, t], other than `self`: what a kernel that started
  // late waited on when its device was busy.
  std::uint32_t device_work_before(std::int32_t device, std::int64_t after, std::int64_t t, std::uint32_t self) {
    const auto& ends = device_ends_[device];
    for (auto it = std::upper_bound(ends.begin(), ends.end(), std::make_pair(t, UINT32_MAX)); it != ends.begin();) {
      --it;
      if (it->first <= after) break;
      if (it->second != self) return it->second;
    }
    return kNoNode;
  }

  void add(PathCategory c, std::int64_t from, std::int64_t to) {
    from = std::max(from, floor_);
    if (to > from) out_.ns[static_cast<int>(c)] += to - from;
  }

  void add_host(const HostLanes* h, std::int64_t from, std::int64_t to) {
    from = std::max(from, floor_);
    if (to <= from) return;
    std::int64_t rest = to - from;
    if (h != nullptr)
      for (int l = 0; l < 4; ++l) {
        const std::int64_t part = covered_length(h->lanes[l], from, to);
        out_.ns[static_cast<int>(kLaneCategory[l])] += part;
        rest -= part;
      }
    out_.ns[static_cast<int>(PathCategory::kCpu)] += rest;
  }

  // Where the walk back from the step's end starts: on a GPU node or on a host thread at time t.
  void start_walk(const RetimedStep& step) {
    node_ = kNoNode;
    thread_ = 0;
    t_ = step.end_ns;
    if (step.last_gpu != kNoNode && graph_.gpu[step.last_gpu].end_ns >= step.cpu_end_ns) {
      node_ = step.last_gpu;
      add(PathCategory::kKernelGaps, graph_.gpu[node_].end_ns, t_);  // nothing: the step ends with it
      t_ = std::min(t_, graph_.gpu[node_].end_ns);
      return;
    }
    thread_ = ctx_.has_steps ? thread_key(model_.pid[step.event], model_.tid[step.event]) : 0;
    if (!ctx_.has_steps) {
      // Without steps: the thread whose last host work ends last.
      std::int64_t latest = INT64_MIN;
      for (std::size_t i = 0; i < model_.size(); ++i) {
        const EventKind k = model_.kind[i];
        if (model_.phase[i] != 'X' || !is_host_span(k) || k == EventKind::kPythonFunction) continue;
        if (model_.end_ns(static_cast<EventIndex>(i)) > latest && model_.end_ns(static_cast<EventIndex>(i)) <= hi_) {
          latest = model_.end_ns(static_cast<EventIndex>(i));
          thread_ = thread_key(model_.pid[i], model_.tid[i]);
        }
      }
    }
    add(PathCategory::kKernelGaps, step.cpu_end_ns, t_);
    t_ = std::min(t_, step.cpu_end_ns);
  }

  // One link back from a GPU node: what it waited on, its own time, then what bound its start.
  void back_from_gpu_node() {
    const GpuNode& g = graph_.gpu[node_];
    const EventKind k = model_.kind[g.event];
    if (g.binding == GpuBinding::kWait) {  // a GPU-side wait: follow what it waited on
      const GpuNode& w = graph_.gpu[g.previous];
      add(PathCategory::kKernelGaps, w.end_ns, t_);
      t_ = std::min(t_, w.end_ns);
      node_ = g.previous;
      return;
    }
    const PathCategory own = k == EventKind::kSync                                 ? PathCategory::kKernelGaps
                             : (k == EventKind::kKernel && communication(g.event)) ? PathCategory::kCommunication
                                                                                   : PathCategory::kGpuCompute;
    add(own, g.start_ns, t_);
    t_ = std::min(t_, g.start_ns);
    if (g.binding == GpuBinding::kStream) {
      const GpuNode& p = graph_.gpu[g.previous];
      add(PathCategory::kKernelGaps, p.end_ns, t_);
      t_ = std::min(t_, p.end_ns);
      node_ = g.previous;
    } else if (g.binding == GpuBinding::kLaunch) {
      back_to_launch(g);
    } else {
      add(PathCategory::kKernelGaps, floor_, t_);
      t_ = floor_;
    }
  }

  // Launch to start: the launch latency is launch overhead; a longer wait was the device's - busy
  // with other work (GPU compute) or idle with work queued where the window does not show it
  // (kernel gaps).
  void back_to_launch(const GpuNode& g) {
    const std::int64_t launched = model_.ts_ns[g.launch];
    const std::int64_t latency_end = std::min(t_, launched + kLaunchLatencyMaxNs);
    // Started past the launch latency, right after other work of its device: the path runs on
    // through that work (a device-bound step's path runs through its kernels).
    if (const std::uint32_t before =
            t_ > latency_end ? device_work_before(model_.pid[g.event], latency_end, t_, node_) : kNoNode;
        before != kNoNode) {
      add(PathCategory::kKernelGaps, graph_.gpu[before].end_ns, t_);
      t_ = std::min(t_, graph_.gpu[before].end_ns);
      node_ = before;
      return;
    }
    if (t_ > latency_end) {
      const auto busy = device_busy_.find(model_.pid[g.event]);
      const std::int64_t from = std::max(latency_end, floor_);
      const std::int64_t queued = busy == device_busy_.end() || t_ <= from ? 0 : covered_length(busy->second, from, t_);
      add(PathCategory::kGpuCompute, t_ - queued, t_);
      add(PathCategory::kKernelGaps, latency_end, t_ - queued);
    }
    add(PathCategory::kLaunchOverhead, launched, latency_end);
    t_ = std::min(t_, launched);
    node_ = kNoNode;
    thread_ = thread_key(model_.pid[g.launch], model_.tid[g.launch]);
  }

  // One link back on a host thread: to the start of another thread's top-level span, to the
  // latest sync that returned (then on the GPU work it waited on), or to the step's start.
  void back_on_host_thread() {
    auto it = threads_.find(thread_);
    const HostLanes* h = it == threads_.end() ? nullptr : &it->second;
    // The latest GPU-bound sync on this thread that returned by t.
    std::uint32_t sync = kNoNode;
    if (h != nullptr && !h->syncs.empty()) {
      auto s = std::upper_bound(h->syncs.begin(), h->syncs.end(), t_,
                                [&](std::int64_t v, std::uint32_t i) { return v < graph_.syncs[i].end_ns; });
      if (s != h->syncs.begin()) sync = *(s - 1);
    }
    // On another thread: back to the start of its top-level span, then on the steps' thread,
    // unless a sync on this thread returned after that start.
    std::int64_t top_start = INT64_MIN;
    if (ctx_.has_steps && thread_ != main_thread_ && h != nullptr) {
      auto s = std::upper_bound(h->top_starts.begin(), h->top_starts.end(), t_);
      if (s != h->top_starts.begin()) top_start = *(s - 1);
    }
    const std::int64_t sync_end = sync == kNoNode ? INT64_MIN : graph_.syncs[sync].end_ns;
    if (top_start > floor_ && top_start >= sync_end) {
      add_host(h, top_start, t_);
      t_ = top_start;
      thread_ = main_thread_;
      return;
    }
    if (sync == kNoNode || graph_.syncs[sync].end_ns <= floor_) {
      add_host(h, floor_, t_);
      t_ = floor_;
      return;
    }
    const SyncNode& sn = graph_.syncs[sync];
    add_host(h, sn.end_ns, t_);
    t_ = std::min(t_, sn.end_ns);
    const GpuNode& w = graph_.gpu[sn.waited];
    add(PathCategory::kSyncWait, w.end_ns, t_);
    t_ = std::min(t_, w.end_ns);
    node_ = sn.waited;
  }

  const TraceModel& model_;
  const AnalysisContext& ctx_;
  const RetimeResult& graph_;
  std::vector<std::int8_t> communication_name_;
  const std::int64_t lo_, hi_;
  const std::uint64_t main_thread_;
  std::unordered_map<std::uint64_t, HostLanes> threads_;
  std::unordered_map<std::int32_t, std::vector<Interval>> device_busy_;
  std::unordered_map<std::int32_t, std::vector<std::pair<std::int64_t, std::uint32_t>>> device_ends_;  // (end, node)
  // The walk's state: the step so far, its start, and where the walk stands (a GPU node, or a
  // host thread when node_ is kNoNode) at time t_.
  CriticalPathStep out_;
  std::int64_t floor_ = 0;
  std::uint32_t node_ = kNoNode;
  std::uint64_t thread_ = 0;
  std::int64_t t_ = 0;
};

}  // namespace

CriticalPathResult analyze_critical_path(const TraceModel& model, const AnalysisContext& ctx,
                                         StepGraphOrder* order_out) {
  CriticalPathResult result;
  result.has_steps = ctx.has_steps;
  const RetimeResult graph = retime_steps(model, ctx, {}, nullptr, order_out);
  if (graph.steps.empty()) return result;
  CriticalPathWalk walk(model, ctx, graph);
  for (const RetimedStep& step : graph.steps) result.steps.push_back(walk.step(step));
  const double count = static_cast<double>(result.steps.size());
  for (const CriticalPathStep& s : result.steps) {
    result.mean_duration_ns += static_cast<double>(s.duration_ns) / count;
    for (int c = 0; c < kPathCategoryCount; ++c) result.mean_ns[c] += static_cast<double>(s.ns[c]) / count;
  }
  result.bound_by = largest_category(result.mean_ns);
  return result;
}

}  // namespace ferret
