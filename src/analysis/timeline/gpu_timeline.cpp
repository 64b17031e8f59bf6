#include "analysis/timeline/gpu_timeline.h"

#include "base/statistics.h"
#include "base/text.h"

#include <algorithm>
#include <array>
#include <limits>
#include <span>

#include "analysis/classify.h"
#include "analysis/intervals.h"
#include "model/relations.h"

namespace ferret {

namespace {

enum TypeBit : std::uint8_t { kComputationBit = 1, kCommunicationBit = 2, kMemoryBit = 4 };
// HTA's definition only: a stream wait (cuda_sync on a stream) is busy, non-compute, and of no
// kernel type (HTA counts every event with a stream; its kernel types leave waits out).
constexpr std::uint8_t kStreamWait = 8;

// How a launch call counts in the launch statistics.
enum class LaunchClass : std::uint8_t { kNone, kCounted, kGraph };

struct Activity {
  std::int32_t device = 0;
  std::int32_t stream = 0;
  std::int64_t start = 0;  // as measured: clipped to the window (ferret) or rounded (HTA)
  std::int64_t end = 0;
  std::int64_t raw_start = 0;  // unclipped, for the launch delay
  std::int64_t raw_end = 0;
  std::int64_t launch_start = 0;  // of its launch call; meaningful when has_launcher
  std::int64_t launch_end = 0;
  EventIndex launcher = kNoEvent;
  std::uint8_t type = kComputationBit;
  LaunchClass launch_class = LaunchClass::kNone;
  bool in_window = true;  // raw start inside the window: counts in the launch statistics
  bool kernel = false;
  bool replayed = false;        // run by a graph launch (model/graphs.h)
  bool capture_record = false;  // carries a graph id but was not replayed: recorded at capture
};

// HTA rounds float microsecond timestamps inward (start up, end down) to whole microseconds, so
// that neighbouring events never overlap after float error (its trace_parser; PyTorch PR 122425).
std::int64_t ceil_us(std::int64_t ns) {
  const std::int64_t q = ns / 1000, r = ns % 1000;
  return (r > 0 ? q + 1 : q) * 1000;
}
std::int64_t floor_us(std::int64_t ns) {
  const std::int64_t q = ns / 1000, r = ns % 1000;
  return (r < 0 ? q - 1 : q) * 1000;
}

LaunchClass classify_launch(std::string_view name, TimelineDefinition definition) {
  if (definition == TimelineDefinition::kHta) {
    // HTA pairs only these names (its cuda_kernel_launch_stats); driver launches (cuLaunchKernel,
    // Triton) and every hip* call are left out.
    const bool listed = name == "cudaLaunchKernel" || name == "cudaLaunchKernelExC" || name == "cudaMemcpyAsync" ||
                        name == "cudaMemsetAsync";
    return listed ? LaunchClass::kCounted : LaunchClass::kNone;
  }
  if (contains(name, "GraphLaunch")) return LaunchClass::kGraph;
  // Kernel launches of every API (cudaLaunchKernel[ExC], cuLaunchKernel[Ex], hipLaunchKernel,
  // hipExtModuleLaunchKernel, cudaLaunchCooperativeKernel) and asynchronous copies and fills.
  // Synchronous copies (cudaMemcpy, hipMemcpyWithStream) return after the copy: their "delay"
  // would be negative and says nothing about launch latency.
  if (contains(name, "LaunchKernel") || contains(name, "LaunchCooperativeKernel")) return LaunchClass::kCounted;
  if ((contains(name, "Memcpy") || contains(name, "Memset")) && contains(name, "Async")) return LaunchClass::kCounted;
  return LaunchClass::kNone;
}

// Per-string caches: a trace has few distinct kernel and launch names, each looked up once.
class NameClasses {
 public:
  NameClasses(const TraceModel& model, TimelineDefinition definition)
      : model_(model), definition_(definition), type_(model.strings.size(), 0), launch_(model.strings.size(), 0xFF) {}

