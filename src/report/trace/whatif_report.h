// Renders `ferret whatif`: the predicted step time with the changes (text), or the ferret.whatif/1
// document (docs/CRITICAL_PATH.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/causal/whatif.h"
#include "model/trace_model.h"
#include "report/format.h"

namespace ferret {

nlohmann::ordered_json whatif_json(const TraceModel& model, const AnalysisContext& ctx, const WhatIfResult& r);
std::string whatif_text(const TraceModel& model, const AnalysisContext& ctx, const WhatIfResult& r,
                        const Style& style = {});

}  // namespace ferret
