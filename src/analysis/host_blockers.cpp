// PLACEHOLDER: the host_blockers analysis (to be written).
#include "analysis/host_blockers.h"

namespace ferret {

HostBlockersResult analyze_host_blockers(const TraceModel&, const AnalysisContext&) { return {}; }

}  // namespace ferret
