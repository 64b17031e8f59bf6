// Renders the cross-rank report of `ferret analyze` on several ranks of one job: text (80
// columns), JSON (schema ferret.job/1, docs/DISTRIBUTED.md) and Markdown. It reads only the
// JobAnalysis and JobDiagnosis, so the report is the same however the ranks were analysed.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "job/job_analysis.h"
#include "job/job_diagnosis.h"
#include "report/format.h"

namespace ferret {

// Ranks in the text and Markdown tables before they are cut to the slowest, fastest and median
// ones (the JSON always has every rank).
inline constexpr std::size_t kJobTableRanks = 24;

std::string job_text(const JobAnalysis& job, const JobDiagnosis& diagnosis, const Style& style);
nlohmann::ordered_json job_json(const JobAnalysis& job, const JobDiagnosis& diagnosis);
std::string job_markdown(const JobAnalysis& job, const JobDiagnosis& diagnosis);

}  // namespace ferret
