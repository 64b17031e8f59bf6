#include "analysis/causal/step_graph.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "analysis/causal/causality.h"
#include "analysis/causal/host_blockers.h"
#include "analysis/causal/retime_parts.h"
#include "analysis/classify.h"
#include "analysis/device/hardware.h"
#include "analysis/intervals.h"
#include "base/text.h"
#include "model/relations.h"

namespace ferret {

// The sweep's pieces (retime_parts.h), used throughout this file.
using namespace retime_parts;

namespace {

class Names {
 public:
  // `known`: the flags an earlier sweep of the same model classified (empty for none).
  Names(const TraceModel& model, const RetimeChanges& changes, const std::vector<std::uint16_t>& known)
      : model_(model),
        changes_(changes),
        flags_(known.size() == model.strings.size() ? known : std::vector<std::uint16_t>(model.strings.size(), 0)),
        speedup_(changes.speedups.empty() ? 0 : model.strings.size(), -2) {}
  std::vector<std::uint16_t> take_flags() { return std::move(flags_); }

  std::uint16_t flags(EventIndex e) {
    std::uint16_t& f = flags_[model_.name[e]];
    if (f == 0) {
      const std::string_view n = model_.name_of(e);
      f = kNameKnown;
      if (is_host_sync_call(n) || is_sync_copy_call(n)) f |= kNameSyncCall;
      if (is_sync_copy_call(n)) f |= kNameSyncCopy;
      if (is_communication_kernel(n)) f |= kNameCommKernel;
      if (is_host_sync_op(n)) f |= kNameSyncOp;
      if (is_launch_call(n)) f |= kNameLaunch;
      if (is_launch_call(n) && contains(n, "Memcpy")) f |= kNameCopyLaunch;
      if (is_dataloader_span(n)) f |= kNameLoader;
      if (n.starts_with("gloo:")) f |= kNameGloo;
      if (n.starts_with("c10d::")) f |= kNameHandOver;
      if (profiler_step_number(n) >= 0) f |= kNameStep;
      if (const CopyKind c = parse_copy_name(n);
          c.direction == CopyDirection::kHtoD && c.host_memory == HostMemory::kPageable)
        f |= kNamePageableUpload;
    }
    return f;
  }
  // The first speedup that selects the event's name (its predicate, else its pattern as a part of
  // the name), or -1.
  int speedup(EventIndex e) {
    if (changes_.speedups.empty()) return -1;
    std::int32_t& s = speedup_[model_.name[e]];
    if (s == -2) {
      s = -1;
      const std::string_view n = model_.name_of(e);
      // A finding's fix can name many kernels: one pass over the speedups per distinct name.
      for (std::size_t i = 0; i < changes_.speedups.size(); ++i) {
        const RetimeChanges::Speedup& sp = changes_.speedups[i];
        if (sp.events) continue;  // selects events, not names
        if (sp.selects ? sp.selects(n) : contains(n, sp.pattern)) {
          s = static_cast<std::int32_t>(i);
          break;
        }
      }
    }
    return s;
  }
  // Whether a kernel selected through its op is one the speedup scales.
  // Memoised per (kernel name, speedup): the predicate scans the name, and a trace launches the
  // same few hundred kernels a million times.
  bool kernel_kept(EventIndex kernel, int s) {
    const RetimeChanges::Speedup& sp = changes_.speedups[static_cast<std::size_t>(s)];
    if (!sp.kernels) return true;
    if (kept_.empty()) kept_.assign(model_.strings.size() * changes_.speedups.size(), -1);
    std::int8_t& k =
        kept_[static_cast<std::size_t>(model_.name[kernel]) * changes_.speedups.size() + static_cast<std::size_t>(s)];
    if (k < 0) k = sp.kernels(model_.name_of(kernel)) ? 1 : 0;
    return k == 1;
  }

 private:
  const TraceModel& model_;
  const RetimeChanges& changes_;
  std::vector<std::uint16_t> flags_;
  std::vector<std::int32_t> speedup_;  // per name: the speedup's index, -1 none, -2 not looked up
  std::vector<std::int8_t> kept_;      // per (name, speedup): kernel_kept, -1 not looked up
};

}  // namespace

bool is_graph_sync(const TraceModel& model, EventIndex e) {
  const std::string_view n = model.name_of(e);
  const EventKind k = model.kind[e];
  if (is_launch_api(k)) return is_host_sync_call(n) || is_sync_copy_call(n);
  return (k == EventKind::kCpuOp || k == EventKind::kUserAnnotation) && is_host_sync_op(n);
}

namespace {

// Python frames a fix takes off the host (host-preprocessing's): the sweep then holds them too, so
// it cannot reuse an order made without them, nor hand one on.
std::vector<const RetimeChanges::Speedup*> python_speedups_of(const TraceModel& model, const RetimeChanges& changes) {
  std::vector<const RetimeChanges::Speedup*> out;
  for (const RetimeChanges::Speedup& sp : changes.speedups)
    if (sp.events && sp.scope == RetimeChanges::Speedup::Scope::kHost && !sp.events->empty() &&
        model.kind[sp.events->front()] == EventKind::kPythonFunction)
      out.push_back(&sp);
  return out;
}

// One re-timing of the steps: the steps and their points, the sweep of host spans and GPU work in
// time order (each host thread on its clock, each GPU activity bound by its launch, its stream or
// what it waited on), then each step's re-timed span.
class StepRetimer {
 public:
  StepRetimer(const TraceModel& model, const AnalysisContext& ctx, const RetimeChanges& changes,
              const StepGraphOrder* order, StepGraphOrder* order_out)
      : model_(model),
        ctx_(ctx),
        changes_(changes),
        rel_(model.relations),
        python_speedups_(python_speedups_of(model, changes)),
        order_(python_speedups_.empty() ? order : nullptr),
        order_out_(python_speedups_.empty() ? order_out : nullptr),
        has_main_(ctx.has_steps),
        main_thread_(ctx.has_steps ? thread_key(model.pid[ctx.steps.front().event], model.tid[ctx.steps.front().event])
                                   : 0) {}

