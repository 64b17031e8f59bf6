// PLACEHOLDER: the host_blockers analysis (to be written).
#pragma once

#include "analysis/analysis.h"

namespace ferret {

struct HostBlockersResult {};

HostBlockersResult analyze_host_blockers(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
