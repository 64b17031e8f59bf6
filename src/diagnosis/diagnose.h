// Diagnosis: every rule over one trace's analyses, findings ranked by what fixing them can gain,
// and a one-line verdict on top.
#pragma once

#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "diagnosis/finding.h"
#include "diagnosis/verdict.h"

namespace ferret {

struct Diagnosis {
  std::vector<Finding> findings;  // the verdict first, then ranked (verdict.h)
  Verdict verdict;
};

Diagnosis diagnose(const TraceAnalysis& analysis);

}  // namespace ferret