  RetimeResult run() {
    result_.has_steps = ctx_.has_steps;
    result_.touched.speedup_events.assign(changes_.speedups.size(), 0);
    if (!rel_.built) return std::move(result_);
    static const std::vector<std::uint16_t> kNoFlags;
    names_.emplace(model_, changes_, order_ != nullptr && order_->built ? order_->name_flags : kNoFlags);
    if (!steps()) return std::move(result_);
    mark_launching_spans();
    build_sweep();
    ordered_ = order_ != nullptr && order_->built;
    if (changes_.remove_exposed_communication) busy_compute();
    for (std::size_t id = 0; id < model_.strings.size() && !gloo_in_trace_; ++id)
      gloo_in_trace_ = model_.strings.view(static_cast<StrId>(id)).starts_with("gloo:");
    step_gpu_end_.assign(result_.steps.size(), INT64_MIN);
    const std::size_t item_count = ordered_ ? order_->items.size() : items_.size();
    for (std::size_t n = 0; n < item_count; ++n) sweep(n);
    finish_steps();
    if (launch_slots_out_ != nullptr) order_out_->name_flags = names_->take_flags();
    return std::move(result_);
  }

 private:
  struct StepSpan {
    std::int64_t cpu_start, cpu_end;
    std::uint32_t start_point, end_point;
  };
  // gloo collectives swept so far: original start and end, re-timed end, process. A thread of that
  // process that hands collectives over (c10d::), and did before one started, and resumes (or
  // ends its step) within kGlooWakeNs of its end, idle since before that end, was waiting for it.
  struct GlooEnd {
    std::int64_t start, end, end_new;
    std::int32_t pid;
  };

  bool python_selected(EventIndex e) const {
    for (const RetimeChanges::Speedup* sp : python_speedups_)
      if (std::binary_search(sp->events->begin(), sp->events->end(), e)) return true;
    return false;
  }

  // The steps, with the host span each one re-times from; false when there is none.
  bool steps() {
    if (ctx_.has_steps) {
      for (const Step& s : ctx_.steps) {
        RetimedStep r;
        r.number = s.number;
        r.event = s.event;
        const std::uint64_t th = thread_key(model_.pid[s.event], model_.tid[s.event]);
        spans_.push_back({model_.ts_ns[s.event], s.cpu_end_ns, static_cast<std::uint32_t>(points_.size()),
                          static_cast<std::uint32_t>(points_.size() + 1)});
        points_.push_back({th, model_.ts_ns[s.event]});
        points_.push_back({th, s.cpu_end_ns});
        r.start_ns = s.start_ns;
        result_.steps.push_back(r);
      }
    } else if (ctx_.window_ns() > 0) {
      RetimedStep r;
      r.start_ns = ctx_.window_start_ns;
      result_.steps.push_back(r);
      spans_.push_back({ctx_.window_start_ns, ctx_.window_end_ns, kNoNode, kNoNode});
    }
    if (result_.steps.empty()) return false;
    lo_ = std::min(spans_.front().cpu_start, result_.steps.front().start_ns);
    hi_ = ctx_.has_steps ? spans_.back().cpu_end : ctx_.window_end_ns;
    return true;
  }

  std::int32_t step_of_host_time(std::int64_t t) const {
    auto it = std::upper_bound(spans_.begin(), spans_.end(), t,
                               [](std::int64_t v, const StepSpan& s) { return v < s.cpu_start; });
    if (it == spans_.begin()) return -1;
    --it;
    return (t < it->cpu_end || (!ctx_.has_steps && t <= it->cpu_end)) ? static_cast<std::int32_t>(it - spans_.begin())
                                                                      : -1;
  }

  // Host spans under which GPU work was launched: a speedup of such an op scales its kernels, not
  // its host time (the host only issues them).
  void mark_launching_spans() {
    launches_gpu_.assign(model_.size(), false);
    if (changes_.speedups.empty() && !changes_.remove_host_overhead) return;
    for (std::size_t i = 0; i < rel_.launches.size(); ++i) {
      if (rel_.launch_gpu_begin[i] == rel_.launch_gpu_begin[i + 1]) continue;
      for (EventIndex p = rel_.launches[i]; p != kNoEvent && !launches_gpu_[p]; p = rel_.parent[p])
        launches_gpu_[p] = true;
    }
  }

