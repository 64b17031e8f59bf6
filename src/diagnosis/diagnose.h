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

// The what-if change of a finding's fix (Finding::fix, and the removal its id names for input-bound,
// host-sync, sync-copy, launch-bound and exposed-communication): what `predicted_speedup` re-timed,
// and `ferret whatif --fix ID` re-times. Changes nothing for a finding whose fix it cannot express.
RetimeChanges fix_change_of(const Finding& f);

}  // namespace ferret
