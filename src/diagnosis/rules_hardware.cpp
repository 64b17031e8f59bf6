// PLACEHOLDER: rules_hardware (to be written).
#include "diagnosis/rules.h"

namespace ferret {

void rules_hardware(const TraceAnalysis&, std::vector<Finding>&) {}

}  // namespace ferret