  // The sweep: host spans starting in the window, GPU activities without a launch call in it, and
  // the points whose re-timed time the steps need.
  void build_sweep() {
    if (order_ != nullptr && order_->built) {
      points_.clear();
      for (std::size_t p = 0; p < order_->point_threads.size(); ++p)
        points_.push_back({order_->point_threads[p], order_->point_times[p]});
      return;
    }
    std::unordered_map<std::uint64_t, std::uint32_t> last_end_point;
    for (std::size_t i = 0; i < model_.size(); ++i) {
      const EventIndex e = static_cast<EventIndex>(i);
      const EventKind k = model_.kind[e];
      if (model_.phase[e] != 'X') continue;
      const std::int64_t ts = model_.ts_ns[e];
      if (ts < lo_ || ts >= hi_ + (ctx_.has_steps ? 0 : 1)) continue;
      if (k == EventKind::kCpuOp || k == EventKind::kUserAnnotation || is_launch_api(k)) {
        items_.push_back({ts, model_.dur_ns[e], e, 0});
        if (!ctx_.has_steps) {
          const std::uint64_t th = thread_key(model_.pid[e], model_.tid[e]);
          auto [it, fresh] = last_end_point.try_emplace(th, static_cast<std::uint32_t>(points_.size()));
          if (fresh) points_.push_back({th, model_.end_ns(e)});
          points_[it->second].t = std::max(points_[it->second].t, model_.end_ns(e));
        }
      } else if (k == EventKind::kPythonFunction && !python_speedups_.empty() && python_selected(e)) {
        items_.push_back({ts, model_.dur_ns[e], e, 0});
      } else if (is_gpu_activity(k) && k != EventKind::kCudaEvent && k != EventKind::kGpuUserAnnotation) {
        if (!ctx_.counts_gpu_event(model_, e)) continue;
        const EventIndex launch = rel_.launcher_of(e);
        if (launch == kNoEvent || model_.ts_ns[launch] < lo_ || model_.ts_ns[launch] >= hi_)
          items_.push_back({ts, model_.dur_ns[e], e, 0});
      }
    }
    for (std::uint32_t p = 0; p < points_.size(); ++p) items_.push_back({points_[p].t, -1, kNoEvent, p});
    // Time order; at one instant points first (a step's end before the next step's start), then
    // parents before their children (longer first), then file order.
    std::sort(items_.begin(), items_.end(), [](const SweepItem& a, const SweepItem& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if ((a.event == kNoEvent) != (b.event == kNoEvent)) return a.event == kNoEvent;
      if (a.dur != b.dur) return a.dur > b.dur;
      return a.event == kNoEvent ? a.point < b.point : a.event < b.event;
    });
    if (order_out_ != nullptr && model_.size() < StepGraphOrder::kPointItem) {
      order_out_->built = true;
      order_out_->point_threads.clear();
      order_out_->point_times.clear();
      for (const Point& p : points_) {
        order_out_->point_threads.push_back(p.thread);
        order_out_->point_times.push_back(p.t);
      }
      order_out_->items.resize(items_.size());
      for (std::size_t k = 0; k < items_.size(); ++k)
        order_out_->items[k] =
            items_[k].event == kNoEvent ? (StepGraphOrder::kPointItem | items_[k].point) : items_[k].event;
      order_out_->launch_slots.assign(items_.size(), StepGraphOrder::kNoLaunch);
      launch_slots_out_ = &order_out_->launch_slots;
    }
  }

  SweepItem item_at(std::size_t k) const {
    if (!ordered_) return items_[k];
    const std::uint32_t v = order_->items[k];
    if (v & StepGraphOrder::kPointItem) {
      const std::uint32_t p = v & ~StepGraphOrder::kPointItem;
      return {points_[p].t, -1, kNoEvent, p};
    }
    return {model_.ts_ns[v], model_.dur_ns[v], v, 0};
  }

  // Compute kernels' busy time, for the exposed part of communication kernels.
  void busy_compute() {
    for (EventIndex e : rel_.gpu_events)
      if (model_.kind[e] == EventKind::kKernel && !(names_->flags(e) & kNameCommKernel) &&
          ctx_.counts_gpu_event(model_, e))
        compute_busy_.push_back({model_.ts_ns[e], model_.end_ns(e)});
    merge_intervals(compute_busy_);
  }

  // Whether the trace records hand-overs at all (c10d:: operators): a recording without them
  // (operators left out) cannot say which thread handed a collective over, so any idle thread of
  // the process may have waited. Looked up once, when the first gloo collective is swept (most
  // traces have none).
  bool hand_overs_recorded() {
    if (handovers_recorded_ < 0) {
      handovers_recorded_ = 0;
      for (std::size_t id = 0; id < model_.strings.size() && handovers_recorded_ == 0; ++id)
        handovers_recorded_ = model_.strings.view(static_cast<StrId>(id)).starts_with("c10d::") ? 1 : 0;
    }
    return handovers_recorded_ == 1;
  }

