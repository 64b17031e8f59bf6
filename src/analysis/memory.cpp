// PLACEHOLDER: the memory analysis (to be written).
#include "analysis/memory.h"

namespace ferret {

MemoryResult analyze_memory(const TraceModel&, const AnalysisContext&) { return {}; }

}  // namespace ferret
