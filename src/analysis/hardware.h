// PLACEHOLDER: the hardware analysis (to be written).
#pragma once

#include "analysis/analysis.h"

namespace ferret {

struct HardwareResult {};

HardwareResult analyze_hardware(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
