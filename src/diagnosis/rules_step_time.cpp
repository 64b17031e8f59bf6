// PLACEHOLDER: rules_step_time (to be written).
#include "diagnosis/rules.h"

namespace ferret {

void rules_step_time(const TraceAnalysis&, std::vector<Finding>&) {}

}  // namespace ferret
