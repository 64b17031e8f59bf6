// The rule registry: one row per rule id that any path (one trace, a job, NCCL logs) emits, with
// what the verdict policy needs to know about it. Policy decisions look rules up here instead of
// comparing id strings; docs/RULES.md lists the same rows (a test checks both ways).
#pragma once

#include <span>
#include <string_view>

#include "analysis/causal/whatif.h"
#include "diagnosis/finding.h"
#include "diagnosis/rules.h"

namespace ferret {

// Which inputs the rule reads: one trace (`ferret analyze`), all ranks of a job, NCCL logs, an
// allocator snapshot (`ferret memory`; oom-* read out-of-memory messages in text too), only
// memory text (memory_summary() tables, out-of-memory messages: `ferret memory LOG`), GPU
// utilisation logs (`ferret smi`), or a watched command's samples (`ferret watch`).
enum class RuleSource { kTrace, kJob, kNccl, kSnapshot, kMemoryText, kSmi, kWatch };

// What a rule's finding means for the verdict (docs/RULES.md#the-verdict).
enum class RuleRole {
  kCause,    // names why time is lost: a verdict candidate
  kSymptom,  // says that time is lost, not why: folds into any of its causes that also fired
  kWindow,   // the window is not a steady state: leads and is the verdict, with no bottleneck
};

struct RuleInfo {
  std::string_view id;
  RuleSource source;
  Dimension dimension;
  std::string_view function;  // the function that evaluates it (the family, when one emits several ids)
  RuleRole role;
  // For a symptom: the ids that explain it, in order of preference; when one fired, the symptom is
  // evidence inside it (its numbers and detail), not a finding of its own.
  std::span<const std::string_view> explained_by;
  // For a cause that another rule measures more precisely: that rule's id. When both fire they are
  // one finding under that id, with this one's evidence, detail and fixes folded in.
  std::string_view same_cause_as = {};
  // For a symptom: what to record next to find its cause, the first fix when no cause fired.
  std::string_view record_next = {};
  // For a symptom whose fixes act on it directly (overlap hides exposed communication whatever its
  // cause): folded into its cause, it brings its fixes and its gain bound along.
  bool own_fixes = false;
  // The what-if change that removes the cause (`ferret whatif` re-times the steps without it): the
  // predicted gain of the finding. nullptr: the rule states its fix's change itself (Finding::fix).
  bool RetimeChanges::*removal = nullptr;
  // The device waits on the host's own work: the Python frames that hold the host are its evidence.
  bool waits_on_host = false;
  // The device idles with its work queued: the host is not what it waits for.
  bool device_stalled = false;
  // Rules that judge one cause from different angles share this key (Finding::cause): the verdict
  // keeps the finding with the larger gain and folds the other into it. Empty: the id.
  std::string_view cause_key = {};
};

// Row builders for what most rows leave at their defaults.
constexpr RuleInfo removes(RuleInfo r, bool RetimeChanges::*change) {
  r.removal = change;
  return r;
}
constexpr RuleInfo judging(std::string_view cause_key, RuleInfo r) {
  r.cause_key = cause_key;
  return r;
}
constexpr RuleInfo waiting_on_host(RuleInfo r) {
  r.waits_on_host = true;
  return r;
}

std::span<const RuleInfo> rule_registry();

// The groups of one-trace rules, in the order diagnose() runs them; a row's `function` names the
// group that emits it. Order matters only where a group reads earlier findings (rules_host runs
// rules_host_preprocessing last, which annotates the findings where the device waits on the host).
struct TraceRuleGroup {
  std::string_view name;
  void (*run)(const TraceAnalysis&, std::vector<Finding>&);
};
std::span<const TraceRuleGroup> trace_rule_groups();
const RuleInfo* find_rule(std::string_view id);  // nullptr for an id not in the table
// A finding of a registered rule, with what its row says (id, dimension, cause key); the rule fills in the
// rest. An id not in the table is a programming error: std::logic_error.
Finding finding_for(std::string_view id);
const char* rule_role_name(RuleRole r);  // "cause", "symptom", "window"

}  // namespace ferret