  std::uint8_t type_of(EventIndex e) {
    const EventKind kind = model_.kind[e];
    const StrId id = model_.name[e];
    if (definition_ == TimelineDefinition::kHta) {
      if (type_[id] == 0) type_[id] = hta_type(model_.strings.view(id));
      return type_[id];
    }
    if (kind == EventKind::kMemcpy || kind == EventKind::kMemset) return kMemoryBit;
    if (type_[id] == 0) {
      const std::string_view name = model_.strings.view(id);
      type_[id] = is_communication_kernel(name) ? kCommunicationBit : kComputationBit;
      // HTA (and Kineto on some back ends) name copies "Memcpy ..." / "Memset ..." even as kernels.
      if (type_[id] == kComputationBit && (contains(name, "Memcpy") || contains(name, "Memset")))
        type_[id] = kMemoryBit;
    }
    return type_[id];
  }

  // HTA's kernel types, by name alone (its utils: get_kernel_type): communication `^nccl.*Kernel`;
  // memory `^Memcpy`, `^Memset` or `^dma` (MTIA's DMA requests); computation anything that matches
  // none of `^nccl.*Kernel`, `.*Memcpy`, `^Memset`, `.*Sync`; the rest (waits: "Event Sync", a
  // Memcpy not at the start) is busy but no type. MTIA's event_wait and event_record are compute.
  static std::uint8_t hta_type(std::string_view name) {
    const bool nccl_kernel = name.starts_with("nccl") && name.find("Kernel", 4) != std::string_view::npos;
    if (nccl_kernel) return kCommunicationBit;
    if (name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma")) return kMemoryBit;
    if (contains(name, "Memcpy") || contains(name, "Sync")) return kStreamWait;
    return kComputationBit;
  }

  LaunchClass launch_of(EventIndex launcher) {
    const StrId id = model_.name[launcher];
    if (launch_[id] == 0xFF)
      launch_[id] = static_cast<std::uint8_t>(classify_launch(model_.strings.view(id), definition_));
    return static_cast<LaunchClass>(launch_[id]);
  }

 private:
  const TraceModel& model_;
  TimelineDefinition definition_;
  std::vector<std::uint8_t> type_;
  std::vector<std::uint8_t> launch_;
};

// HTA keeps only GPU activity launched by a CPU event that starts before the last ProfilerStep
// starts (it drops the last step as likely incomplete), or, with at most one distinct step name,
// launched no later than the last step's end. Its step list includes gpu_user_annotation copies of
// ProfilerStep (it treats them as CPU events).
struct HtaCutoff {
  bool any = false;
  bool exclusive = true;  // launch start < limit, else <= limit
  std::int64_t limit = 0;
};

HtaCutoff hta_cutoff(const TraceModel& model) {
  std::vector<std::int64_t> numbers;
  std::int64_t max_start = std::numeric_limits<std::int64_t>::min();
  std::int64_t max_end = std::numeric_limits<std::int64_t>::min();
  for (std::size_t e = 0; e < model.size(); ++e) {
    const EventKind k = model.kind[e];
    if (model.phase[e] != 'X' || !(is_host_span(k) || k == EventKind::kGpuUserAnnotation)) continue;
    const std::int64_t number = profiler_step_number(model.name_of(static_cast<EventIndex>(e)));
    if (number < 0) continue;
    numbers.push_back(number);
    max_start = std::max(max_start, model.ts_ns[e]);
    max_end = std::max(max_end, model.end_ns(static_cast<EventIndex>(e)));
  }
  HtaCutoff cut;
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  if (numbers.empty()) return cut;
  cut.any = true;
  if (numbers.size() >= 2) {
    cut.limit = max_start;
  } else {
    cut.exclusive = false;
    cut.limit = max_end;
  }
  return cut;
}

// HTA takes every event with an args.stream for GPU work, and Inductor's Triton kernels are also
// recorded as host cpu_ops carrying "stream" (with kernel_backend and friends): HTA counts those
// host spans as computation on the rank's GPU. Its definition here does the same, on the one
// device of the trace (a trace with several devices does not say which one the op launched on).
void add_hta_host_kernel_ops(const TraceModel& model, const AnalysisContext& ctx, std::vector<Activity>& out) {
  if (model.inductor_kernels.size() == 0 || out.empty()) return;
  const std::int32_t device = out.front().device;
  for (const Activity& a : out)
    if (a.device != device) return;
  if (!ctx.device_selected(device)) return;
  for (std::size_t row = 0; row < model.inductor_kernels.size(); ++row) {
    const EventIndex e = model.inductor_kernels[row].event;
    if (model.kind[e] != EventKind::kCpuOp || model.phase[e] != 'X') continue;
    Activity a;
    a.device = device;
    a.stream = -2;  // a stream of its own: HTA keys it by the op's "stream" value
    a.start = a.raw_start = ceil_us(model.ts_ns[e]);
    a.end = a.raw_end = std::max(a.start, floor_us(model.end_ns(e)));
    a.type = kComputationBit;
    out.push_back(a);
  }
}

std::vector<Activity> collect_activities(const TraceModel& model, const AnalysisContext& ctx,
                                         TimelineDefinition definition) {
  const Relations& rel = model.relations;
  const bool hta = definition == TimelineDefinition::kHta;
  const bool clip_to_window = !hta && !ctx.whole_trace();
  const HtaCutoff cut = hta ? hta_cutoff(model) : HtaCutoff{};
  NameClasses names(model, definition);
  std::vector<Activity> out;
  out.reserve(rel.gpu_events.size());
  // Graph replays and graph-node args are in GPU event order: walked alongside.
  std::size_t replay = 0, node = 0;
  for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
    const EventIndex e = rel.gpu_events[g];
    const EventKind kind = model.kind[e];
    // HTA counts every GPU event with a stream: stream waits (cuda_sync, MTIA's event_wait) and
    // MTIA's event records too, typed by name (NameClasses::hta_type).
    const bool hta_stream_event =
        hta && (kind == EventKind::kSync || kind == EventKind::kCudaEvent) && model.tid[e] >= 0;
    if (kind != EventKind::kKernel && kind != EventKind::kMemcpy && kind != EventKind::kMemset && !hta_stream_event)
      continue;
    if (!ctx.device_selected(model.pid[e])) continue;
    // Work queued before profiling began is in no window (HTA drops it too: it has no launch).
    if (!hta && model.relations.launched_before_trace_event(e)) continue;
    Activity a;
    a.kernel = kind == EventKind::kKernel;
    while (replay < rel.graph_replays.size() && rel.graph_replays[replay].gpu < e) ++replay;
    a.replayed = replay < rel.graph_replays.size() && rel.graph_replays[replay].gpu == e;
    while (node < model.graph_nodes.size() && model.graph_nodes[node].event < e) ++node;
    a.capture_record = !a.replayed && node < model.graph_nodes.size() && model.graph_nodes[node].event == e &&
                       model.graph_nodes[node].graph_id != kNoId;
    a.device = model.pid[e];
    a.stream = model.tid[e];
    a.raw_start = model.ts_ns[e];
    a.raw_end = a.raw_start + std::max<std::int64_t>(0, model.dur_ns[e]);
    a.launcher = rel.gpu_launcher[g];
    if (a.launcher != kNoEvent) {
      a.launch_start = model.ts_ns[a.launcher];
      a.launch_end = a.launch_start + std::max<std::int64_t>(0, model.dur_ns[a.launcher]);
      a.launch_class = names.launch_of(a.launcher);
    }
    if (hta) {
      // GPU activity HTA cannot pair with a CPU event is dropped, as is work launched in the last step.
      if (a.launcher == kNoEvent) continue;
      if (cut.any && (cut.exclusive ? a.launch_start >= cut.limit : a.launch_start > cut.limit)) continue;
      a.start = a.raw_start = ceil_us(a.raw_start);
      a.end = a.raw_end = std::max(a.start, floor_us(a.raw_end));
      a.launch_start = ceil_us(a.launch_start);
      a.launch_end = std::max(a.launch_start, floor_us(a.launch_end));
    } else {
      a.start = a.raw_start;
      a.end = a.raw_end;
      if (clip_to_window) {
        if (a.raw_end <= ctx.window_start_ns || a.raw_start >= ctx.window_end_ns) {
          // Zero-length activity exactly at the window start still belongs to it.
          if (!(a.raw_start == a.raw_end && a.raw_start == ctx.window_start_ns)) continue;
        }
        a.start = std::max(a.raw_start, ctx.window_start_ns);
        a.end = std::min(a.raw_end, ctx.window_end_ns);
        a.in_window = a.raw_start >= ctx.window_start_ns && a.raw_start < ctx.window_end_ns;
      }
    }
    a.type = names.type_of(e);
    out.push_back(a);
  }
  if (hta) add_hta_host_kernel_ops(model, ctx, out);
  return out;
}

// Time with exactly each set of types active, from the three merged per-type lists.
void sweep_types(const std::array<std::vector<Interval>, 3>& merged, KernelTypeBreakdown& kt) {
  struct Edge {
    std::int64_t t;
    std::int8_t bit;  // +bit opens, -bit closes
  };
  std::vector<Edge> edges;
  std::size_t n = 0;
  for (const auto& list : merged) n += 2 * list.size();
  edges.reserve(n);
  const std::int8_t bits[3] = {kComputationBit, kCommunicationBit, kMemoryBit};
  for (int t = 0; t < 3; ++t)
    for (const Interval& i : merged[t]) {
      edges.push_back({i.start, bits[t]});
      edges.push_back({i.end, static_cast<std::int8_t>(-bits[t])});
    }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
  std::array<std::int64_t, 8> by_mask{};
  int open[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // open count per bit value (1, 2, 4)
  std::uint8_t mask = 0;
  for (std::size_t i = 0; i < edges.size(); ++i) {
    if (i > 0 && mask != 0) by_mask[mask] += edges[i].t - edges[i - 1].t;
    const int bit = edges[i].bit > 0 ? edges[i].bit : -edges[i].bit;
    open[bit] += edges[i].bit > 0 ? 1 : -1;
    mask = static_cast<std::uint8_t>((open[kComputationBit] > 0 ? kComputationBit : 0) |
                                     (open[kCommunicationBit] > 0 ? kCommunicationBit : 0) |
                                     (open[kMemoryBit] > 0 ? kMemoryBit : 0));
  }
  kt.computation_ns = by_mask[kComputationBit];
  kt.communication_ns = by_mask[kCommunicationBit];
  kt.memory_ns = by_mask[kMemoryBit];
  kt.computation_communication_ns = by_mask[kComputationBit | kCommunicationBit];
  kt.computation_memory_ns = by_mask[kComputationBit | kMemoryBit];
  kt.communication_memory_ns = by_mask[kCommunicationBit | kMemoryBit];
  kt.all_three_ns = by_mask[kComputationBit | kCommunicationBit | kMemoryBit];
}

void add_into(KernelTypeBreakdown& sum, const KernelTypeBreakdown& k) {
  sum.computation_ns += k.computation_ns;
  sum.communication_ns += k.communication_ns;
  sum.memory_ns += k.memory_ns;
  sum.computation_communication_ns += k.computation_communication_ns;
  sum.computation_memory_ns += k.computation_memory_ns;
  sum.communication_memory_ns += k.communication_memory_ns;
  sum.all_three_ns += k.all_three_ns;
}

std::int64_t percentile(std::vector<std::int64_t>& v, double q) {
  if (v.empty()) return 0;
  // The median of an even count is the mean of the two middle values (as pandas computes it, so
  // HTA's 9362.5 us reproduces); other percentiles take the nearest rank.
  if (q == 0.5) return stats::median_ns_in_place(v);
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// One stream's activities, sorted by start: idle split and queue length.
StreamTimeline analyze_stream(std::span<const Activity> acts, TimelineDefinition definition,
                              std::vector<std::int64_t>& scratch) {
  StreamTimeline st;
  st.device = acts.front().device;
  st.stream = acts.front().stream;
  st.activities = acts.size();
  st.first_ns = acts.front().start;
  std::int64_t max_end = acts.front().end;
  std::int64_t busy_start = acts.front().start, busy_end = acts.front().end;
  for (std::size_t i = 1; i < acts.size(); ++i) {
    const Activity& a = acts[i];
    // HTA measures from the previous activity's end, so an activity overlapping the previous one
    // (programmatic dependent launch, PDL) gives a negative "idle" gap; ferret measures from the
    // latest end so far and only counts real gaps.
    const std::int64_t prev_end = definition == TimelineDefinition::kHta ? acts[i - 1].end : max_end;
    const std::int64_t gap = a.start - prev_end;
    if (gap > 0 || (definition == TimelineDefinition::kHta && gap != 0)) {
      if (a.launcher != kNoEvent && a.launch_start > prev_end)
        st.host_wait_ns += gap;
      else if (gap < kKernelWaitMaxGapNs)
        st.kernel_wait_ns += gap;
      else
        st.other_wait_ns += gap;
    }
    if (a.start > busy_end) {
      st.busy_ns += busy_end - busy_start;
      busy_start = a.start;
      busy_end = a.end;
    } else {
      busy_end = std::max(busy_end, a.end);
    }
    max_end = std::max(max_end, a.end);
  }
  st.busy_ns += busy_end - busy_start;
  st.last_ns = max_end;
  st.idle_ns = st.host_wait_ns + st.kernel_wait_ns + st.other_wait_ns;

  // Queue length: +1 when a launch call starts, -1 when its activity starts (Kineto has no enqueue
  // timestamp; the call start is when the CPU decided to enqueue). Activity without a launch call
  // in the trace is left out, or the queue would go negative.
  scratch.clear();
  for (const Activity& a : acts)
    if (a.launcher != kNoEvent) scratch.push_back(a.launch_start);
  if (scratch.empty()) return st;
  std::sort(scratch.begin(), scratch.end());
  std::int64_t queue = 0, prev_t = scratch.front(), area = 0, last_start = 0;
  std::size_t li = 0;
  for (const Activity& a : acts) {
    if (a.launcher == kNoEvent) continue;
    // Launches at or before this start enter the queue first.
    while (li < scratch.size() && scratch[li] <= a.start) {
      area += queue * (scratch[li] - prev_t);
      prev_t = scratch[li];
      ++queue;
      ++li;
      st.max_queue = std::max<std::uint32_t>(st.max_queue, static_cast<std::uint32_t>(queue));
    }
    const std::int64_t t = std::max(a.start, prev_t);
    area += queue * (t - prev_t);
    prev_t = t;
    if (queue > 0) --queue;
    last_start = t;
  }
  const std::int64_t range = last_start - scratch.front();
  st.mean_queue = range > 0 ? static_cast<double>(area) / static_cast<double>(range) : 0.0;
  return st;
}

void finish_launch(LaunchStats& ls, std::vector<std::int64_t>& delays) {
  ls.median_delay_ns = percentile(delays, 0.5);
  ls.p90_delay_ns = percentile(delays, 0.9);
}

// Busy share per bucket from merged (disjoint, sorted) intervals, in one sweep: each interval
// touches only the buckets it overlaps, so the cost is O(intervals + buckets).
std::vector<float> busy_series(const std::vector<Interval>& merged, std::int64_t first, std::int64_t last,
                               int buckets) {
  if (last <= first || buckets <= 0) return {};
  std::vector<double> busy(static_cast<std::size_t>(buckets), 0.0);
  const double width = static_cast<double>(last - first) / buckets;
  for (const Interval& i : merged) {
    const double s = static_cast<double>(std::max(i.start, first) - first);
    const double e = static_cast<double>(std::min(i.end, last) - first);
    if (e <= s) continue;
    for (int k = std::min(buckets - 1, static_cast<int>(s / width)); k < buckets; ++k) {
      const double b0 = k * width, b1 = (k + 1) * width;
      if (b0 >= e) break;
      busy[static_cast<std::size_t>(k)] += std::min(e, b1) - std::max(s, b0);
    }
  }
  std::vector<float> out(busy.size());
  for (std::size_t k = 0; k < busy.size(); ++k) out[k] = static_cast<float>(std::min(1.0, busy[k] / width));
  return out;
}

// Launches queued and not yet started on the device, the most in each bucket: +1 when a launch call
// starts, -1 when its activity starts (the per-stream queue's rule), every stream together.
std::vector<std::uint32_t> queue_series(std::span<const Activity> acts, std::int64_t first, std::int64_t last,
                                        int buckets) {
  if (last <= first || buckets <= 0) return {};
  std::vector<std::pair<std::int64_t, int>> moves;
  for (const Activity& a : acts) {
    if (a.launcher == kNoEvent) continue;
    moves.push_back({a.launch_start, +1});
    moves.push_back({std::max(a.start, a.launch_start), -1});
  }
  std::sort(moves.begin(), moves.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;  // enqueue before start
  });
  std::vector<std::uint32_t> out(static_cast<std::size_t>(buckets), 0);
  const double width = static_cast<double>(last - first) / buckets;
  auto bucket_of = [&](std::int64_t t) {
    if (t <= first) return 0;
    return std::min(buckets - 1, static_cast<int>(static_cast<double>(t - first) / width));
  };
  std::int64_t queue = 0;
  int current = 0;
  for (const auto& [t, delta] : moves) {
    if (t >= last) break;
    const int b = bucket_of(t);
    for (int k = current + 1; k <= b; ++k) out[static_cast<std::size_t>(k)] = static_cast<std::uint32_t>(queue);
    current = std::max(current, b);
    queue = std::max<std::int64_t>(0, queue + delta);
    auto& slot = out[static_cast<std::size_t>(b)];
    slot = std::max(slot, static_cast<std::uint32_t>(queue));
  }
  for (int k = current + 1; k < buckets; ++k) out[static_cast<std::size_t>(k)] = static_cast<std::uint32_t>(queue);
  return out;
}

// The longest gaps between merged busy intervals.
Occurrences idle_gaps(const std::vector<Interval>& merged) {
  LongestIntervals gaps;
  for (std::size_t i = 1; i < merged.size(); ++i) gaps.offer({merged[i - 1].end, merged[i].start});
  return gaps.take();
}

struct SeriesSettings {
  int buckets = kBusySeriesBuckets;
  bool queue = false;
};

DeviceTimeline analyze_device(std::span<const Activity> acts, TimelineDefinition definition, SeriesSettings series,
                              std::vector<std::int64_t>& all_delays, std::vector<EventIndex>& graph_launchers) {
  DeviceTimeline dt;
  dt.device = acts.front().device;

  // Temporal breakdown and kernel types from the merged per-type lists.
  std::array<std::vector<Interval>, 3> by_type;
  std::vector<Interval> all;
  all.reserve(acts.size());
  for (const Activity& a : acts) {
    all.push_back({a.start, a.end});
    if (a.type == kStreamWait) continue;
    const int t = a.type == kComputationBit ? 0 : a.type == kCommunicationBit ? 1 : 2;
    by_type[t].push_back({a.start, a.end});
  }
  for (auto& list : by_type) merge_intervals(list);
  merge_intervals(all);
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
  for (const Activity& a : acts) {
    first = std::min(first, a.start);
    last = std::max(last, a.end);
  }
  dt.span_start_ns = first;
  dt.span_end_ns = last;
  dt.busy_series = busy_series(all, first, last, series.buckets);
  if (series.queue) dt.queue_series = queue_series(acts, first, last, series.buckets);
  dt.idle_gaps = idle_gaps(all);
  TemporalBreakdown& b = dt.breakdown;
  b.span_ns = last - first;
  b.busy_ns = total_length(all);
  b.idle_ns = b.span_ns - b.busy_ns;
  b.compute_ns = total_length(by_type[0]);
  b.non_compute_ns = b.busy_ns - b.compute_ns;
  sweep_types(by_type, dt.kernel_types);
  dt.communication_ns = total_length(by_type[1]);
  dt.communication_overlap_ns = dt.kernel_types.computation_communication_ns + dt.kernel_types.all_three_ns;
  if (dt.communication_ns > 0)
    dt.comm_comp_overlap_pct =
        100.0 * static_cast<double>(dt.communication_overlap_ns) / static_cast<double>(dt.communication_ns);

  // Graph replays: counted apart, and the busy time they cover.
  std::vector<Interval> replayed;
  for (const Activity& a : acts)
    if (a.replayed) replayed.push_back({a.start, a.end});
  merge_intervals(replayed);
  dt.graph_replayed_ns = total_length(replayed);

  // Launch statistics.
  std::vector<std::int64_t> delays;
  for (const Activity& a : acts) {
    if (!a.in_window) continue;
    if (a.replayed) {
      ++dt.launch.graph_activities;
      if (a.kernel) ++dt.launch.graph_kernels;
      if (a.launcher != kNoEvent) graph_launchers.push_back(a.launcher);
      continue;
    }
    if (a.launcher == kNoEvent || a.capture_record || a.launch_class != LaunchClass::kCounted) continue;
    LaunchStats& ls = dt.launch;
    ++ls.launches;
    const std::int64_t call = a.launch_end - a.launch_start;
    const std::int64_t delay = a.raw_start - a.launch_end;
    if (call <= kShortKernelMaxCallNs && a.raw_end - a.raw_start < call) ++ls.short_kernels;
    if (delay > kLaunchDelayOutlierNs) ++ls.delay_outliers;
    delays.push_back(delay);
  }
  all_delays.insert(all_delays.end(), delays.begin(), delays.end());
  finish_launch(dt.launch, delays);

  // Streams: acts are sorted by (stream, start).
  std::vector<std::int64_t> scratch;
  std::size_t begin = 0;
  while (begin < acts.size()) {
    std::size_t end = begin + 1;
    while (end < acts.size() && acts[end].stream == acts[begin].stream) ++end;
    dt.streams.push_back(analyze_stream(acts.subspan(begin, end - begin), definition, scratch));
    begin = end;
  }
  return dt;
}

// Launch call time, counted once per call (a call can launch several activities).
std::int64_t launch_call_time(const TraceModel& model, std::vector<EventIndex>& launchers) {
  std::sort(launchers.begin(), launchers.end());
  launchers.erase(std::unique(launchers.begin(), launchers.end()), launchers.end());
  std::int64_t total = 0;
  for (EventIndex l : launchers) total += std::max<std::int64_t>(0, model.dur_ns[l]);
  return total;
}

}  // namespace

GpuTimelineResult analyze_gpu_timeline(const TraceModel& model, const AnalysisContext& ctx) {
  return analyze_gpu_timeline(model, ctx, TimelineDefinition::kFerret);
}

GpuTimelineResult analyze_gpu_timeline(const TraceModel& model, const AnalysisContext& ctx,
                                       TimelineDefinition definition) {
  GpuTimelineResult r;
  r.definition = definition;
  std::vector<Activity> acts = collect_activities(model, ctx, definition);
  if (acts.empty()) return r;
  r.has_gpu = true;
  auto by_stream = [](const Activity& a, const Activity& b) {
    if (a.device != b.device) return a.device < b.device;
    if (a.stream != b.stream) return a.stream < b.stream;
    if (a.start != b.start) return a.start < b.start;
    return a.end < b.end;
  };
  if (!std::is_sorted(acts.begin(), acts.end(), by_stream)) std::sort(acts.begin(), acts.end(), by_stream);

  std::vector<std::int64_t> all_delays;
  std::vector<EventIndex> graph_launchers;
  SeriesSettings series;
  if (ctx.options.series_buckets > 0) series.buckets = ctx.options.series_buckets;
  series.queue = ctx.options.queue_series;
  std::size_t begin = 0;
  const std::span<const Activity> view(acts);
  while (begin < acts.size()) {
    std::size_t end = begin + 1;
    while (end < acts.size() && acts[end].device == acts[begin].device) ++end;
    std::vector<EventIndex> device_graphs;
    DeviceTimeline dt = analyze_device(view.subspan(begin, end - begin), definition, series, all_delays, device_graphs);
    // Host time in launch calls: each call once.
    std::vector<EventIndex> launchers;
    for (std::size_t i = begin; i < end; ++i)
      if (acts[i].in_window && acts[i].launch_class != LaunchClass::kNone) launchers.push_back(acts[i].launcher);
    dt.launch.launch_call_ns = launch_call_time(model, launchers);
    std::sort(device_graphs.begin(), device_graphs.end());
    dt.launch.graph_launches =
        static_cast<std::uint64_t>(std::unique(device_graphs.begin(), device_graphs.end()) - device_graphs.begin());
    graph_launchers.insert(graph_launchers.end(), device_graphs.begin(), device_graphs.end());
    r.devices.push_back(std::move(dt));
    begin = end;
  }

  for (const DeviceTimeline& d : r.devices) {
    r.overall.span_ns += d.breakdown.span_ns;
    r.overall.busy_ns += d.breakdown.busy_ns;
    r.overall.idle_ns += d.breakdown.idle_ns;
    r.overall.compute_ns += d.breakdown.compute_ns;
    r.overall.non_compute_ns += d.breakdown.non_compute_ns;
    add_into(r.kernel_types, d.kernel_types);
    r.communication_ns += d.communication_ns;
    r.communication_overlap_ns += d.communication_overlap_ns;
    r.launch.launches += d.launch.launches;
    r.launch.short_kernels += d.launch.short_kernels;
    r.launch.delay_outliers += d.launch.delay_outliers;
    r.launch.launch_call_ns += d.launch.launch_call_ns;
    r.launch.graph_activities += d.launch.graph_activities;
    r.launch.graph_kernels += d.launch.graph_kernels;
    r.graph_replayed_ns += d.graph_replayed_ns;
  }
  if (r.communication_ns > 0)
    r.comm_comp_overlap_pct =
        100.0 * static_cast<double>(r.communication_overlap_ns) / static_cast<double>(r.communication_ns);
  std::sort(graph_launchers.begin(), graph_launchers.end());
  r.launch.graph_launches =
      static_cast<std::uint64_t>(std::unique(graph_launchers.begin(), graph_launchers.end()) - graph_launchers.begin());
  finish_launch(r.launch, all_delays);
  return r;
}

}  // namespace ferret
