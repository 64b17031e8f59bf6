// Renders `ferret smi`: per GPU busy (mean, p5/p50/p95), idle periods, SM and Tensor activity,
// memory and power headroom, throttling, the trace window against the run, and the findings; as
// text, Markdown (log text escaped) and JSON (schema ferret.smi/1, docs/SMI.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/smi/smi_stats.h"
#include "diagnosis/finding.h"
#include "report/format.h"

namespace ferret {

struct SmiInputError {
  std::string source;
  std::string message;
};

struct SmiReportInput {
  const SmiLog& log;
  const SmiStats& stats;
  const std::vector<Finding>& findings;
  std::vector<SmiInputError> errors;
};

std::string smi_text(const SmiReportInput& in, const Style& style);
std::string smi_markdown(const SmiReportInput& in);
nlohmann::ordered_json smi_json(const SmiReportInput& in);

}  // namespace ferret