  // DDP on CPU tensors: the training thread ends backward, then waits (in no operator) for its
  // buckets' gloo all-reduce; it resumes when the latest collective it waited for ends. Re-timed,
  // it resumes when both its own previous work and that collective's re-timed end allow.
  void wait_for_gloo(ThreadClock& clock, std::int64_t ts, std::int32_t pid) {
    // The sweep runs in start order: a collective that ended over kGlooWakeNs ago wakes no one now.
    std::erase_if(gloo_ends_, [&](const GlooEnd& g) { return ts - g.end > kGlooWakeNs; });
    const GlooEnd* waited = nullptr;
    for (auto it = gloo_ends_.rbegin(); it != gloo_ends_.rend(); ++it) {
      if (it->pid != pid || it->end > ts || it->end <= clock.last_end ||
          (clock.handed_over > it->start && hand_overs_recorded()))
        continue;
      if (waited == nullptr || it->end > waited->end) waited = &*it;
    }
    if (waited == nullptr) return;
    // The wake-up (and a core to run on) still takes what it took after the collective's end.
    const std::int64_t wake = ts - waited->end;
    const std::int64_t after_collective = waited->end_new + wake;
    if (clock.held) {
      clock.at = std::max(clock.at == INT64_MIN ? after_collective : clock.at, after_collective);
      return;
    }
    clock.map(ts);  // closes a region that ended before ts
    if (clock.active) return;
    // A thread with no work before the wait (its step is all waiting) resumes with the collective.
    const std::int64_t after_own = clock.last_end == INT64_MIN ? INT64_MIN : clock.last_end + clock.shift + wake;
    clock.shift = std::max(after_own, after_collective) - ts;
  }

  // The thread's clock; the last one asked for is kept at hand (spans come in runs per thread, and
  // the map's nodes do not move).
  ThreadClock& clock_of(std::uint64_t thread) {
    if (last_clock_ != nullptr && last_thread_ == thread) return *last_clock_;
    auto [it, fresh] = clocks_.try_emplace(thread);
    if (fresh) it->second.held = changes_.remove_host_overhead;
    last_thread_ = thread;
    last_clock_ = &it->second;
    return it->second;
  }

  // Scaled duration of a GPU activity.
  std::int64_t gpu_duration(EventIndex g, EventIndex launch) {
    const std::int64_t dur = model_.dur_ns[g];
    if (model_.kind[g] == EventKind::kKernel && changes_.remove_exposed_communication &&
        (names_->flags(g) & kNameCommKernel)) {
      ++result_.touched.communication;
      return covered_length(compute_busy_, model_.ts_ns[g], model_.end_ns(g));
    }
    if (changes_.speedups.empty()) return dur;
    for (std::size_t i = 0; i < changes_.speedups.size(); ++i) {
      const RetimeChanges::Speedup& sp = changes_.speedups[i];
      if (sp.events && std::binary_search(sp.events->begin(), sp.events->end(), g)) {
        ++result_.touched.speedup_events[i];
        return std::llround(static_cast<double>(dur) / sp.factor);
      }
    }
    using Scope = RetimeChanges::Speedup::Scope;
    auto device_scope = [&](int i) {
      return i >= 0 && changes_.speedups[static_cast<std::size_t>(i)].scope != Scope::kHost;
    };
    int s = names_->speedup(g);
    if (!device_scope(s) || !names_->kernel_kept(g, s)) s = -1;
    for (EventIndex p = launch; s < 0 && p != kNoEvent; p = rel_.parent[p]) {
      const int by_op = names_->speedup(p);
      if (device_scope(by_op) && names_->kernel_kept(g, by_op)) s = by_op;
    }
    if (s < 0) return dur;
    ++result_.touched.speedup_events[s];
    return std::llround(static_cast<double>(dur) / changes_.speedups[s].factor);
  }

  // The node on each stream whose original end is the latest at or before `t` (+ slack).
  static std::int64_t waited_on(const StreamState& st, std::int64_t t) {
    auto it = std::upper_bound(st.end.begin(), st.end.end(), t + kSyncSlackNs);
    return it == st.end.begin() ? -1 : static_cast<std::int64_t>(it - st.end.begin()) - 1;
  }

