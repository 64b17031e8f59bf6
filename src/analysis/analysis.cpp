#include "analysis/analysis.h"

#include <algorithm>
#include <limits>

namespace ferret {

AnalysisContext make_analysis_context(const TraceModel& model, const AnalysisOptions& options) {
  AnalysisContext ctx;
  ctx.options = options;
  for (const Step& s : model.relations.steps) {
    if (options.first_step && s.number < *options.first_step) continue;
    if (options.last_step && s.number > *options.last_step) continue;
    ctx.steps.push_back(s);
  }
  ctx.has_steps = !ctx.steps.empty();
  if (ctx.has_steps) {
    ctx.window_start_ns = ctx.steps.front().start_ns;
    ctx.window_end_ns = ctx.steps.back().end_ns;
    return ctx;
  }
  // No steps: the whole trace (metadata events carry no time).
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  for (std::size_t i = 0; i < model.size(); ++i) {
    const EventKind k = model.kind[i];
    if (k == EventKind::kMetadata || k == EventKind::kFlowStart || k == EventKind::kFlowEnd) continue;
    // Only host spans and GPU work define the window: profiler bookkeeping spans ("PyTorch
    // Profiler (0)", cuda_profiler_range) can stretch far beyond the work itself.
    if (model.phase[i] != 'X' || !(is_host_span(k) || is_gpu_activity(k))) continue;
    first = std::min(first, model.ts_ns[i]);
    last = std::max(last, model.ts_ns[i] + model.dur_ns[i]);
  }
  if (first <= last) {
    ctx.window_start_ns = first;
    ctx.window_end_ns = last;
  }
  return ctx;
}

}  // namespace ferret
