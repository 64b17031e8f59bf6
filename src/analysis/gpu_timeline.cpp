// PLACEHOLDER: the gpu_timeline analysis (to be written).
#include "analysis/gpu_timeline.h"

namespace ferret {

GpuTimelineResult analyze_gpu_timeline(const TraceModel&, const AnalysisContext&) { return {}; }

}  // namespace ferret
