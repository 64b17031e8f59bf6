// Trace-to-trace comparison (`ferret diff BASE NEW`): two traces of the same job, before and after a
// change. Model -> plain result struct; rendering lives in report/diff_report.
//
// What is compared, each trace over its own analysed window (the selected complete steps, as
// `ferret analyze` sees them; docs/DIFF.md):
//   - step time: the per-step wall times of the step breakdown are the samples of
//     stats::compare_samples (medians, relative change, Hodges–Lehmann shift, bootstrap CI,
//     Mann–Whitney U). Fewer than kMinStepsForTest steps in either trace: no test is claimed.
//   - the breakdown categories, mean per step, absolute and relative;
//   - operators (cpu_op, by name; and by name + input shapes when both traces recorded shapes) and
//     GPU activities (kernels, memcpys, memsets, by name), each per step: added, removed, slower,
//     faster, ranked by the absolute change per step;
//   - diagnosis findings that appeared, were resolved, or persist (matched by cause);
//   - the CI gate (--fail-if-slower PCT).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "base/statistics.h"
#include "diagnosis/diagnose.h"

namespace ferret {

// Below this many steps in either trace the step-time test is not run: a rank test on one or two
// samples says nothing (issue: "fewer than ~3 steps"). Even at 3 against 3 the exact two-sided
// Mann–Whitney test cannot go below p = 2 / C(6, 3) = 0.1; the result says so (min_attainable_p).
inline constexpr std::size_t kMinStepsForTest = 3;

struct DiffOptions {
  AnalysisOptions analysis;  // --steps, --device: applied to both traces (its top_k is ignored)
  int top = 10;              // rows kept per list (added, removed, slower, faster)
  double alpha = stats::kDefaultAlpha;
  std::optional<double> fail_if_slower_pct;  // --fail-if-slower PCT; empty: no gate
};

// One trace's side of the comparison.
struct DiffSide {
  std::string source;
  bool has_steps = false;                        // false: one pseudo-step spans the whole trace
  std::int64_t first_step = -1, last_step = -1;  // ProfilerStep numbers of the window
  std::vector<double> step_ns;                   // per-step wall times, in time order (the samples)
  double mean_step_ns = 0;
  std::array<double, kStepCategoryCount> category_ns{};  // mean per step
  std::vector<std::string> notes;                        // ingest notes (e.g. an incomplete last step dropped)
  std::uint64_t repairs = 0, skips = 0;
  std::size_t findings = 0;
};

enum class StepVerdict : std::uint8_t {
  kTooFewSamples,        // a trace has fewer than kMinStepsForTest steps: no test
  kNoSignificantChange,  // p >= alpha (or no p-value)
  kSlower,               // significant, median went up
  kFaster,               // significant, median went down
};
const char* step_verdict_key(StepVerdict v);  // "too-few-samples", "no-significant-change", "slower", "faster"

struct StepTimeDiff {
  stats::Comparison comparison;  // a = base, b = new; run only when enough_samples
  bool enough_samples = false;
  double base_mean_ns = 0, new_mean_ns = 0;
  // Smallest two-sided p the exact U test can give for these sample sizes, 2 / C(n_a + n_b, n_a):
  // when it is >= alpha no change can be significant, whatever the data.
  double min_attainable_p = 1;
  StepVerdict verdict = StepVerdict::kTooFewSamples;
};

struct CategoryDiff {
  StepCategory category = StepCategory::kOther;
  double base_ns = 0, new_ns = 0;  // mean per step
  double delta_ns = 0;
  double relative = stats::kNaN;  // delta / base; NaN when base is 0
};

enum class ChangeKind : std::uint8_t { kAdded, kRemoved, kSlower, kFaster, kUnchanged };
const char* change_kind_key(ChangeKind c);  // "added", "removed", "slower", "faster", "unchanged"

// Which time an operator's change is measured in: the one of host self time and GPU self time
// (hot_spots.h) whose per-step change is larger in magnitude (GPU on a tie).
enum class TimeBasis : std::uint8_t { kDevice, kHost };
const char* time_basis_key(TimeBasis b);  // "device", "host"

// One operator name (or name + input shapes) in both traces. Every time is per step: the
// window's total divided by its step count (1 for a trace without steps).
struct OpDiff {
  std::string name;
  std::string input_dims, input_types;  // shape rows only
  ChangeKind change = ChangeKind::kUnchanged;
  TimeBasis basis = TimeBasis::kDevice;
  double base_calls = 0, new_calls = 0;  // per step
  double base_host_self_ns = 0, new_host_self_ns = 0;
  double base_device_self_ns = 0, new_device_self_ns = 0;
  double delta_ns = 0;            // change of the basis time, per step; the ranking key (by magnitude)
  double relative = stats::kNaN;  // delta / base basis time; NaN when that is 0
};

// One GPU activity name (kernel, memcpy or memset) in both traces, per step.
struct KernelDiff {
  std::string name;
  EventKind kind = EventKind::kKernel;
  ChangeKind change = ChangeKind::kUnchanged;
  double base_calls = 0, new_calls = 0;      // per step
  double base_ns = 0, new_ns = 0;            // total time per step
  double base_mean_ns = 0, new_mean_ns = 0;  // per call; 0 when absent
  double delta_ns = 0;
  double relative = stats::kNaN;
};

// Each list holds its top DiffOptions::top rows by |delta_ns| (ties by name); the counts are
// before that cut.
template <class Row>
struct ChangeLists {
  std::vector<Row> added, removed, slower, faster;
  std::size_t added_count = 0, removed_count = 0, slower_count = 0, faster_count = 0, unchanged_count = 0;
};

struct FindingChange {
  std::string cause;   // the match key: Finding::cause, or its id
  Finding base, next;  // empty (id "") on the side where it is absent
};

struct FindingsDiff {
  std::vector<Finding> appeared;          // in NEW only, in NEW's rank order
  std::vector<Finding> resolved;          // in BASE only, in BASE's rank order
  std::vector<FindingChange> persisting;  // in both, in NEW's rank order
};

struct GateResult {
  bool enabled = false;
  double threshold_pct = 0;
  bool failed = false;
  std::string reason;  // one sentence: why it passed or failed ("" when not enabled)
};

struct TraceDiff {
  DiffSide base, next;
  StepTimeDiff step_time;
  std::vector<CategoryDiff> categories;  // every category, in the breakdown's priority order
  bool shapes_compared = false;          // both traces recorded input shapes
  ChangeLists<OpDiff> ops;               // by name
  // By name + input shapes, for the operators seen with more than one shape group (in either
  // trace); empty unless shapes_compared.
  ChangeLists<OpDiff> op_shapes;
  ChangeLists<KernelDiff> kernels;
  FindingsDiff findings;
  GateResult gate;
  std::vector<std::string> warnings;  // comparability: different step counts, devices, ...

  int exit_code() const { return gate.failed ? 1 : 0; }
};

// Both models must hold something to analyse (see nothing_to_analyse).
TraceDiff diff_traces(const TraceModel& base, const TraceModel& next, const DiffOptions& options);

// The pieces, for tests.
StepTimeDiff diff_step_time(const std::vector<double>& base_ns, const std::vector<double>& new_ns, double alpha);
FindingsDiff diff_findings(const std::vector<Finding>& base, const std::vector<Finding>& next);
GateResult evaluate_gate(const StepTimeDiff& step_time, std::optional<double> fail_if_slower_pct);
double min_attainable_p(std::size_t n_a, std::size_t n_b);

}  // namespace ferret
