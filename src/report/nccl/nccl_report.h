// Renders `ferret nccl`: a human report (80 columns, colour on a terminal), the JSON document
// (schema ferret.nccl/1, docs/NCCL.md) and Markdown with log text escaped. Rendering only: the
// numbers come from analysis/nccl_setup and diagnosis/rules_nccl.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/nccl/nccl_setup.h"
#include "diagnosis/finding.h"
#include "report/format.h"

namespace ferret {

// A log that could not be read at all (the CLI names it; the report lists it).
struct NcclInputError {
  std::string source;
  std::string error;
};

std::string nccl_text(const NcclSetup& setup, const std::vector<Finding>& findings,
                      const std::vector<NcclInputError>& errors, const Style& style);
nlohmann::ordered_json nccl_json(const NcclSetup& setup, const std::vector<Finding>& findings,
                                 const std::vector<NcclInputError>& errors);
std::string nccl_markdown(const NcclSetup& setup, const std::vector<Finding>& findings,
                          const std::vector<NcclInputError>& errors);

}  // namespace ferret
