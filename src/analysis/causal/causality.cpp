#include "analysis/causal/causality.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "analysis/causal/host_blockers.h"
#include "analysis/intervals.h"

namespace ferret {

const char* start_reason_name(StartReason r) {
  switch (r) {
    case StartReason::kLaunch: return "launch";
    case StartReason::kStreamBacklog: return "stream_backlog";
    case StartReason::kCrossStream: return "cross_stream";
    case StartReason::kBeforeTrace: return "before_trace";
    case StartReason::kUnknown: return "unknown";
  }
  return "unknown";
}

bool is_queue_blocked_launch(std::int64_t call_ns, std::int64_t call_end_ns, std::int64_t work_start_ns) {
  return call_ns >= kBlockedLaunchMinNs && work_start_ns - call_end_ns >= kUntracedQueueNs;
}

namespace {

std::int64_t quantile(std::vector<std::int64_t>& v, double q) {
  if (v.empty()) return 0;
  const std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// Blocking host calls in the window: the host waits in them until the device catches up.
std::vector<Interval> host_blocking(const TraceModel& model, const AnalysisContext& ctx) {
  std::vector<Interval> out;
  const Relations& rel = model.relations;
  for (std::size_t i = 0; i < rel.launches.size(); ++i) {
    if (rel.launch_gpu_begin[i] == rel.launch_gpu_begin[i + 1]) continue;
    const EventIndex call = rel.launches[i];
    const EventIndex first = rel.launch_gpu[rel.launch_gpu_begin[i]];
    if (!is_queue_blocked_launch(model.dur_ns[call], model.end_ns(call), model.ts_ns[first])) continue;
    const std::int64_t start = std::max(model.ts_ns[call], ctx.window_start_ns);
    const std::int64_t end = std::min(model.end_ns(call), ctx.window_end_ns);
    if (end > start) out.push_back({start, end});
  }
  std::vector<std::int8_t> blocks(model.strings.size(), -1);  // per name: a synchronising call, -1 not looked up
  for (std::size_t i = 0; i < model.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    if (!is_launch_api(model.kind[e]) || model.phase[e] != 'X') continue;
    std::int8_t& b = blocks[model.name[e]];
    if (b < 0) {
      const std::string_view name = model.name_of(e);
      b = is_host_sync_call(name) || is_sync_copy_call(name) ? 1 : 0;
    }
    if (b == 0) continue;
    const std::int64_t start = std::max(model.ts_ns[e], ctx.window_start_ns);
    const std::int64_t end = std::min(model.end_ns(e), ctx.window_end_ns);
    if (end > start) out.push_back({start, end});
  }
  merge_intervals(out);
  return out;
}

struct Activity {
  EventIndex event;
  std::int64_t start, end;
  std::int32_t stream;
};

DeviceCausality device_causality(const TraceModel& model, const AnalysisContext& ctx, std::int32_t device,
                                 std::vector<Activity>& acts, const std::vector<Interval>& blocking,
                                 std::vector<ActivityCause>& causes) {
  const Relations& rel = model.relations;
  DeviceCausality d;
  d.device = device;
  d.window_ns = ctx.window_ns();
  std::sort(acts.begin(), acts.end(), [](const Activity& a, const Activity& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  });
  std::map<std::int32_t, std::int64_t> stream_end;            // latest end so far per stream
  std::multiset<std::pair<std::int64_t, std::int32_t>> ends;  // (end, stream) of activities before
  std::vector<std::int64_t> launch_to_start;
  std::vector<std::int64_t> ready_of(acts.size(), -1);
  for (std::size_t k = 0; k < acts.size(); ++k) {
    const Activity& a = acts[k];
    ActivityCause c;
    c.event = a.event;
    const EventIndex launch = rel.launcher_of(a.event);
    const auto same = stream_end.find(a.stream);
    const std::int64_t prev_end = same == stream_end.end() ? INT64_MIN : same->second;
    // The latest end at or before this start, on another stream.
    std::int64_t other_end = INT64_MIN;
    for (auto it = ends.upper_bound({a.start, INT32_MAX}); it != ends.begin();) {
      --it;
      if (it->second != a.stream) {
        other_end = it->first;
        break;
      }
      if (it->first <= prev_end) break;  // the same stream's: nothing later on another one
    }
    if (launch == kNoEvent) {
      c.reason = rel.launched_before_trace_event(a.event) || prev_end == INT64_MIN ? StartReason::kBeforeTrace
                                                                                   : StartReason::kUnknown;
    } else {
      const std::int64_t ready = model.ts_ns[launch];
      // The host has handed the work over when its call returns (a first call that loads code
      // objects lasts milliseconds), or when the work starts, if that is earlier.
      ready_of[k] = std::min(model.end_ns(launch), a.start);
      launch_to_start.push_back(std::max<std::int64_t>(0, a.start - ready));
      ++d.launched;
      const std::int64_t allowed = std::max(ready, prev_end);
      if (other_end > allowed && a.start - other_end <= kDependencySlackNs) {
        c.reason = StartReason::kCrossStream;
        c.delay_ns = other_end - allowed;
      } else if (prev_end >= ready) {
        c.reason = StartReason::kStreamBacklog;
        c.delay_ns = prev_end - ready;
      } else if (a.start - ready > kUntracedQueueNs && other_end < ready) {
        c.reason = StartReason::kBeforeTrace;
        c.delay_ns = a.start - ready;
      } else {
        c.reason = StartReason::kLaunch;
        c.delay_ns = prev_end == INT64_MIN ? 0 : ready - prev_end;
      }
    }
    ReasonTotal& total = d.reasons[static_cast<std::size_t>(c.reason)];
    ++total.activities;
    total.delay_ns += c.delay_ns;
    causes.push_back(c);
    stream_end[a.stream] = std::max(prev_end, a.end);
    ends.insert({a.end, a.stream});
  }
  d.median_launch_to_start_ns = quantile(launch_to_start, 0.5);
  d.p90_launch_to_start_ns = quantile(launch_to_start, 0.9);

  // The window: busy time, and each idle gap by what ended it.
  std::vector<Interval> busy;
  busy.reserve(acts.size());
  for (const Activity& a : acts) busy.push_back({a.start, a.end});
  merge_intervals(busy);
  busy = clip(busy, ctx.window_start_ns, ctx.window_end_ns);
  d.busy_ns = total_length(busy);
  d.host_waited_on_device_ns = total_length(intersect(busy, blocking));
  d.both_busy_ns = d.busy_ns - d.host_waited_on_device_ns;
  std::int64_t gap_start = ctx.window_start_ns;
  std::size_t next = 0;  // the first activity starting at or after a gap's end
  const auto account_gap = [&](std::int64_t g0, std::int64_t g1) {
    if (g1 <= g0) return;
    while (next < acts.size() && acts[next].start < g1) ++next;
    // The host blocked in a call while the device shows no work waits on work the trace does not
    // hold (queued before profiling, another process): the host waiting on the device.
    const std::int64_t blocked = covered_length(blocking, g0, g1);
    d.host_waited_on_device_ns += blocked;
    // The rest: the device waited on the host until the launch of the activity that ends the gap
    // came, and through a launch latency after it; past that (or when the work was queued before
    // the gap began, or nothing ends it) something else held it: neither.
    std::int64_t host_part = 0;
    if (next < acts.size() && acts[next].start == g1 && ready_of[next] > g0) {
      const std::int64_t until = std::min(g1, ready_of[next] + kLaunchLatencyMaxNs);
      host_part = until - g0 - covered_length(blocking, g0, until);
    }
    d.device_waited_on_host_ns += host_part;
    d.neither_ns += g1 - g0 - blocked - host_part;
    if (next < acts.size() && acts[next].start == g1 && ready_of[next] >= 0 && ready_of[next] <= g0 &&
        g1 - g0 >= kStallMinNs) {
      ++d.stalls;
      d.stall_ns += g1 - g0;
      const EventIndex launch = rel.launcher_of(acts[next].event);
      if (model.name_of(launch).find("GraphLaunch") != std::string_view::npos) ++d.stalls_before_graph_work;
    }
  };
  for (const Interval& b : busy) {
    account_gap(gap_start, b.start);
    gap_start = b.end;
  }
  account_gap(gap_start, ctx.window_end_ns);
  return d;
}

}  // namespace

CausalityResult analyze_causality(const TraceModel& model, const AnalysisContext& ctx) {
  CausalityResult out;
  std::map<std::int32_t, std::vector<Activity>> by_device;
  for (const EventIndex e : model.relations.gpu_events) {
    if (!is_device_work(model.kind[e]) || !ctx.device_selected(model.pid[e])) continue;
    const std::int64_t start = model.ts_ns[e], end = model.end_ns(e);
    if (end <= ctx.window_start_ns || start >= ctx.window_end_ns) continue;
    by_device[model.pid[e]].push_back({e, start, end, model.tid[e]});
  }
  if (by_device.empty()) return out;
  const std::vector<Interval> blocking = host_blocking(model, ctx);
  std::int64_t most_busy = -1;
  for (auto& [device, acts] : by_device) {
    out.devices.push_back(device_causality(model, ctx, device, acts, blocking, out.activities));
    if (out.devices.back().busy_ns > most_busy) {
      most_busy = out.devices.back().busy_ns;
      out.busiest = static_cast<int>(out.devices.size()) - 1;
    }
  }
  return out;
}

}  // namespace ferret
