// PLACEHOLDER: rules_distributed (to be written).
#include "diagnosis/rules.h"

namespace ferret {

void rules_distributed(const TraceAnalysis&, std::vector<Finding>&) {}

}  // namespace ferret
