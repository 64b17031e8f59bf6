// Renders `ferret scaling`: text (80 columns), JSON (schema ferret.scaling/1, docs/DISTRIBUTED.md)
// and Markdown.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "job/scaling.h"

namespace ferret {

std::string scaling_text(const ScalingAnalysis& result);
nlohmann::ordered_json scaling_json(const ScalingAnalysis& result);
std::string scaling_markdown(const ScalingAnalysis& result);

}  // namespace ferret
