#include "analysis/causal/step_graph.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include "analysis/causal/causality.h"
#include "analysis/causal/host_blockers.h"
#include "analysis/classify.h"
#include "analysis/device/hardware.h"
#include "analysis/intervals.h"
#include "base/text.h"
#include "model/relations.h"

namespace ferret {

namespace {

// Per-name facts, memoised by interned name (names repeat millions of times).
enum StepNameFlag : std::uint16_t {
  kNameKnown = 1,
  kNameSyncCall = 2,           // *Synchronize, synchronous memcpy/memset calls
  kNameSyncOp = 4,             // aten::item, aten::_local_scalar_dense
  kNameLaunch = 8,             // kernel / graph launches, async copies and fills
  kNameLoader = 16,            // enumerate(DataLoader)#...
  kNameGloo = 32,              // gloo collectives: communication run on the host
  kNameStep = 64,              // ProfilerStep#N
  kNameCopyLaunch = 128,       // an async copy launch (may block: a copy to pageable memory)
  kNameSyncCopy = 256,         // a synchronous memcpy / memset call
  kNameCommKernel = 512,       // an NCCL / RCCL communication kernel
  kNamePageableUpload = 1024,  // a host-to-device copy from pageable memory
  kNameHandOver = 2048,        // c10d::*: a thread handing a collective to its process group
};

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

// The host clock of one thread: original time -> re-timed time. Outside a changed region it is a
// shift; inside one (the outermost shortened span or synchronising call) a linear map.
// With the host's overhead removed (RetimeChanges::remove_host_overhead) time outside a region
// stops passing: the clock holds at the end of the latest region it kept.
// A thread woken by a collective's completion runs its next recorded operator within this: a
// condition variable's wake-up takes microseconds and the Python before the next operator tens to
// hundreds, but on a host whose cores the ranks share the woken thread waits for a core too (0.03
// to 11 ms on the project's two-rank DDP-over-gloo sample, recorded on two cores). ferret's bound.
constexpr std::int64_t kGlooWakeNs = 20'000'000;

struct ThreadClock {
  std::int64_t shift = 0;
  std::int64_t last_top_end = INT64_MIN;  // end of its latest top-level span
  std::int64_t last_end = INT64_MIN;      // end of its latest span of work (steps are not work)
  std::int64_t handed_over = INT64_MAX;   // start of its first c10d:: operator (a collective handed over)
  bool active = false;
  bool sync = false;            // the active region is a synchronising call
  bool held = false;            // time outside regions does not pass
  std::int64_t at = INT64_MIN;  // held: the re-timed time it stands at (INT64_MIN: not yet placed)
  std::int64_t a = 0, a_new = 0, until = 0, until_new = 0;
  double factor = 1;

