// PLACEHOLDER: the gpu_metrics analysis (to be written).
#include "analysis/gpu_metrics.h"

namespace ferret {

GpuMetricsResult analyze_gpu_metrics(const TraceModel&, const AnalysisContext&) { return {}; }

}  // namespace ferret
