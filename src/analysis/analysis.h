// What every analysis shares: options from the command line and the time window they cover.
//
// An analysis is a function `XResult analyze_x(const TraceModel&, const AnalysisContext&)` in its
// own file under src/analysis/: it reads the model, returns a plain struct, prints nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "model/trace_model.h"

namespace ferret {

struct AnalysisOptions {
  int top_k = 10;                          // rows in "top N" tables
  std::optional<std::int64_t> first_step;  // --steps A-B (ProfilerStep numbers, inclusive)
  std::optional<std::int64_t> last_step;
  std::optional<int> device;  // --device N: GPU device (pid of GPU events)
};

// The window an analysis covers: the selected complete steps, or (for a trace without steps)
// the span of all its events. Built once per trace.
struct AnalysisContext {
  AnalysisOptions options;
  std::vector<Step> steps;  // selected steps, in time order (empty when the trace has none)
  std::int64_t window_start_ns = 0;
  std::int64_t window_end_ns = 0;
  bool has_steps = false;

  std::int64_t window_ns() const { return window_end_ns - window_start_ns; }
  bool device_selected(std::int32_t device) const { return !options.device || *options.device == device; }
};

AnalysisContext make_analysis_context(const TraceModel& model, const AnalysisOptions& options);

}  // namespace ferret
