#include "diagnosis/verdict.h"

#include <algorithm>

#include <fmt/format.h>

#include "diagnosis/rule_registry.h"

namespace ferret {

void rank_findings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.max_speedup != b.max_speedup) return a.max_speedup > b.max_speedup;
    if (a.severity != b.severity) return static_cast<int>(a.severity) > static_cast<int>(b.severity);
    return a.id < b.id;
  });
}

namespace {

bool explains(const RuleInfo& symptom, const Finding& f) {
  return std::find(symptom.explained_by.begin(), symptom.explained_by.end(), f.id) != symptom.explained_by.end();
}

// A symptom whose cause also fired says so first: fixing the cause is what removes it. The cause
// named is the highest-ranked one, the largest part of the symptom it explains.
void point_symptoms_at_causes(std::vector<Finding>& findings) {
  for (Finding& symptom : findings) {
    const RuleInfo* rule = find_rule(symptom.id);
    if (rule == nullptr || rule->role != RuleRole::kSymptom) continue;
    auto cause = std::find_if(findings.begin(), findings.end(), [&](const Finding& f) { return explains(*rule, f); });
    if (cause == findings.end()) continue;
    symptom.fixes.insert(symptom.fixes.begin(),
                         fmt::format("First fix its cause, finding {} ({}): the fixes below are for what remains.",
                                     cause->id, cause->title));
  }
}

}  // namespace

const Finding* pick_verdict(const std::vector<Finding>& ranked) {
  auto role = [](const Finding& f) {
    const RuleInfo* rule = find_rule(f.id);
    return rule != nullptr ? rule->role : RuleRole::kCause;
  };
  for (const Finding& f : ranked)
    if (role(f) == RuleRole::kWindow) return &f;
  auto significant = [](const Finding& f) { return f.severity >= Severity::kMedium; };
  auto significant_cause_fired = [&](const Finding& symptom) {
    const RuleInfo& rule = *find_rule(symptom.id);
    return std::any_of(ranked.begin(), ranked.end(),
                       [&](const Finding& f) { return significant(f) && explains(rule, f); });
  };
  for (const Finding& f : ranked)
    if (significant(f) && (role(f) != RuleRole::kSymptom || !significant_cause_fired(f))) return &f;
  return nullptr;
}

const Finding* rank_and_lead_with_verdict(std::vector<Finding>& findings) {
  rank_findings(findings);
  point_symptoms_at_causes(findings);
  const Finding* verdict = pick_verdict(findings);
  if (verdict == nullptr) return nullptr;
  const auto at = findings.begin() + (verdict - findings.data());
  std::rotate(findings.begin(), at, at + 1);
  return &findings.front();
}

Verdict verdict_of(const Finding& verdict) {
  const RuleInfo* rule = find_rule(verdict.id);
  const bool window = rule != nullptr && rule->role == RuleRole::kWindow;
  Verdict v;
  v.bottleneck_found = !window;
  v.dimension = verdict.dimension;
  v.finding_id = verdict.id;
  v.max_speedup = window ? 1.0 : verdict.max_speedup;
  return v;
}

}  // namespace ferret
