// PLACEHOLDER: the data_pipeline analysis (to be written).
#pragma once

#include "analysis/analysis.h"

namespace ferret {

struct DataPipelineResult {};

DataPipelineResult analyze_data_pipeline(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