  // Where a GPU activity starts: after its launch or its stream's previous work, whichever binds.
  void bind_start(GpuNode& node, StreamState& st, EventIndex g, EventIndex launch, std::int64_t launch_new) {
    const std::int64_t start = model_.ts_ns[g];
    const bool has_prev = !st.end.empty();
    const std::int64_t gap = has_prev ? start - st.end.back() : INT64_MAX;
    std::int64_t stream_ready = INT64_MIN;
    if (has_prev) stream_ready = st.end_new.back() + std::min(gap, kBackToBackGapNs);
    std::int64_t launch_ready = INT64_MIN;
    if (launch != kNoEvent) {
      const std::int64_t latency = start - model_.ts_ns[launch];
      launch_ready = launch_new + (gap > kBackToBackGapNs ? latency : std::min(latency, kLaunchLatencyNs));
    } else if (!has_prev) {
      launch_ready = start;  // nothing to follow: it keeps its time
    } else {
      stream_ready = st.end_new.back() + gap;  // no launch in the window: the whole gap stays
    }
    // Queued far longer than a launch takes, after a gap on its own stream: neither its launch nor
    // its stream held it, the device's other work did (a cross-stream dependency, or a queue
    // shared with other streams). It follows the other stream's activity that ended just before
    // it, when one did (causality.h: kDependencySlackNs); else it keeps its delay.
    std::uint32_t waited_node = kNoNode;
    if (launch != kNoEvent && gap > kBackToBackGapNs && start - model_.ts_ns[launch] > kUntracedQueueNs) {
      std::int64_t waited_end = INT64_MIN, waited_new = 0;
      for (const auto& [key, other] : streams_) {
        if (&other == &st || static_cast<std::int32_t>(key >> 32) != model_.pid[g]) continue;
        auto it = std::upper_bound(other.end.begin(), other.end.end(), start);
        if (it == other.end.begin()) continue;
        const std::size_t j = static_cast<std::size_t>(it - other.end.begin()) - 1;
        if (other.end[j] < start - kDependencySlackNs || other.end[j] <= waited_end) continue;
        waited_end = other.end[j];
        waited_new = other.end_new[j];
        waited_node = other.node[j];
      }
      if (waited_node != kNoNode) {
        launch_ready = std::max(launch_new + kLaunchLatencyNs, waited_new + (start - waited_end));
      } else if (has_prev) {
        // Nothing else ran before it: the gap is the device's (a bubble, a wait the trace does not
        // show) and stays, after its stream; the launch, long done, binds nothing. Removing device
        // stalls closes it to back-to-back.
        launch_ready = launch_new + kLaunchLatencyNs;
        stream_ready = st.end_new.back() + gap;
        if (changes_.remove_device_stalls) {
          stream_ready = st.end_new.back() + kBackToBackGapNs;
          ++result_.touched.device_stalls;
        }
      }
    }
    if (launch_ready >= stream_ready) {
      node.start_ns = launch_ready;
      node.binding = waited_node != kNoNode ? GpuBinding::kWait
                     : launch != kNoEvent   ? GpuBinding::kLaunch
                                            : GpuBinding::kNone;
      if (waited_node != kNoNode) node.previous = waited_node;
    } else {
      node.start_ns = stream_ready;
      node.binding = GpuBinding::kStream;
      node.previous = st.node.back();
    }
  }

  // A GPU-side wait ends when the work it waited for on another stream ends: the latest
  // other-stream activity that ended within it.
  void end_gpu_wait(GpuNode& node, const StreamState& st, std::int64_t start, std::int64_t end) {
    std::int64_t waited_end = INT64_MIN, waited_new = 0;
    std::uint32_t waited_node = kNoNode;
    for (const auto& [key, other] : streams_) {
      if (&other == &st) continue;
      const std::int64_t j = waited_on(other, end);
      if (j < 0 || other.end[j] <= start || other.end[j] <= waited_end) continue;
      waited_end = other.end[j];
      waited_new = other.end_new[j];
      waited_node = other.node[j];
    }
    if (waited_node == kNoNode) return;
    const std::int64_t tail = std::max<std::int64_t>(0, end - waited_end);
    if (waited_new + tail > node.start_ns) {
      node.end_ns = waited_new + tail;
      node.binding = GpuBinding::kWait;
      node.previous = waited_node;
    } else {
      node.end_ns = node.start_ns;
    }
  }

  void retime_gpu(EventIndex g, EventIndex launch, std::int64_t launch_new) {
    GpuNode node;
    node.event = g;
    node.launch = launch;
    const std::int64_t start = model_.ts_ns[g];
    const std::int64_t end = model_.end_ns(g);
    StreamState& st = streams_[thread_key(model_.pid[g], model_.tid[g])];
    bind_start(node, st, g, launch, launch_new);
    node.end_ns = node.start_ns + gpu_duration(g, launch);
    if (model_.kind[g] == EventKind::kSync && end > start) end_gpu_wait(node, st, start, end);
    node.step = launch != kNoEvent ? step_of_host_time(model_.ts_ns[launch]) : -1;
    if (launch == kNoEvent && ctx_.has_steps) {
      // The step whose window holds its start (steps are in time order and do not overlap).
      auto it = std::upper_bound(ctx_.steps.begin(), ctx_.steps.end(), start,
                                 [](std::int64_t v, const Step& s) { return v < s.start_ns; });
      if (it != ctx_.steps.begin() && start < std::prev(it)->end_ns)
        node.step = static_cast<std::int32_t>(std::prev(it) - ctx_.steps.begin());
    } else if (launch == kNoEvent) {
      node.step = 0;
    }
    const std::uint32_t id = static_cast<std::uint32_t>(result_.gpu.size());
    if (node.step >= 0 && node.end_ns > step_gpu_end_[node.step]) {
      step_gpu_end_[node.step] = node.end_ns;
      result_.steps[node.step].last_gpu = id;
    }
    // Keep the stream's history ordered by original end (activities arrive in launch order,
    // which is the stream's order but for rare cross-thread launches).
    if (!st.end.empty() && end < st.end.back()) {
      result_.gpu.push_back(node);
      return;
    }
    st.end.push_back(end);
    st.end_new.push_back(node.end_ns);
    st.node.push_back(id);
    result_.gpu.push_back(node);
  }

