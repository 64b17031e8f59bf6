// PLACEHOLDER: rules_memory (to be written).
#include "diagnosis/rules.h"

namespace ferret {

void rules_memory(const TraceAnalysis&, std::vector<Finding>&) {}

}  // namespace ferret
