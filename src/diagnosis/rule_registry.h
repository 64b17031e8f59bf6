// The rule registry: one row per rule id that any path (one trace, a job, NCCL logs) emits, with
// what the verdict policy needs to know about it. Each rule file holds its own rows and says how
// to run them (a RuleFamily); the registry gathers the families the build finds. Policy decisions
// look rules up here instead of comparing id strings; docs/RULES.md lists the same rows (a test
// checks both ways).
#pragma once

#include <span>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "analysis/causal/whatif.h"
#include "diagnosis/finding.h"

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
  RuleRole role;
  // The symptoms this rule explains (kExplains* below): when it fires beside one of them, the
  // symptom is evidence inside it (its numbers and detail), not a finding of its own. A symptom may
  // explain another that it tells more precisely.
  std::span<const std::string_view> explains = {};
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

// The symptoms a cause can explain, named once. The device idles while the host works (a cause on
// the host's side explains both the low utilization and the CPU-bound step); the device idles with
// its work queued (only the low utilization); a job's communication stays exposed.
inline constexpr std::string_view kExplainsIdleHost[] = {"low-gpu-utilization", "cpu-bound"};
inline constexpr std::string_view kExplainsIdleDevice[] = {"low-gpu-utilization"};
inline constexpr std::string_view kExplainsExposedJobCommunication[] = {"job-exposed-communication"};

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
constexpr RuleInfo explaining(std::span<const std::string_view> symptoms, RuleInfo r) {
  r.explains = symptoms;
  return r;
}

// How a family's rules are run: on one kind of input (a TraceAnalysis, a JobAnalysis, an
// NcclSetup, ...), whose type the family records so that run_rule_families() calls it only with
// that input.
struct RuleRun {
  const std::type_info* input = nullptr;
  void (*call)(const void* input, std::vector<Finding>& out) = nullptr;
};

template <class Rules>
struct RuleInputOf;
template <class Input>
struct RuleInputOf<void (*)(const Input&, std::vector<Finding>&)> {
  using type = Input;
};

// The run of a family whose rules are `void Rules(const Input&, std::vector<Finding>&)`.
template <auto Rules>
RuleRun rule_run() {
  using Input = typename RuleInputOf<decltype(Rules)>::type;
  return {&typeid(Input),
          [](const void* input, std::vector<Finding>& out) { Rules(*static_cast<const Input*>(input), out); }};
}

// When a family runs: with the others, or only when no finding is the verdict (an informational
// finding that names the largest cost, so that no report reads as "nothing costs anything").
enum class RulePhase { kMain, kNoVerdict };

// One rule file's rules: their rows and how to run them. A rule file declares its family with
// FERRET_RULE_FAMILY(symbol) at namespace ferret; the build lists every family it finds in the
// rules_*.cpp files (cmake/rule_families.cmake), so adding a rule file adds its rules with no
// other file touched.
struct RuleFamily {
  std::string_view name;  // the function that evaluates the rules, as docs/RULES.md names it
  // Where the family runs among those of its input, ascending: order matters only where a family
  // reads earlier findings (host-preprocessing annotates the findings where the device waits on
  // the host, so it runs after them).
  int order;
  std::span<const RuleInfo> rules;
  RuleRun run = {};
  RulePhase phase = RulePhase::kMain;
};

#define FERRET_RULE_FAMILY(symbol)                        \
  extern const ::ferret::RuleFamily kRuleFamily_##symbol; \
  const ::ferret::RuleFamily kRuleFamily_##symbol

// Every registered row, family by family (in run order within each input).
std::span<const RuleInfo> rule_registry();
std::span<const RuleFamily* const> rule_families();  // ordered by (input, order)
const RuleInfo* find_rule(std::string_view id);      // nullptr for an id not in the table
// Whether `rule` explains `symptom_id`; the ids of the rules that explain a symptom, in registry order.
bool explains(const RuleInfo& rule, std::string_view symptom_id);
std::span<const std::string_view> causes_of(std::string_view symptom_id);
// A finding of a registered rule, with what its row says (id, dimension, cause key); the rule fills in the
// rest. An id not in the table is a programming error: std::logic_error.
Finding finding_for(std::string_view id);
const char* rule_role_name(RuleRole r);  // "cause", "symptom", "window"

// Runs, in order, the families whose rules read an `Input`, in the given phase.
template <class Input>
void run_rule_families(const Input& input, std::vector<Finding>& out, RulePhase phase = RulePhase::kMain) {
  for (const RuleFamily* family : rule_families())
    if (family->run.call != nullptr && family->phase == phase && *family->run.input == typeid(Input))
      family->run.call(&input, out);
}

}  // namespace ferret
