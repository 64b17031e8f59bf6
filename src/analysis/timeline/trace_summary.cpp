#include "analysis/timeline/trace_summary.h"

#include <limits>
#include <map>
#include <set>

namespace ferret {

TraceSummary summarize_trace(const TraceModel& model) {
  TraceSummary s;
  s.events = model.size();
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
  std::map<std::pair<std::int32_t, std::int32_t>, StreamSummary> streams;
  std::map<std::pair<std::int32_t, std::int32_t>, ThreadSummary> threads;
  for (std::size_t i = 0; i < model.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    const EventKind k = model.kind[e];
    ++s.by_kind[static_cast<std::size_t>(k)];
    if (k == EventKind::kMetadata) continue;
    first = std::min(first, model.ts_ns[e]);
    last = std::max(last, model.end_ns(e));
    const std::pair key{model.pid[e], model.tid[e]};
    if (is_gpu_activity(k)) {
      StreamSummary& st = streams[key];
      st.device = key.first;
      st.stream = key.second;
      if (k == EventKind::kKernel)
        ++st.kernels;
      else if (k == EventKind::kMemcpy)
        ++st.memcpys;
      else if (k == EventKind::kMemset)
        ++st.memsets;
      else
        ++st.other;
      st.busy_ns += model.dur_ns[e];
    } else if (is_host_span(k) || k == EventKind::kMemoryInstant || k == EventKind::kInstant) {
      ThreadSummary& th = threads[key];
      th.pid = key.first;
      th.tid = key.second;
      ++th.events;
    }
  }
  if (s.events > s.by_kind[static_cast<std::size_t>(EventKind::kMetadata)]) {
    s.first_ns = first;
    s.last_ns = last;
  }
  for (auto& [key, st] : streams) s.streams.push_back(st);
  s.python_frames = model.python_frames.size();
  s.inductor_kernels = model.inductor_kernels.size();
  // A series is (event name, arg): PM sampling writes either the metric as the arg or "value".
  std::set<std::pair<StrId, StrId>> series;
  for (const CounterSample& c : model.counters)
    if (model.category_of(c.event) == "hardware_counters") series.emplace(model.name[c.event], c.series);
  s.hardware_counter_series = series.size();
  for (auto& [key, th] : threads) {
    if (auto it = model.thread_names.find(key); it != model.thread_names.end())
      th.name = it->second;
    else if (auto lt = model.id_labels.find(key.second); lt != model.id_labels.end())
      th.name = lt->second;
    if (auto it = model.process_names.find(key.first); it != model.process_names.end())
      th.process = it->second;
    else if (auto lp = model.id_labels.find(key.first); lp != model.id_labels.end())
      th.process = lp->second;
    s.threads.push_back(th);
  }
  return s;
}

}  // namespace ferret
