// The one ranking and verdict policy of every path: one trace (diagnose), a job (diagnose_job)
// and NCCL logs (rules_nccl). docs/RULES.md#the-verdict describes it.
#pragma once

#include <string>
#include <vector>

#include "diagnosis/finding.h"

namespace ferret {

struct Verdict {
  bool bottleneck_found = false;
  std::string headline;  // "Input-bound: 33% of each 178 ms step waits ...; ... up to 1.50x faster."
  Dimension dimension = Dimension::kCompute;
  std::string finding_id;  // the top finding, empty when none
  double max_speedup = 1.0;
};

// Ranks findings in place: largest max_speedup first, then severity, then id; findings equal in
// all three keep their order.
void rank_findings(std::vector<Finding>& findings);

// The verdict among ranked findings: the first window finding if any (the window is not a steady
// state); else the first finding of medium or high severity that is not a symptom with one of its
// causes (rule_registry.h) also at medium or high severity. nullptr when no finding qualifies.
const Finding* pick_verdict(const std::vector<Finding>& ranked);

// Ranks the findings, moves the verdict to the front and puts a first fix on each symptom whose
// cause also fired, pointing at that cause. Returns the verdict (then findings.front()) or nullptr.
const Finding* rank_and_lead_with_verdict(std::vector<Finding>& findings);

// The verdict's finding id, dimension and gain bound; a window finding finds no bottleneck and
// bounds no gain. The caller writes the headline.
Verdict verdict_of(const Finding& verdict);

}  // namespace ferret
