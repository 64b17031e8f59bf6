// PLACEHOLDER: the step_breakdown analysis (to be written).
#include "analysis/step_breakdown.h"

namespace ferret {

StepBreakdownResult analyze_step_breakdown(const TraceModel&, const AnalysisContext&) { return {}; }

}  // namespace ferret
