#include "analysis/timeline/data_pipeline.h"

#include <algorithm>

#include "analysis/classify.h"
#include "analysis/intervals.h"

namespace ferret {

namespace {

bool is_host_op_kind(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation || k == EventKind::kPythonFunction;
}

}  // namespace

DataPipelineResult analyze_data_pipeline(const TraceModel& model, const AnalysisContext& ctx) {
  DataPipelineResult result;
  result.has_steps = ctx.has_steps;

  // Each step's window (GPU-extended) for time shares, and its CPU span for attributing calls:
  // a step's DataLoader call runs at the top of its CPU span, often while the GPU still finishes
  // the previous step, i.e. before the step's GPU-extended window begins.
  struct CpuSpan {
    std::int64_t start, end;
  };
  std::vector<CpuSpan> cpu_spans;
  if (ctx.has_steps) {
    for (const Step& s : ctx.steps) {
      DataLoaderStep d;
      d.number = s.number;
      d.start_ns = s.start_ns;
      d.duration_ns = std::max<std::int64_t>(0, s.end_ns - s.start_ns);
      result.steps.push_back(d);
      cpu_spans.push_back({model.ts_ns[s.event], s.cpu_end_ns});
    }
  } else if (ctx.window_ns() > 0) {
    DataLoaderStep d;
    d.start_ns = ctx.window_start_ns;
    d.duration_ns = ctx.window_ns();
    result.steps.push_back(d);
    cpu_spans.push_back({ctx.window_start_ns, ctx.window_end_ns});
  }
  if (result.steps.empty()) return result;
  const std::int64_t lo = std::min(result.steps.front().start_ns, cpu_spans.front().start);
  const std::int64_t hi =
      std::max(result.steps.back().start_ns + result.steps.back().duration_ns, cpu_spans.back().end);

  // One pass: DataLoader spans and GPU activity near the window; calls counted per step.
  std::vector<Interval> loader_spans;
  std::vector<Interval> gpu_busy;
  std::vector<std::int8_t> loader_name(model.strings.size(), -1);  // memo: is this name a DataLoader span
  auto is_loader = [&](EventIndex e) {
    std::int8_t& memo = loader_name[model.name[e]];
    if (memo < 0) memo = is_dataloader_span(model.name_of(e)) ? 1 : 0;
    return memo == 1;
  };
  LongestIntervals call_sites;
  const std::size_t n = model.size();
  for (std::size_t i = 0; i < n; ++i) {
    const EventKind kind = model.kind[i];
    const bool gpu = kind == EventKind::kKernel || kind == EventKind::kMemcpy || kind == EventKind::kMemset;
    if (!gpu && !is_host_op_kind(kind)) continue;
    if (model.phase[i] != 'X') continue;
    const std::int64_t start = model.ts_ns[i];
    const std::int64_t end = start + model.dur_ns[i];
    if (end <= lo || start >= hi) continue;
    if (gpu) {
      if (ctx.counts_gpu_event(model, static_cast<EventIndex>(i))) gpu_busy.push_back({start, end});
      continue;
    }
    const EventIndex e = static_cast<EventIndex>(i);
    if (!is_loader(e)) continue;
    loader_spans.push_back({start, end});
    const std::string_view name = model.name_of(e);
    if (name.find("_SingleProcessDataLoaderIter") != std::string_view::npos) result.single_process_loader = true;
    if (name.find("_MultiProcessingDataLoaderIter") != std::string_view::npos) result.multi_process_loader = true;
    // A call nested in another DataLoader span is part of that call, not a new one.
    const EventIndex parent = model.relations.built ? model.relations.parent[e] : kNoEvent;
    if (parent != kNoEvent && is_loader(parent)) continue;
    auto it = std::upper_bound(cpu_spans.begin(), cpu_spans.end(), start,
                               [](std::int64_t t, const CpuSpan& s) { return t < s.start; });
    if (it == cpu_spans.begin() || start >= (it - 1)->end) continue;  // made between steps
    DataLoaderStep& step = result.steps[static_cast<std::size_t>(it - 1 - cpu_spans.begin())];
    ++step.calls;
    step.longest_call_ns = std::max(step.longest_call_ns, end - start);
    call_sites.offer({start, end});
  }
  result.call_sites = call_sites.take();
  merge_intervals(loader_spans);
  merge_intervals(gpu_busy);
  const std::vector<Interval> waiting_gpu_idle = subtract(loader_spans, gpu_busy);

  double total_step = 0, total_loader = 0, total_idle = 0;
  for (DataLoaderStep& s : result.steps) {
    const std::int64_t end = s.start_ns + s.duration_ns;
    s.dataloader_ns = covered_length(loader_spans, s.start_ns, end);
    s.gpu_idle_waiting_ns = covered_length(waiting_gpu_idle, s.start_ns, end);
    result.calls += s.calls;
    if (s.longest_call_ns > result.longest_call_ns) {
      result.longest_call_ns = s.longest_call_ns;
      result.longest_call_step = s.number;
    }
    total_step += static_cast<double>(s.duration_ns);
    total_loader += static_cast<double>(s.dataloader_ns);
    total_idle += static_cast<double>(s.gpu_idle_waiting_ns);
  }
  const double count = static_cast<double>(result.steps.size());
  result.average_step_ns = total_step / count;
  result.average_dataloader_ns = total_loader / count;
  result.average_gpu_idle_waiting_ns = total_idle / count;
  result.average_calls_per_step = static_cast<double>(result.calls) / count;
  if (total_step > 0) {
    result.dataloader_pct = 100.0 * total_loader / total_step;
    result.gpu_idle_waiting_pct = 100.0 * total_idle / total_step;
  }
  return result;
}

}  // namespace ferret
