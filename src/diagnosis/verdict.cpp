#include "diagnosis/verdict.h"

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "diagnosis/rule_registry.h"

namespace ferret {

namespace {

// The bands' shares of time the fix wins back: Amdahl 1 / (1 - share). XProf grades time lost
// waiting (input, launch overhead) as high from 20% and moderate from 5%; below 1% no fix is worth
// a user's time (ferret's floor, as in the host rules).
constexpr double kHighShare = 0.20, kMediumShare = 0.05, kLowShare = 0.01;

RuleRole role_of(const Finding& f) {
  const RuleInfo* rule = find_rule(f.id);
  return rule != nullptr ? rule->role : RuleRole::kCause;
}

const std::string& cause_key(const Finding& f) { return f.cause.empty() ? f.id : f.cause; }

void add_evidence(Finding& into, const Finding& from) {
  for (const Evidence& e : from.evidence)
    if (std::none_of(into.evidence.begin(), into.evidence.end(), [&](const Evidence& x) { return x.name == e.name; }))
      into.evidence.push_back(e);
}

void add_fixes(Finding& into, const Finding& from) {
  for (const Fix& fix : from.fixes) {
    const auto same = std::find(into.fixes.begin(), into.fixes.end(), fix);
    if (same == into.fixes.end()) {
      into.fixes.push_back(fix);
      continue;
    }
    for (const std::string& b : fix.because) add_because(*same, b);
  }
}

// The fixes left out of a folded finding go with its detail, which counts them.
void add_left_out(Finding& into, const Finding& from) {
  for (const Finding::LeftOut& l : from.fixes_left_out)
    if (std::none_of(into.fixes_left_out.begin(), into.fixes_left_out.end(),
                     [&](const Finding::LeftOut& x) { return x.fix == l.fix; }))
      into.fixes_left_out.push_back(l);
}

// A finding that says where its cause happens keeps its own places; one that does not takes those
// of what folds into it.
void add_where(Finding& into, const Finding& from) {
  if (into.where.count == 0) into.where = from.where;
}

// Appends a folded finding's detail. Sentences findings of one cause share are Finding::Notes,
// written once after folding, so details themselves never repeat each other.
void add_detail(Finding& into, const std::string& detail) {
  if (detail.empty()) return;
  into.detail += into.detail.empty() ? detail : " " + detail;
}

// A finding merges by key when its rule names the key, or when it reads one trace (one id, one
// cause: a rule that fires per device). Job and NCCL findings of one id have different subjects
// (several missing-rank groups, one straggler per rank) and stay apart unless keyed.
bool merges_by_key(const Finding& f) {
  const RuleInfo* rule = find_rule(f.id);
  return !f.cause.empty() || (rule != nullptr && rule->source == RuleSource::kTrace);
}

// Findings sharing a cause key: the one with the larger gain stays (the first on a tie).
void merge_same_cause_key(std::vector<Finding>& findings) {
  std::vector<Finding> kept;
  for (Finding& f : findings) {
    auto same = std::find_if(kept.begin(), kept.end(), [&](const Finding& k) {
      return merges_by_key(f) && merges_by_key(k) && cause_key(k) == cause_key(f);
    });
    if (same == kept.end()) {
      kept.push_back(std::move(f));
      continue;
    }
    if (expected_speedup(f) > expected_speedup(*same)) std::swap(*same, f);
    add_evidence(*same, f);
    same->notes |= f.notes;
    add_fixes(*same, f);
    add_left_out(*same, f);
    add_where(*same, f);
  }
  findings = std::move(kept);
}

// A symptom is explained when the causes that fired cover at least half of its time (ferret's: then
// most of the lost time has a named cause). A cause that measures no time (a slow transport) is
// taken to explain all of it. Below half, the symptom stands for the unexplained rest.
constexpr double kExplainedShare = 0.5;
// A prediction below this is no gain: the 1.00x of the reports.
constexpr double kNoPredictedGain = 1.005;

// Whether the finding's rule explains the symptom.
bool explains_symptom(const Finding& f, const RuleInfo& symptom) {
  const RuleInfo* rule = find_rule(f.id);
  return rule != nullptr && explains(*rule, symptom.id);
}

// The finding `i` folds into, by index, or npos: for a cause, the more precise rule of the same
// cause; for a symptom its explaining cause with the largest gain when the causes explain it, else
// an explaining symptom (told more precisely) that covers half of it.
std::size_t fold_target(const std::vector<Finding>& findings, std::size_t i) {
  const RuleInfo* rule = find_rule(findings[i].id);
  if (rule == nullptr) return std::string::npos;
  if (!rule->same_cause_as.empty()) {
    for (std::size_t j = 0; j < findings.size(); ++j)
      if (findings[j].id == rule->same_cause_as) return j;
    return std::string::npos;
  }
  if (rule->role != RuleRole::kSymptom) return std::string::npos;
  const double needed = kExplainedShare * findings[i].time_share;
  std::size_t cause = std::string::npos, symptom = std::string::npos;
  double covered = 0;
  for (std::size_t j = 0; j < findings.size(); ++j) {
    const Finding& f = findings[j];
    if (j == i || !explains_symptom(f, *rule)) continue;
    if (role_of(f) == RuleRole::kSymptom) {
      if (f.time_share >= needed &&
          (symptom == std::string::npos || expected_speedup(f) > expected_speedup(findings[symptom])))
        symptom = j;
      continue;
    }
    // A cause whose fix the what-if re-timed to no shorter step does not explain why the device
    // idles: the step waits on something else.
    if (f.predicted_speedup > 0 && f.predicted_speedup < kNoPredictedGain) continue;
    covered += bounds_gain(f) ? f.time_share : 1.0;
    if (cause == std::string::npos || expected_speedup(f) > expected_speedup(findings[cause])) cause = j;
  }
  if (cause != std::string::npos && covered >= needed) return cause;
  return symptom;
}

// A symptom left standing beside causes that explain part of it says how much they explain.
void note_partial_causes(Finding& symptom, const RuleInfo& rule, const std::vector<Finding>& kept) {
  std::string ids;
  double covered = 0;
  for (const Finding& f : kept) {
    if (!explains_symptom(f, rule) || role_of(f) == RuleRole::kSymptom) continue;
    ids += (ids.empty() ? "" : ", ") + f.id;
    covered += f.time_share;
  }
  if (ids.empty()) return;
  add_detail(symptom, fmt::format("Findings {} explain {:.0f}% of the time against {:.0f}% here; the rest has no "
                                  "named cause.",
                                  ids, 100 * covered, 100 * symptom.time_share));
}

}  // namespace

Severity severity_of_gain(double max_speedup) {
  if (max_speedup >= 1.0 / (1.0 - kHighShare)) return Severity::kHigh;
  if (max_speedup >= 1.0 / (1.0 - kMediumShare)) return Severity::kMedium;
  if (max_speedup >= 1.0 / (1.0 - kLowShare)) return Severity::kLow;
  return Severity::kInfo;
}

bool bounds_gain(const Finding& f) { return f.max_speedup > 1.0; }

double expected_speedup(const Finding& f) { return f.predicted_speedup > 0 ? f.predicted_speedup : f.max_speedup; }

void fold_findings(std::vector<Finding>& findings) {
  merge_same_cause_key(findings);
  const std::size_t n = findings.size();
  std::vector<std::size_t> target(n);
  for (std::size_t i = 0; i < n; ++i) target[i] = fold_target(findings, i);
  // Follow chains (low utilization -> cpu-bound -> launch-bound) to the finding that stays; a
  // chain longer than the findings is a cycle in the registry, and then nothing folds.
  std::vector<std::size_t> final_target(n, std::string::npos);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t t = target[i];
    for (std::size_t hops = 0; t != std::string::npos && target[t] != std::string::npos; ++hops) {
      if (hops > n) {
        t = std::string::npos;
        break;
      }
      t = target[t];
    }
    final_target[i] = t == i ? std::string::npos : t;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (final_target[i] == std::string::npos) continue;
    Finding& into = findings[final_target[i]];
    const Finding& from = findings[i];
    add_evidence(into, from);
    add_where(into, from);
    add_detail(into, from.detail);
    into.notes |= from.notes;
    add_left_out(into, from);
    // The same cause from another angle brings its fixes; a symptom's fixes are guesses its cause
    // replaces, unless they act on the symptom itself: then they come along, and the finding's
    // bound is the larger of the two fixes' bounds.
    const RuleInfo* rule = find_rule(from.id);
    if (role_of(from) != RuleRole::kSymptom) add_fixes(into, from);
    if (rule != nullptr && rule->own_fixes) {
      add_fixes(into, from);
      if (from.max_speedup > into.max_speedup) {
        into.max_speedup = from.max_speedup;
        into.time_share = from.time_share;
      }
      if (from.predicted_speedup > into.predicted_speedup) into.predicted_speedup = from.predicted_speedup;
    }
  }
  std::vector<Finding> kept;
  for (std::size_t i = 0; i < n; ++i)
    if (final_target[i] == std::string::npos) kept.push_back(std::move(findings[i]));
  for (Finding& f : kept) {
    const RuleInfo* rule = find_rule(f.id);
    if (rule == nullptr || rule->role != RuleRole::kSymptom) continue;
    note_partial_causes(f, *rule, kept);
    if (!rule->record_next.empty()) f.fixes.insert(f.fixes.begin(), std::string(rule->record_next));
  }
  findings = std::move(kept);
}

