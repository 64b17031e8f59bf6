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
  double predicted_speedup = -1;  // the top finding's what-if prediction, -1 when not predicted
};

// Severity bands of a gain bound, on the share of time the fix can win back (XProf's levels for
// time lost waiting: >= 20% high, >= 5% moderate; ferret's floor of 1% for low):
// high >= 1.25x, medium >= 1.0526x, low >= 1.0101x, info below.
Severity severity_of_gain(double max_speedup);

// Whether the finding bounds a gain: its max_speedup is above 1. A rule that measures no time
// its fix wins back (memory capacity, NCCL log findings) leaves it at 1 and keeps its own severity.
bool bounds_gain(const Finding& f);

// The gain a finding is ranked and graded by: its what-if prediction where the step graph could
// re-time its fix, else its bound (a cause the what-if cannot express: a setting, a transport).
double expected_speedup(const Finding& f);

// One finding per cause, in place: findings sharing a `cause` key keep the one with the larger
// gain; a rule with `same_cause_as` (rule_registry.h) folds into that rule's finding (evidence,
// detail, fixes); a symptom folds into a finding that explains it (evidence, detail). A symptom
// that stays alone gets, as its first fix, what to record next to find its cause.
void fold_findings(std::vector<Finding>& findings);

// Sets each finding's severity to its gain's band (windows and findings that bound no gain keep
// theirs) and ranks in place: window findings first, then severity, then expected_speedup, then
// max_speedup, then id;
// findings equal in all keep their order. Severities never increase along the result.
void rank_findings(std::vector<Finding>& findings);

// The verdict among ranked findings: the first, when it is a window finding or of medium or high
// severity; nullptr otherwise (no bottleneck: the findings are minor).
const Finding* pick_verdict(const std::vector<Finding>& ranked);

// fold_findings, rank_findings and pick_verdict: the verdict is findings.front(), or nullptr.
const Finding* rank_and_lead_with_verdict(std::vector<Finding>& findings);

// The verdict's finding id, dimension, gain bound and prediction; a window finding finds no
// bottleneck and bounds no gain. The caller writes the headline (headline_of for one trace).
Verdict verdict_of(const Finding& verdict);

// A trace's headline: the verdict's title and, where the what-if predicted it, the step speed-up
// its fix buys. The Amdahl bound is a ceiling, shown beside the finding, never here: a headline
// of "up to 100x" next to a prediction of 1.07x misleads.
std::string headline_of(const Finding& verdict, const Verdict& v);

}  // namespace ferret
