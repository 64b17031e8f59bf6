// Diagnosis: every rule over one trace's analyses, findings ranked by what fixing them can gain,
// and a one-line verdict on top.
#pragma once

#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "diagnosis/finding.h"

namespace ferret {

struct Verdict {
  bool bottleneck_found = false;
  std::string headline;  // "Input-bound: 33% of each 178 ms step waits ...; ... up to 1.50x faster."
  Dimension dimension = Dimension::kCompute;
  std::string finding_id;  // the top finding, empty when none
  double max_speedup = 1.0;
};

struct Diagnosis {
  std::vector<Finding> findings;  // ranked: largest max_speedup first, then severity
  Verdict verdict;
};

Diagnosis diagnose(const TraceAnalysis& analysis);

// Ranks findings in place (exposed for tests).
void rank_findings(std::vector<Finding>& findings);

}  // namespace ferret
