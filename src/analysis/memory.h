// PLACEHOLDER: the memory analysis (to be written).
#pragma once

#include "analysis/analysis.h"

namespace ferret {

struct MemoryResult {};

MemoryResult analyze_memory(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
