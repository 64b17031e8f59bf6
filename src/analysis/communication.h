// PLACEHOLDER: the communication analysis (to be written).
#pragma once

#include "analysis/analysis.h"

namespace ferret {

struct CommunicationResult {};

CommunicationResult analyze_communication(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
