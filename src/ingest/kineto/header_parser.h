// Trace-level facts from the root object's keys other than traceEvents: device properties,
// distributed info, versions and profiler settings. Values arrive as raw JSON text (small).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/trace_model.h"

namespace ferret {

void parse_header(const std::vector<std::pair<std::string, std::string>>& header, TraceInfo& info,
                  IngestReport& report);

}  // namespace ferret
