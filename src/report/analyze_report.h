// Renders `ferret analyze`: a human report (80 columns, colour on a terminal), the JSON
// document (schema ferret.analysis/1, docs/ANALYSIS_JSON.md) and Markdown for pull requests.
// Renderers only format what the analyses and the diagnosis computed.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "report/format.h"

namespace ferret {

std::string analyze_text(const TraceAnalysis& analysis, const Diagnosis& diagnosis, const Style& style);
nlohmann::ordered_json analyze_json(const TraceAnalysis& analysis, const Diagnosis& diagnosis);
std::string analyze_markdown(const TraceAnalysis& analysis, const Diagnosis& diagnosis);

}  // namespace ferret
