// PLACEHOLDER: the hot_spots analysis (to be written).
#pragma once

#include "analysis/analysis.h"

namespace ferret {

struct HotSpotsResult {};

HotSpotsResult analyze_hot_spots(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
