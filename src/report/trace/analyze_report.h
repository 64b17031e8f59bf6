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
// The GPU timeline the reports show: HTA's definition when --timeline-definition hta asked for it.
const GpuTimelineResult& reported_timeline(const TraceAnalysis& analysis);

// Findings as every report shows them: numbered with severity, detail, evidence and fixes (text,
// `width` columns), a table plus fixes (Markdown), and one JSON object each.
// `with_rules` adds each finding's threshold and its source.
std::string findings_text(const std::vector<Finding>& findings, const Style& style, std::size_t width,
                          bool with_rules = false);
std::string findings_markdown(const std::vector<Finding>& findings, bool with_rules = false);
nlohmann::ordered_json finding_json(const Finding& finding);
// {"count": N, "spans_us": [[start, duration], ...]}: where a finding happens (its longest occurrences).
nlohmann::ordered_json occurrences_json(const Occurrences& occurrences);

}  // namespace ferret
