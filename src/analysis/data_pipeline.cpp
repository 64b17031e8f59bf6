// PLACEHOLDER: the data_pipeline analysis (to be written).
#include "analysis/data_pipeline.h"

namespace ferret {

DataPipelineResult analyze_data_pipeline(const TraceModel&, const AnalysisContext&) { return {}; }

}  // namespace ferret