void rank_findings(std::vector<Finding>& findings) {
  // A window that is not a steady state (capture, initialisation) gives the other findings nothing
  // to gain in the steady state (docs/RULES.md, "The window comes first"): bound and prediction 1.
  const bool window_verdict =
      std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return role_of(f) == RuleRole::kWindow; });
  if (window_verdict)
    for (Finding& f : findings)
      if (role_of(f) != RuleRole::kWindow) {
        f.max_speedup = 1.0;  // the time share stays: it still says where this window's time went
        if (f.predicted_speedup > 0) f.predicted_speedup = 1.0;
      }
  for (Finding& f : findings)
    if (role_of(f) != RuleRole::kWindow && bounds_gain(f)) f.severity = severity_of_gain(expected_speedup(f));
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    const bool wa = role_of(a) == RuleRole::kWindow, wb = role_of(b) == RuleRole::kWindow;
    if (wa != wb) return wa;
    if (a.severity != b.severity) return static_cast<int>(a.severity) > static_cast<int>(b.severity);
    if (expected_speedup(a) != expected_speedup(b)) return expected_speedup(a) > expected_speedup(b);
    if (a.max_speedup != b.max_speedup) return a.max_speedup > b.max_speedup;
    return a.id < b.id;
  });
}

const Finding* pick_verdict(const std::vector<Finding>& ranked) {
  if (ranked.empty()) return nullptr;
  const Finding& first = ranked.front();
  if (role_of(first) == RuleRole::kWindow || first.severity >= Severity::kMedium) return &first;
  return nullptr;
}

const Finding* rank_and_lead_with_verdict(std::vector<Finding>& findings) {
  fold_findings(findings);
  rank_findings(findings);
  return pick_verdict(findings);
}

Verdict verdict_of(const Finding& verdict) {
  const bool window = role_of(verdict) == RuleRole::kWindow;
  Verdict v;
  v.bottleneck_found = !window;
  v.dimension = verdict.dimension;
  v.finding_id = verdict.id;
  v.max_speedup = window ? 1.0 : verdict.max_speedup;
  v.predicted_speedup = window ? -1 : verdict.predicted_speedup;
  return v;
}

std::string headline_of(const Finding& verdict, const Verdict& v) {
  if (!v.bottleneck_found || v.predicted_speedup <= 0) return verdict.title + ".";
  if (v.predicted_speedup < 1.005)
    return fmt::format("{}; the what-if predicts no shorter step from fixing it alone.", verdict.title);
  return fmt::format("{}; fixing it is predicted to make steps {:.2f}x faster.", verdict.title, v.predicted_speedup);
}

}  // namespace ferret
