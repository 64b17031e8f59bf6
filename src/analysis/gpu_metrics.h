// PLACEHOLDER: the gpu_metrics analysis (to be written).
#pragma once

#include "analysis/analysis.h"

namespace ferret {

struct GpuMetricsResult {};

GpuMetricsResult analyze_gpu_metrics(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