  // One item of the sweep: a point, a GPU activity without its launch, or a host span.
  void sweep(std::size_t n) {
    const SweepItem item = item_at(n);
    if (item.event == kNoEvent) {
      Point& p = points_[item.point];
      ThreadClock& clock = clock_of(p.thread);
      // A step that ends right after a collective it waited for (nothing recorded after the wait).
      if (!gloo_ends_.empty() && !(clock.active && p.t < clock.until))
        wait_for_gloo(clock, p.t, static_cast<std::int32_t>(p.thread >> 32));
      p.mapped = clock.map(p.t);
      return;
    }
    if (is_gpu_activity(model_.kind[item.event])) {
      retime_gpu(item.event, kNoEvent, 0);
      return;
    }
    sweep_host_span(n, item);
  }

  // Another thread's work (the autograd engine's backward, a pin-memory thread) is started by the
  // training loop: it starts as much earlier or later as the loop's thread, but not before its own
  // previous work ends.
  void follow_main_thread(ThreadClock& clock, std::int64_t ts) {
    clock.map(ts);
    const std::int64_t via_main = clock_of(main_thread_).map(ts);
    if (clock.held) {
      // Where its previous work left it, once it has done any.
      clock.at = std::max(via_main, clock.last_top_end == INT64_MIN ? INT64_MIN : clock.at);
    } else {
      const std::int64_t own_floor = clock.last_top_end == INT64_MIN ? INT64_MIN : clock.last_top_end + clock.shift;
      clock.shift = std::max(via_main, own_floor) - ts;
    }
  }

  // The GPU work a launch call launched, re-timed from its re-timed start. Returns whether it
  // launched any, and whether any was a pageable upload.
  std::pair<bool, bool> retime_launched(std::size_t n, EventIndex e, std::int64_t start_new) {
    bool launched = false, pageable_upload = false;
    std::uint32_t slot = StepGraphOrder::kNoLaunch;
    if (ordered_) {
      slot = order_->launch_slots[n];
    } else {
      auto it = std::lower_bound(rel_.launches.begin(), rel_.launches.end(), e);
      if (it != rel_.launches.end() && *it == e) slot = static_cast<std::uint32_t>(it - rel_.launches.begin());
    }
    if (launch_slots_out_ != nullptr) (*launch_slots_out_)[n] = slot;
    if (slot == StepGraphOrder::kNoLaunch) return {false, false};
    const std::size_t li = slot;
    for (std::uint32_t j = rel_.launch_gpu_begin[li]; j < rel_.launch_gpu_begin[li + 1]; ++j) {
      const EventIndex g = rel_.launch_gpu[j];
      if (!ctx_.counts_gpu_event(model_, g) || model_.kind[g] == EventKind::kCudaEvent ||
          model_.kind[g] == EventKind::kGpuUserAnnotation)
        continue;
      retime_gpu(g, e, start_new);
      launched = true;
      pageable_upload = pageable_upload || (names_->flags(g) & kNamePageableUpload);
    }
    return {launched, pageable_upload};
  }

  void sweep_host_span(std::size_t n, const SweepItem& item) {
    const TraceModel& model = model_;  // locals: the sweep's hottest loop reads them for every span
    const EventIndex e = item.event;
    const EventKind k = model.kind[e];
    const std::uint64_t key = thread_key(model.pid[e], model.tid[e]);
    ThreadClock& clock = clock_of(key);  // node-based map: the reference outlives inserts
    const bool inside = clock.active && item.ts < clock.until;
    const EventIndex parent = rel_.parent[e];
    const bool top_level = parent == kNoEvent || model.kind[parent] == EventKind::kPythonFunction;
    if (top_level && has_main_ && key != main_thread_ && !inside) follow_main_thread(clock, item.ts);
    const std::uint16_t f = names_->flags(e);
    if (gloo_in_trace_) {
      const bool work = !(f & kNameStep) && item.dur > 0;
      if (work && !(f & kNameGloo) && !gloo_ends_.empty() && !inside) wait_for_gloo(clock, item.ts, model.pid[e]);
      if (work) clock.last_end = std::max(clock.last_end, item.ts + item.dur);
      if (f & kNameHandOver) clock.handed_over = std::min(clock.handed_over, item.ts);
    }
    if (top_level) clock.last_top_end = std::max(clock.last_top_end, item.ts + item.dur);
    const std::int64_t start_new = clock.map(item.ts);
    const std::int64_t end = item.ts + item.dur;
    if ((f & kNameGloo) && !inside)
      gloo_ends_.push_back(
          {item.ts, end, changes_.remove_exposed_communication ? start_new : start_new + item.dur, model.pid[e]});

    // The GPU work this call launched.
    bool launched = false, pageable_upload = false;
    if (is_launch_api(k) && model.correlation[e] != kNoId)
      std::tie(launched, pageable_upload) = retime_launched(n, e, start_new);
    if (inside || item.dur <= 0 || (f & kNameStep)) return;
    if (changes_.pin_pageable_uploads && !(f & kNameSyncOp) &&
        pin_upload(clock, item, f, parent, start_new, pageable_upload))
      return;
    if (sync_call(clock, item, f, launched, start_new)) return;
    change_own_time(clock, item, f, start_new);
  }

