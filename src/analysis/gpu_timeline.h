// PLACEHOLDER: the gpu_timeline analysis (to be written).
#pragma once

#include "analysis/analysis.h"

namespace ferret {

struct GpuTimelineResult {};

GpuTimelineResult analyze_gpu_timeline(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
