// PLACEHOLDER: rules_host (to be written).
#include "diagnosis/rules.h"

namespace ferret {

void rules_host(const TraceAnalysis&, std::vector<Finding>&) {}

}  // namespace ferret