  std::int64_t map(std::int64_t t) {
    if (active && t >= until) {
      shift = until_new - until;
      at = until_new;
      active = false;
    }
    if (!active && held) {
      if (at == INT64_MIN) at = t + shift;
      return at;
    }
    if (!active) return t + shift;
    if (sync) return std::min(a_new + (t - a), until_new);
    return a_new + std::llround(static_cast<double>(t - a) * factor);
  }
  void begin(std::int64_t start, std::int64_t start_new, std::int64_t end, std::int64_t end_new, bool is_sync) {
    active = true;
    sync = is_sync;
    a = start;
    a_new = start_new;
    until = end;
    until_new = end_new;
    factor = end > start ? static_cast<double>(end_new - start_new) / static_cast<double>(end - start) : 1.0;
  }
};

// One stream's re-timed history: original and re-timed ends in the order re-timed.
struct StreamState {
  std::vector<std::int64_t> end;
  std::vector<std::int64_t> end_new;
  std::vector<std::uint32_t> node;
};

struct SweepItem {
  std::int64_t ts;
  std::int64_t dur;
  EventIndex event;     // host span, unmatched GPU activity, or kNoEvent for a point
  std::uint32_t point;  // index into points when event == kNoEvent
};

struct Point {
  std::uint64_t thread;
  std::int64_t t;
  std::int64_t mapped = 0;
};

}  // namespace

bool is_graph_sync(const TraceModel& model, EventIndex e) {
  const std::string_view n = model.name_of(e);
  const EventKind k = model.kind[e];
  if (is_launch_api(k)) return is_host_sync_call(n) || is_sync_copy_call(n);
  return (k == EventKind::kCpuOp || k == EventKind::kUserAnnotation) && is_host_sync_op(n);
}

// NOLINTNEXTLINE(readability-function-size): over 120 lines from before the limit; split pending
RetimeResult retime_steps(const TraceModel& model, const AnalysisContext& ctx, const RetimeChanges& changes,
                          const StepGraphOrder* order, StepGraphOrder* order_out) {
  RetimeResult result;
  result.has_steps = ctx.has_steps;
  result.touched.speedup_events.assign(changes.speedups.size(), 0);
  const Relations& rel = model.relations;
  if (!rel.built) return result;
  // Python frames a fix takes off the host (host-preprocessing's): the sweep then holds them too,
  // so it cannot reuse an order made without them, nor hand one on.
  std::vector<const RetimeChanges::Speedup*> python_speedups;
  for (const RetimeChanges::Speedup& sp : changes.speedups)
    if (sp.events && sp.scope == RetimeChanges::Speedup::Scope::kHost && !sp.events->empty() &&
        model.kind[sp.events->front()] == EventKind::kPythonFunction)
      python_speedups.push_back(&sp);
  if (!python_speedups.empty()) order = order_out = nullptr;
  auto python_selected = [&](EventIndex e) {
    for (const RetimeChanges::Speedup* sp : python_speedups)
      if (std::binary_search(sp->events->begin(), sp->events->end(), e)) return true;
    return false;
  };
  static const std::vector<std::uint16_t> kNoFlags;
  Names names(model, changes, order != nullptr && order->built ? order->name_flags : kNoFlags);

  // The steps, with the host span each one re-times from.
  std::vector<Point> points;
  struct StepSpan {
    std::int64_t cpu_start, cpu_end;
    std::uint32_t start_point, end_point;
  };
  std::vector<StepSpan> spans;
  if (ctx.has_steps) {
    for (const Step& s : ctx.steps) {
      RetimedStep r;
      r.number = s.number;
      r.event = s.event;
      const std::uint64_t th = thread_key(model.pid[s.event], model.tid[s.event]);
      spans.push_back({model.ts_ns[s.event], s.cpu_end_ns, static_cast<std::uint32_t>(points.size()),
                       static_cast<std::uint32_t>(points.size() + 1)});
      points.push_back({th, model.ts_ns[s.event]});
      points.push_back({th, s.cpu_end_ns});
      r.start_ns = s.start_ns;
      result.steps.push_back(r);
    }
  } else if (ctx.window_ns() > 0) {
    RetimedStep r;
    r.start_ns = ctx.window_start_ns;
    result.steps.push_back(r);
    spans.push_back({ctx.window_start_ns, ctx.window_end_ns, kNoNode, kNoNode});
  }
  if (result.steps.empty()) return result;
  const std::int64_t lo = std::min(spans.front().cpu_start, result.steps.front().start_ns);
  const std::int64_t hi = ctx.has_steps ? spans.back().cpu_end : ctx.window_end_ns;
  auto step_of_host_time = [&](std::int64_t t) -> std::int32_t {
    auto it = std::upper_bound(spans.begin(), spans.end(), t,
                               [](std::int64_t v, const StepSpan& s) { return v < s.cpu_start; });
    if (it == spans.begin()) return -1;
    --it;
    return (t < it->cpu_end || (!ctx.has_steps && t <= it->cpu_end)) ? static_cast<std::int32_t>(it - spans.begin())
                                                                     : -1;
  };

  // Host spans under which GPU work was launched: a speedup of such an op scales its kernels, not
  // its host time (the host only issues them).
  std::vector<bool> launches_gpu(model.size(), false);
  if (!changes.speedups.empty() || changes.remove_host_overhead) {
    for (std::size_t i = 0; i < rel.launches.size(); ++i) {
      if (rel.launch_gpu_begin[i] == rel.launch_gpu_begin[i + 1]) continue;
      for (EventIndex p = rel.launches[i]; p != kNoEvent && !launches_gpu[p]; p = rel.parent[p]) launches_gpu[p] = true;
    }
  }

  // The sweep: host spans starting in the window, GPU activities without a launch call in it, and
  // the points whose re-timed time the steps need.
  std::vector<SweepItem> items;
  std::vector<std::uint32_t>* launch_slots_out = nullptr;  // filled when this call builds the order
  if (order != nullptr && order->built) {
    points.clear();
    for (std::size_t p = 0; p < order->point_threads.size(); ++p)
      points.push_back({order->point_threads[p], order->point_times[p]});
  }
  std::unordered_map<std::uint64_t, std::uint32_t> last_end_point;
  for (std::size_t i = 0; (order == nullptr || !order->built) && i < model.size(); ++i) {
    const EventIndex e = static_cast<EventIndex>(i);
    const EventKind k = model.kind[e];
    if (model.phase[e] != 'X') continue;
    const std::int64_t ts = model.ts_ns[e];
    if (ts < lo || ts >= hi + (ctx.has_steps ? 0 : 1)) continue;
    if (k == EventKind::kCpuOp || k == EventKind::kUserAnnotation || is_launch_api(k)) {
      items.push_back({ts, model.dur_ns[e], e, 0});
      if (!ctx.has_steps) {
        const std::uint64_t th = thread_key(model.pid[e], model.tid[e]);
        auto [it, fresh] = last_end_point.try_emplace(th, static_cast<std::uint32_t>(points.size()));
        if (fresh) points.push_back({th, model.end_ns(e)});
        points[it->second].t = std::max(points[it->second].t, model.end_ns(e));
      }
    } else if (k == EventKind::kPythonFunction && !python_speedups.empty() && python_selected(e)) {
      items.push_back({ts, model.dur_ns[e], e, 0});
    } else if (is_gpu_activity(k) && k != EventKind::kCudaEvent && k != EventKind::kGpuUserAnnotation) {
      if (!ctx.counts_gpu_event(model, e)) continue;
      const EventIndex launch = rel.launcher_of(e);
      if (launch == kNoEvent || model.ts_ns[launch] < lo || model.ts_ns[launch] >= hi)
        items.push_back({ts, model.dur_ns[e], e, 0});
    }
  }
  if (order == nullptr || !order->built) {
    for (std::uint32_t p = 0; p < points.size(); ++p) items.push_back({points[p].t, -1, kNoEvent, p});
    // Time order; at one instant points first (a step's end before the next step's start), then
    // parents before their children (longer first), then file order.
    std::sort(items.begin(), items.end(), [](const SweepItem& a, const SweepItem& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if ((a.event == kNoEvent) != (b.event == kNoEvent)) return a.event == kNoEvent;
      if (a.dur != b.dur) return a.dur > b.dur;
      return a.event == kNoEvent ? a.point < b.point : a.event < b.event;
    });
    if (order_out != nullptr && model.size() < StepGraphOrder::kPointItem) {
      order_out->built = true;
      order_out->point_threads.clear();
      order_out->point_times.clear();
      for (const Point& p : points) {
        order_out->point_threads.push_back(p.thread);
        order_out->point_times.push_back(p.t);
      }
      order_out->items.resize(items.size());
      for (std::size_t k = 0; k < items.size(); ++k)
        order_out->items[k] =
            items[k].event == kNoEvent ? (StepGraphOrder::kPointItem | items[k].point) : items[k].event;
      order_out->launch_slots.assign(items.size(), StepGraphOrder::kNoLaunch);
      launch_slots_out = &order_out->launch_slots;
    }
  }
  const bool ordered = order != nullptr && order->built;
  const std::size_t item_count = ordered ? order->items.size() : items.size();
  auto item_at = [&](std::size_t k) -> SweepItem {
    if (!ordered) return items[k];
    const std::uint32_t v = order->items[k];
    if (v & StepGraphOrder::kPointItem) {
      const std::uint32_t p = v & ~StepGraphOrder::kPointItem;
      return {points[p].t, -1, kNoEvent, p};
    }
    return {model.ts_ns[v], model.dur_ns[v], v, 0};
  };

  // Compute kernels' busy time, for the exposed part of communication kernels.
  std::vector<Interval> compute_busy;
  if (changes.remove_exposed_communication) {
    for (EventIndex e : rel.gpu_events)
      if (model.kind[e] == EventKind::kKernel && !(names.flags(e) & kNameCommKernel) && ctx.counts_gpu_event(model, e))
        compute_busy.push_back({model.ts_ns[e], model.end_ns(e)});
    merge_intervals(compute_busy);
  }

  std::unordered_map<std::uint64_t, ThreadClock> clocks;
  std::unordered_set<EventIndex> pinned_ops;  // operators whose pageable upload was pinned
  // gloo collectives swept so far: original start and end, re-timed end, process. A thread of that
  // process that hands collectives over (c10d::), and did before one started, and resumes (or
  // ends its step) within kGlooWakeNs of its end, idle since before that end, was waiting for it.
  struct GlooEnd {
    std::int64_t start, end, end_new;
    std::int32_t pid;
  };
  std::vector<GlooEnd> gloo_ends;
  // Whether the trace names any gloo collective (interned names: one look at each): the waits on
  // them are only tracked then, off the sweep's hot path otherwise.
  bool gloo_in_trace = false;
  for (std::size_t id = 0; id < model.strings.size() && !gloo_in_trace; ++id)
    gloo_in_trace = model.strings.view(static_cast<StrId>(id)).starts_with("gloo:");
  // Whether the trace records hand-overs at all (c10d:: operators): a recording without them
  // (operators left out) cannot say which thread handed a collective over, so any idle thread of
  // the process may have waited.
  // Looked up once, when the first gloo collective is swept (most traces have none).
  int handovers_recorded = -1;
  auto hand_overs_recorded = [&] {
    if (handovers_recorded < 0) {
      handovers_recorded = 0;
      for (std::size_t id = 0; id < model.strings.size() && handovers_recorded == 0; ++id)
        handovers_recorded = model.strings.view(static_cast<StrId>(id)).starts_with("c10d::") ? 1 : 0;
    }
    return handovers_recorded == 1;
  };
  // DDP on CPU tensors: the training thread ends backward, then waits (in no operator) for its
  // buckets' gloo all-reduce; it resumes when the latest collective it waited for ends. Re-timed,
  // it resumes when both its own previous work and that collective's re-timed end allow.
  auto wait_for_gloo = [&](ThreadClock& clock, std::int64_t ts, std::int32_t pid) {
    // The sweep runs in start order: a collective that ended over kGlooWakeNs ago wakes no one now.
    std::erase_if(gloo_ends, [&](const GlooEnd& g) { return ts - g.end > kGlooWakeNs; });
    const GlooEnd* waited = nullptr;
    for (auto it = gloo_ends.rbegin(); it != gloo_ends.rend(); ++it) {
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
  };
  auto clock_of = [&](std::uint64_t thread) -> ThreadClock& {
    auto [it, fresh] = clocks.try_emplace(thread);
    if (fresh) it->second.held = changes.remove_host_overhead;
    return it->second;
  };
  // The training loop's thread: the one holding the steps.
  const bool has_main = ctx.has_steps;
  const std::uint64_t main_thread =
      has_main ? thread_key(model.pid[ctx.steps.front().event], model.tid[ctx.steps.front().event]) : 0;
  std::unordered_map<std::uint64_t, StreamState> streams;
  std::vector<std::int64_t> step_gpu_end(result.steps.size(), INT64_MIN);

  // Scaled duration of a GPU activity.
  auto gpu_duration = [&](EventIndex g, EventIndex launch) -> std::int64_t {
    const std::int64_t dur = model.dur_ns[g];
    if (model.kind[g] == EventKind::kKernel && changes.remove_exposed_communication &&
        (names.flags(g) & kNameCommKernel)) {
      ++result.touched.communication;
      return covered_length(compute_busy, model.ts_ns[g], model.end_ns(g));
    }
    if (changes.speedups.empty()) return dur;
    for (std::size_t i = 0; i < changes.speedups.size(); ++i) {
      const RetimeChanges::Speedup& sp = changes.speedups[i];
      if (sp.events && std::binary_search(sp.events->begin(), sp.events->end(), g)) {
        ++result.touched.speedup_events[i];
        return std::llround(static_cast<double>(dur) / sp.factor);
      }
    }
    using Scope = RetimeChanges::Speedup::Scope;
    auto device_scope = [&](int i) {
      return i >= 0 && changes.speedups[static_cast<std::size_t>(i)].scope != Scope::kHost;
    };
    int s = names.speedup(g);
    if (!device_scope(s) || !names.kernel_kept(g, s)) s = -1;
    for (EventIndex p = launch; s < 0 && p != kNoEvent; p = rel.parent[p]) {
      const int by_op = names.speedup(p);
      if (device_scope(by_op) && names.kernel_kept(g, by_op)) s = by_op;
    }
    if (s < 0) return dur;
    ++result.touched.speedup_events[s];
    return std::llround(static_cast<double>(dur) / changes.speedups[s].factor);
  };

  // The node on each stream whose original end is the latest at or before `t` (+ slack).
  auto waited_on = [&](const StreamState& st, std::int64_t t) -> std::int64_t {
    auto it = std::upper_bound(st.end.begin(), st.end.end(), t + kSyncSlackNs);
    return it == st.end.begin() ? -1 : static_cast<std::int64_t>(it - st.end.begin()) - 1;
  };

  auto retime_gpu = [&](EventIndex g, EventIndex launch, std::int64_t launch_new) {
    GpuNode node;
    node.event = g;
    node.launch = launch;
    const std::int64_t start = model.ts_ns[g];
    const std::int64_t end = model.end_ns(g);
    StreamState& st = streams[thread_key(model.pid[g], model.tid[g])];
    const bool has_prev = !st.end.empty();
    const std::int64_t gap = has_prev ? start - st.end.back() : INT64_MAX;
    std::int64_t stream_ready = INT64_MIN;
    if (has_prev) stream_ready = st.end_new.back() + std::min(gap, kBackToBackGapNs);
    std::int64_t launch_ready = INT64_MIN;
    if (launch != kNoEvent) {
      const std::int64_t latency = start - model.ts_ns[launch];
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
    if (launch != kNoEvent && gap > kBackToBackGapNs && start - model.ts_ns[launch] > kUntracedQueueNs) {
      std::int64_t waited_end = INT64_MIN, waited_new = 0;
      for (const auto& [key, other] : streams) {
        if (&other == &st || static_cast<std::int32_t>(key >> 32) != model.pid[g]) continue;
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
        if (changes.remove_device_stalls) {
          stream_ready = st.end_new.back() + kBackToBackGapNs;
          ++result.touched.device_stalls;
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
    node.end_ns = node.start_ns + gpu_duration(g, launch);
    if (model.kind[g] == EventKind::kSync && end > start) {
      // A GPU-side wait ends when the work it waited for on another stream ends: the latest
      // other-stream activity that ended within it.
      std::int64_t waited_end = INT64_MIN, waited_new = 0;
      std::uint32_t waited_node = kNoNode;
      for (const auto& [key, other] : streams) {
        if (&other == &st) continue;
        const std::int64_t j = waited_on(other, end);
        if (j < 0 || other.end[j] <= start || other.end[j] <= waited_end) continue;
        waited_end = other.end[j];
        waited_new = other.end_new[j];
        waited_node = other.node[j];
      }
      if (waited_node != kNoNode) {
        const std::int64_t tail = std::max<std::int64_t>(0, end - waited_end);
        if (waited_new + tail > node.start_ns) {
          node.end_ns = waited_new + tail;
          node.binding = GpuBinding::kWait;
          node.previous = waited_node;
        } else {
          node.end_ns = node.start_ns;
        }
      }
    }
    node.step = launch != kNoEvent ? step_of_host_time(model.ts_ns[launch]) : -1;
    if (launch == kNoEvent && ctx.has_steps) {
      // The step whose window holds its start (steps are in time order and do not overlap).
      auto it = std::upper_bound(ctx.steps.begin(), ctx.steps.end(), start,
                                 [](std::int64_t v, const Step& s) { return v < s.start_ns; });
      if (it != ctx.steps.begin() && start < std::prev(it)->end_ns)
        node.step = static_cast<std::int32_t>(std::prev(it) - ctx.steps.begin());
    } else if (launch == kNoEvent) {
      node.step = 0;
    }
    const std::uint32_t id = static_cast<std::uint32_t>(result.gpu.size());
    if (node.step >= 0 && node.end_ns > step_gpu_end[node.step]) {
      step_gpu_end[node.step] = node.end_ns;
      result.steps[node.step].last_gpu = id;
    }
    // Keep the stream's history ordered by original end (activities arrive in launch order,
    // which is the stream's order but for rare cross-thread launches).
    if (!st.end.empty() && end < st.end.back()) {
      result.gpu.push_back(node);
      return;
    }
    st.end.push_back(end);
    st.end_new.push_back(node.end_ns);
    st.node.push_back(id);
    result.gpu.push_back(node);
  };

  for (std::size_t n = 0; n < item_count; ++n) {
    const SweepItem item = item_at(n);
    if (item.event == kNoEvent) {
      Point& p = points[item.point];
      ThreadClock& clock = clock_of(p.thread);
      // A step that ends right after a collective it waited for (nothing recorded after the wait).
      if (!gloo_ends.empty() && !(clock.active && p.t < clock.until))
        wait_for_gloo(clock, p.t, static_cast<std::int32_t>(p.thread >> 32));
      p.mapped = clock.map(p.t);
      continue;
    }
    const EventIndex e = item.event;
    const EventKind k = model.kind[e];
    if (is_gpu_activity(k)) {
      retime_gpu(e, kNoEvent, 0);
      continue;
    }
    const std::uint64_t key = thread_key(model.pid[e], model.tid[e]);
    ThreadClock& clock = clock_of(key);  // node-based map: the reference outlives inserts
    const bool inside = clock.active && item.ts < clock.until;
    const EventIndex parent = rel.parent[e];
    const bool top_level = parent == kNoEvent || model.kind[parent] == EventKind::kPythonFunction;
    if (top_level && has_main && key != main_thread && !inside) {
      // Another thread's work (the autograd engine's backward, a pin-memory thread) is started by
      // the training loop: it starts as much earlier or later as the loop's thread, but not
      // before its own previous work ends.
      clock.map(item.ts);
      const std::int64_t via_main = clock_of(main_thread).map(item.ts);
      if (clock.held) {
        // Where its previous work left it, once it has done any.
        clock.at = std::max(via_main, clock.last_top_end == INT64_MIN ? INT64_MIN : clock.at);
      } else {
        const std::int64_t own_floor = clock.last_top_end == INT64_MIN ? INT64_MIN : clock.last_top_end + clock.shift;
        clock.shift = std::max(via_main, own_floor) - item.ts;
      }
    }
    const std::uint16_t f = names.flags(e);
    if (gloo_in_trace) {
      const bool work = !(f & kNameStep) && item.dur > 0;
      if (work && !(f & kNameGloo) && !gloo_ends.empty() && !inside) wait_for_gloo(clock, item.ts, model.pid[e]);
      if (work) clock.last_end = std::max(clock.last_end, item.ts + item.dur);
      if (f & kNameHandOver) clock.handed_over = std::min(clock.handed_over, item.ts);
    }
    if (top_level) clock.last_top_end = std::max(clock.last_top_end, item.ts + item.dur);
    const std::int64_t start_new = clock.map(item.ts);
    const std::int64_t end = item.ts + item.dur;
    if ((f & kNameGloo) && !inside)
      gloo_ends.push_back(
          {item.ts, end, changes.remove_exposed_communication ? start_new : start_new + item.dur, model.pid[e]});

    // The GPU work this call launched.
    bool launched = false, pageable_upload = false;
    if (is_launch_api(k) && model.correlation[e] != kNoId) {
      std::uint32_t slot = StepGraphOrder::kNoLaunch;
      if (ordered) {
        slot = order->launch_slots[n];
      } else {
        auto it = std::lower_bound(rel.launches.begin(), rel.launches.end(), e);
        if (it != rel.launches.end() && *it == e) slot = static_cast<std::uint32_t>(it - rel.launches.begin());
      }
      if (launch_slots_out != nullptr) (*launch_slots_out)[n] = slot;
      if (slot != StepGraphOrder::kNoLaunch) {
        const std::size_t li = slot;
        for (std::uint32_t j = rel.launch_gpu_begin[li]; j < rel.launch_gpu_begin[li + 1]; ++j) {
          const EventIndex g = rel.launch_gpu[j];
          if (!ctx.counts_gpu_event(model, g) || model.kind[g] == EventKind::kCudaEvent ||
              model.kind[g] == EventKind::kGpuUserAnnotation)
            continue;
          retime_gpu(g, e, start_new);
          launched = true;
          pageable_upload = pageable_upload || (names.flags(g) & kNamePageableUpload);
        }
      }
    }
    if (inside || item.dur <= 0 || (f & kNameStep)) continue;

    // Pinned and non_blocking: the copy call returns once issued (an async launch's host time), and
    // the stream sync its operator made after it (PyTorch's blocking `.to()`) goes.
    if (changes.pin_pageable_uploads && !(f & kNameSyncOp)) {
      const bool sync_after_upload =
          (f & kNameSyncCall) && !(f & kNameSyncCopy) && parent != kNoEvent && pinned_ops.count(parent) > 0;
      if ((pageable_upload && !(f & kNameSyncCopy)) || sync_after_upload) {
        if (pageable_upload && parent != kNoEvent) pinned_ops.insert(parent);
        ++result.touched.pageable_uploads;
        if (sync_after_upload) {
          clock.begin(item.ts, start_new, end, start_new, true);
          result.syncs.push_back({e, start_new, start_new, kNoNode});
        } else {
          clock.begin(item.ts, start_new, end, start_new + std::min(item.dur, kAsyncCopyCallNs), false);
        }
        continue;
      }
    }

    // A change to this span's own time: the outermost one on its thread.
    const bool copy_sync = (f & kNameCopyLaunch) && launched && item.dur >= kSyncCopyMinWaitNs &&
                           result.gpu.back().launch == e && model.end_ns(result.gpu.back().event) <= end;
    // A launch held by a full device queue waits for the device as a sync does (causality.h); no
    // removal of a sync or a launch takes that wait away, only a device that runs faster.
    const bool queue_blocked = (f & kNameLaunch) && launched && result.gpu.back().launch == e &&
                               is_queue_blocked_launch(item.dur, end, model.ts_ns[result.gpu.back().event]);
    if ((f & (kNameSyncCall | kNameSyncOp)) || copy_sync || queue_blocked) {
      if (!queue_blocked &&
          (changes.remove_host_sync || (changes.remove_sync_copies && ((f & kNameSyncCopy) || copy_sync)))) {
        ++result.touched.host_syncs;
        clock.begin(item.ts, start_new, end, start_new, true);
        result.syncs.push_back({e, start_new, start_new, kNoNode});
        continue;
      }
      // Returns after the GPU work launched before it that ended by its end, plus its tail.
      std::int64_t waited_end = INT64_MIN, waited_new = 0;
      std::uint32_t waited_node = kNoNode;
      for (const auto& [key, st] : streams) {
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
      result.syncs.push_back({e, start_new, end_new, bound});
      continue;
    }
    double factor = 1;
    if ((f & kNameLoader) && changes.remove_dataloader) {
      ++result.touched.dataloader_spans;
      factor = 0;
    } else if ((f & kNameLaunch) && changes.remove_launch_overhead) {
      ++result.touched.launch_calls;
      factor = 0;
    } else if ((f & kNameGloo) && changes.remove_exposed_communication) {
      ++result.touched.communication;
      factor = 0;
    } else if (!changes.speedups.empty() && !launches_gpu[e]) {
      // Host time: CPU ops for `--speedup`; runtime calls too when a fix names them (allocator calls).
      using Scope = RetimeChanges::Speedup::Scope;
      int s = -1;
      for (std::size_t i = 0; i < changes.speedups.size() && s < 0; ++i) {
        const RetimeChanges::Speedup& sp = changes.speedups[i];
        if (sp.events && sp.scope == Scope::kHost && std::binary_search(sp.events->begin(), sp.events->end(), e))
          s = static_cast<int>(i);
      }
      if (s < 0) s = names.speedup(e);
      const Scope scope = s >= 0 ? changes.speedups[static_cast<std::size_t>(s)].scope : Scope::kDevice;
      if (scope == Scope::kHost || (scope == Scope::kAny && !is_launch_api(k))) {
        ++result.touched.speedup_events[s];
        factor = 1.0 / changes.speedups[s].factor;
      }
    }
    if (factor != 1) {
      const std::int64_t end_new = start_new + std::llround(static_cast<double>(item.dur) * factor);
      clock.begin(item.ts, start_new, end, end_new, false);
    } else if (clock.held) {
      // What a captured graph's replay still leaves the host: DataLoader waits, collectives run on
      // the host, and outermost operators (called from Python, not from another operator) or
      // annotations that launch no device work: CPU computation, which a graph of device work does
      // not replay. Everything else issues its work at no cost.
      bool outermost = true;
      for (EventIndex p = parent; p != kNoEvent && outermost; p = rel.parent[p])
        outermost = model.kind[p] != EventKind::kCpuOp;
      const bool cpu_work =
          outermost && (k == EventKind::kCpuOp || k == EventKind::kUserAnnotation) && !launches_gpu[e];
      if ((f & (kNameLoader | kNameGloo)) || cpu_work) {
        clock.begin(item.ts, start_new, end, start_new + item.dur, false);
      } else if (outermost && (k == EventKind::kCpuOp || is_launch_api(k))) {
        ++result.touched.host_overhead_spans;
      }
    }
  }

  // Each step: from the later of its re-timed host start and the previous step's end, to the
  // later of its re-timed host end and its last GPU work.
  for (std::size_t s = 0; s < result.steps.size(); ++s) {
    RetimedStep& r = result.steps[s];
    if (ctx.has_steps) {
      r.cpu_end_ns = points[spans[s].end_point].mapped;
      if (s > 0) r.start_ns = std::max(points[spans[s].start_point].mapped, result.steps[s - 1].end_ns);
    } else {
      r.cpu_end_ns = r.start_ns;
      for (const Point& p : points) r.cpu_end_ns = std::max(r.cpu_end_ns, p.mapped);
      if (r.cpu_end_ns == r.start_ns) r.cpu_end_ns = ctx.window_end_ns;  // no host spans: GPU only
    }
    r.end_ns = std::max({r.cpu_end_ns, step_gpu_end[s], r.start_ns});
  }
  if (launch_slots_out != nullptr) order_out->name_flags = names.take_flags();
  return result;
}

}  // namespace ferret
