// PLACEHOLDER: rules_data_pipeline (to be written).
#include "diagnosis/rules.h"

namespace ferret {

void rules_data_pipeline(const TraceAnalysis&, std::vector<Finding>&) {}

}  // namespace ferret
