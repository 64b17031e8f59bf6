// PLACEHOLDER: the step_breakdown analysis (to be written).
#pragma once

#include "analysis/analysis.h"

namespace ferret {

struct StepBreakdownResult {};

StepBreakdownResult analyze_step_breakdown(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
