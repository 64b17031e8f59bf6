// Renders `ferret diff`: a human report (80 columns, colour on a terminal), the JSON document
// (schema ferret.diff/2, docs/DIFF.md) and Markdown for pull requests (all trace text escaped).
// Renderers only format what bench/trace_diff computed.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "diff/trace_diff.h"
#include "report/format.h"

namespace ferret {

std::string diff_text(const TraceDiff& diff, const Style& style);
nlohmann::ordered_json diff_json(const TraceDiff& diff);
std::string diff_markdown(const TraceDiff& diff);

// The one-line summary of the step-time comparison that heads every format, e.g.
// "Step time: significantly slower, +20.0% (median 10.000 ms -> 12.000 ms)".
std::string diff_headline(const TraceDiff& diff);

}  // namespace ferret
