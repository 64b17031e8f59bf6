// PLACEHOLDER: rules_gpu_efficiency (to be written).
#include "diagnosis/rules.h"

namespace ferret {

void rules_gpu_efficiency(const TraceAnalysis&, std::vector<Finding>&) {}

}  // namespace ferret
