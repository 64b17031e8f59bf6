// Renders `ferret info`: a human summary or the documented JSON document (docs/JSON.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/timeline/trace_summary.h"
#include "model/trace_model.h"

namespace ferret {

nlohmann::ordered_json info_json(const TraceModel& model, const TraceSummary& summary);
std::string info_text(const TraceModel& model, const TraceSummary& summary);

}  // namespace ferret
