// PLACEHOLDER: the hot_spots analysis (to be written).
#include "analysis/hot_spots.h"

namespace ferret {

HotSpotsResult analyze_hot_spots(const TraceModel&, const AnalysisContext&) { return {}; }

}  // namespace ferret
