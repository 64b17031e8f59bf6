// Relations built once after ingestion: host span nesting per thread, runtime call -> GPU activity
// by correlation id, runtime call -> launching CPU op, graph replays -> the launch call that captured
// each node (model/graphs.h), steps from ProfilerStep#N, and the Python call tree from
// python_function ids.
#pragma once

#include "model/trace_model.h"

namespace ferret {

// A last step with fewer than this share of the previous step's kernels is incomplete (the
// profiler stopped mid-step). Source: the TensorBoard profiler plugin's rule (docs/WINDOWS.md).
inline constexpr double kIncompleteStepKernelShare = 0.80;

void build_relations(TraceModel& model);

// "ProfilerStep#12" -> 12; -1 if the name is not a step marker.
std::int64_t profiler_step_number(std::string_view name);

}  // namespace ferret