  // Pinned and non_blocking: the copy call returns once issued (an async launch's host time), and
  // the stream sync its operator made after it (PyTorch's blocking `.to()`) goes.
  bool pin_upload(ThreadClock& clock, const SweepItem& item, std::uint16_t f, EventIndex parent, std::int64_t start_new,
                  bool pageable_upload) {
    const bool sync_after_upload =
        (f & kNameSyncCall) && !(f & kNameSyncCopy) && parent != kNoEvent && pinned_ops_.count(parent) > 0;
    if (!((pageable_upload && !(f & kNameSyncCopy)) || sync_after_upload)) return false;
    if (pageable_upload && parent != kNoEvent) pinned_ops_.insert(parent);
    ++result_.touched.pageable_uploads;
    const std::int64_t end = item.ts + item.dur;
    if (sync_after_upload) {
      clock.begin(item.ts, start_new, end, start_new, true);
      result_.syncs.push_back({item.event, start_new, start_new, kNoNode});
    } else {
      clock.begin(item.ts, start_new, end, start_new + std::min(item.dur, kAsyncCopyCallNs), false);
    }
    return true;
  }

  // A synchronising call (or a blocking copy, or a launch held by a full queue): it returns after
  // the GPU work it waited for, unless a change removes the sync. False for any other span.
  bool sync_call(ThreadClock& clock, const SweepItem& item, std::uint16_t f, bool launched, std::int64_t start_new) {
    const EventIndex e = item.event;
    const std::int64_t end = item.ts + item.dur;
    const bool copy_sync = (f & kNameCopyLaunch) && launched && item.dur >= kSyncCopyMinWaitNs &&
                           result_.gpu.back().launch == e && model_.end_ns(result_.gpu.back().event) <= end;
    // A launch held by a full device queue waits for the device as a sync does (causality.h); no
    // removal of a sync or a launch takes that wait away, only a device that runs faster.
    const bool queue_blocked = (f & kNameLaunch) && launched && result_.gpu.back().launch == e &&
                               is_queue_blocked_launch(item.dur, end, model_.ts_ns[result_.gpu.back().event]);
    if (!(f & (kNameSyncCall | kNameSyncOp)) && !copy_sync && !queue_blocked) return false;
    if (!queue_blocked &&
        (changes_.remove_host_sync || (changes_.remove_sync_copies && ((f & kNameSyncCopy) || copy_sync)))) {
      ++result_.touched.host_syncs;
      clock.begin(item.ts, start_new, end, start_new, true);
      result_.syncs.push_back({e, start_new, start_new, kNoNode});
      return true;
    }
    // Returns after the GPU work launched before it that ended by its end, plus its tail.
    std::int64_t waited_end = INT64_MIN, waited_new = 0;
    std::uint32_t waited_node = kNoNode;
    for (const auto& [key, st] : streams_) {
      const std::int64_t j = waited_on(st, end);
      if (j < 0 || st.end[j] <= waited_end) continue;
      waited_end = st.end[j];
      waited_new = st.end_new[j];
      waited_node = st.node[j];
    }
    std::int64_t end_new = start_new + item.dur;
    std::uint32_t bound = kNoNode;
    if (waited_node != kNoNode && waited_end > item.ts) {
      const std::int64_t tail = std::max<std::int64_t>(0, end - waited_end);
      end_new = start_new + std::min(tail, item.dur);
      if (waited_new + tail > end_new) {
        end_new = waited_new + tail;
        bound = waited_node;
      }
    }
    clock.begin(item.ts, start_new, end, end_new, true);
    result_.syncs.push_back({e, start_new, end_new, bound});
    return true;
  }

