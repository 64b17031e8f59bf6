// The roofline (analysis/operator/roofline.h) as the analyze report shows it: JSON `traces[].roofline`
// (docs/ANALYSIS_JSON.md) and the "Operators against the roofline" table of the top groups by
// kernel time in text and Markdown.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/operator/roofline.h"
#include "report/format.h"

namespace ferret {

nlohmann::ordered_json roofline_json(const RooflineResult& roofline);
// "" when no group has GPU time. `top` rows at most.
std::string roofline_text(const RooflineResult& roofline, std::size_t top, const Style& style);
std::string roofline_markdown(const RooflineResult& roofline, std::size_t top);

}  // namespace ferret