  // A change to this span's own time (the outermost one on its thread): a removal, a speedup, or,
  // with the host's overhead removed, what a captured graph's replay still leaves the host.
  void change_own_time(ThreadClock& clock, const SweepItem& item, std::uint16_t f, std::int64_t start_new) {
    const EventIndex e = item.event;
    const EventKind k = model_.kind[e];
    const std::int64_t end = item.ts + item.dur;
    double factor = 1;
    if ((f & kNameLoader) && changes_.remove_dataloader) {
      ++result_.touched.dataloader_spans;
      factor = 0;
    } else if ((f & kNameLaunch) && changes_.remove_launch_overhead) {
      ++result_.touched.launch_calls;
      factor = 0;
    } else if ((f & kNameGloo) && changes_.remove_exposed_communication) {
      ++result_.touched.communication;
      factor = 0;
    } else if (!changes_.speedups.empty() && !launches_gpu_[e]) {
      // Host time: CPU ops for `--speedup`; runtime calls too when a fix names them (allocator calls).
      using Scope = RetimeChanges::Speedup::Scope;
      int s = -1;
      for (std::size_t i = 0; i < changes_.speedups.size() && s < 0; ++i) {
        const RetimeChanges::Speedup& sp = changes_.speedups[i];
        if (sp.events && sp.scope == Scope::kHost && std::binary_search(sp.events->begin(), sp.events->end(), e))
          s = static_cast<int>(i);
      }
      if (s < 0) s = names_->speedup(e);
      const Scope scope = s >= 0 ? changes_.speedups[static_cast<std::size_t>(s)].scope : Scope::kDevice;
      if (scope == Scope::kHost || (scope == Scope::kAny && !is_launch_api(k))) {
        ++result_.touched.speedup_events[s];
        factor = 1.0 / changes_.speedups[s].factor;
      }
    }
    if (factor != 1) {
      const std::int64_t end_new = start_new + std::llround(static_cast<double>(item.dur) * factor);
      clock.begin(item.ts, start_new, end, end_new, false);
      return;
    }
    if (!clock.held) return;
    // What a captured graph's replay still leaves the host: DataLoader waits, collectives run on
    // the host, and outermost operators (called from Python, not from another operator) or
    // annotations that launch no device work: CPU computation, which a graph of device work does
    // not replay. Everything else issues its work at no cost.
    bool outermost = true;
    for (EventIndex p = rel_.parent[e]; p != kNoEvent && outermost; p = rel_.parent[p])
      outermost = model_.kind[p] != EventKind::kCpuOp;
    const bool cpu_work = outermost && (k == EventKind::kCpuOp || k == EventKind::kUserAnnotation) && !launches_gpu_[e];
    if ((f & (kNameLoader | kNameGloo)) || cpu_work) {
      clock.begin(item.ts, start_new, end, start_new + item.dur, false);
    } else if (outermost && (k == EventKind::kCpuOp || is_launch_api(k))) {
      ++result_.touched.host_overhead_spans;
    }
  }

  // Each step: from the later of its re-timed host start and the previous step's end, to the
  // later of its re-timed host end and its last GPU work.
  void finish_steps() {
    for (std::size_t s = 0; s < result_.steps.size(); ++s) {
      RetimedStep& r = result_.steps[s];
      if (ctx_.has_steps) {
        r.cpu_end_ns = points_[spans_[s].end_point].mapped;
        if (s > 0) r.start_ns = std::max(points_[spans_[s].start_point].mapped, result_.steps[s - 1].end_ns);
      } else {
        r.cpu_end_ns = r.start_ns;
        for (const Point& p : points_) r.cpu_end_ns = std::max(r.cpu_end_ns, p.mapped);
        if (r.cpu_end_ns == r.start_ns) r.cpu_end_ns = ctx_.window_end_ns;  // no host spans: GPU only
      }
      r.end_ns = std::max({r.cpu_end_ns, step_gpu_end_[s], r.start_ns});
    }
  }

  const TraceModel& model_;
  const AnalysisContext& ctx_;
  const RetimeChanges& changes_;
  const Relations& rel_;
  const std::vector<const RetimeChanges::Speedup*> python_speedups_;
  const StepGraphOrder* const order_;
  StepGraphOrder* const order_out_;
  // The training loop's thread: the one holding the steps.
  const bool has_main_;
  const std::uint64_t main_thread_;
  RetimeResult result_;
  std::optional<Names> names_;
  std::vector<Point> points_;
  std::vector<StepSpan> spans_;
  std::int64_t lo_ = 0, hi_ = 0;
  std::vector<bool> launches_gpu_;
  std::vector<SweepItem> items_;
  std::vector<std::uint32_t>* launch_slots_out_ = nullptr;  // filled when this call builds the order
  bool ordered_ = false;
  std::vector<Interval> compute_busy_;
  std::unordered_map<std::uint64_t, ThreadClock> clocks_;
  std::uint64_t last_thread_ = 0;
  ThreadClock* last_clock_ = nullptr;
  std::unordered_set<EventIndex> pinned_ops_;  // operators whose pageable upload was pinned
  std::vector<GlooEnd> gloo_ends_;
  // Whether the trace names any gloo collective (interned names: one look at each): the waits on
  // them are only tracked then, off the sweep's hot path otherwise.
  bool gloo_in_trace_ = false;
  int handovers_recorded_ = -1;
  std::unordered_map<std::uint64_t, StreamState> streams_;
  std::vector<std::int64_t> step_gpu_end_;
};

}  // namespace

RetimeResult retime_steps(const TraceModel& model, const AnalysisContext& ctx, const RetimeChanges& changes,
                          const StepGraphOrder* order, StepGraphOrder* order_out) {
  return StepRetimer(model, ctx, changes, order, order_out).run();
}

}  // namespace ferret
