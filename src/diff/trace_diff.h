// Trace-to-trace comparison (`ferret diff BASE NEW`): two traces of the same job, before and after a
// change. Model -> plain result struct; rendering lives in report/diff_report.
//
// What is compared, each trace over its own analysed window (the selected complete steps, as
// `ferret analyze` sees them; docs/DIFF.md):
//   - step time: the per-step wall times of the step breakdown are the samples of
//     stats::compare_samples. "The change" is one statistic everywhere: the Hodges–Lehmann shift
//     (median of the pairwise differences NEW step - BASE step) over BASE's median step, with its
//     distribution-free confidence interval; the Mann–Whitney U test decides "significant"; the
//     mean is shown beside it, labelled. Fewer than kMinStepsForTest steps in either trace: no
//     test is claimed.
//   - the breakdown categories, mean per step, absolute and relative;
//   - operators (cpu_op, by name; and by name + input shapes when both traces recorded shapes) and
//     GPU activities (kernels, memcpys, memsets, by name), each per step: added, removed, slower,
//     faster, ranked by the absolute change per step. A name only in BASE and one only in NEW that
//     agree after normalisation (normalized_span_name) are one renamed row. A row is listed only
//     when its change is at least the floor and significant over the steps (Mann–Whitney on the
//     per-step values, Benjamini–Hochberg over the rows above the floor); the rest is counted;
//   - diagnosis findings that appeared, were resolved, or persist (matched by cause);
//   - the CI gate (--fail-if-slower PCT): pass, fail or inconclusive.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/trace_analysis.h"
#include "base/statistics.h"
#include "diagnosis/diagnose.h"

namespace ferret {

// Below this many steps in either trace the step-time test is not run: a rank test on one or two
// samples says nothing (issue: "fewer than ~3 steps"). Even at 3 against 3 the exact two-sided
// Mann–Whitney test cannot go below p = 2 / C(6, 3) = 0.1; the result says so (min_attainable_p).
inline constexpr std::size_t kMinStepsForTest = 3;

// A row's change is listed only when it is at least this share of BASE's median step time (and
// at least kRowFloorMinNs): smaller changes cannot move the step time by a share worth acting on.
// 1%: the threshold the issue proposes; a tenth of the 10% IQR/median noise level that
// base/statistics.h calls noisy.
inline constexpr double kRowFloorShare = 0.01;
inline constexpr double kRowFloorMinNs = 1000;  // 1 us: below the profiler's timestamp resolution in old traces
// Per-row tests read one hot-spot pass per step; beyond this many steps in a trace the rows are
// listed untested (bounded cost on long traces).
inline constexpr std::size_t kMaxStepsForRowTests = 256;
// Power asked of the "how many steps would settle it" calculation (the usual 80%, Cohen 1988).
inline constexpr double kGatePower = 0.8;
// Exit status of an inconclusive gate (1 is a failed gate, 2 unusable input or usage).
inline constexpr int kExitGateFailed = 1;
inline constexpr int kExitGateInconclusive = 3;

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
  // a = base, b = new. With enough_samples: stats::compare_samples. Without: the medians, the
  // Hodges–Lehmann shift and relative_shift only (no test, no interval).
  stats::Comparison comparison;
  bool enough_samples = false;
  double spread_ns = stats::kNaN;  // stats::pooled_stddev of the steps (NaN with fewer than 3 steps in all)
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

// The row-level test: per-step values of the row's basis time in each trace.
struct RowTest {
  bool above_floor = false;  // |delta_ns| >= the list's floor_ns
  bool tested = false;       // the list is tested (ChangeLists::tested) and the row is above the floor
  double p_value = stats::kNaN;
  bool significant = false;  // survives Benjamini–Hochberg at alpha among the tested rows of its list
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
  std::string name;                     // NEW's name (BASE's when removed)
  std::string matched_from;             // BASE's name when it differs: matched by normalized_span_name
  std::string input_dims, input_types;  // shape rows only
  ChangeKind change = ChangeKind::kUnchanged;
  TimeBasis basis = TimeBasis::kDevice;
  double base_calls = 0, new_calls = 0;  // per step
  double base_host_self_ns = 0, new_host_self_ns = 0;
  double base_device_self_ns = 0, new_device_self_ns = 0;
  double delta_ns = 0;            // change of the basis time, per step; the ranking key (by magnitude)
  double relative = stats::kNaN;  // delta / base basis time; NaN when that is 0
  RowTest test;
};

// One GPU activity name (kernel, memcpy or memset) in both traces, per step.
struct KernelDiff {
  std::string name;
  std::string matched_from;  // as OpDiff
  EventKind kind = EventKind::kKernel;
  ChangeKind change = ChangeKind::kUnchanged;
  double base_calls = 0, new_calls = 0;      // per step
  double base_ns = 0, new_ns = 0;            // total time per step
  double base_mean_ns = 0, new_mean_ns = 0;  // per call; 0 when absent
  double delta_ns = 0;
  double relative = stats::kNaN;
  RowTest test;
};

// Each list holds its top DiffOptions::top listed rows by |delta_ns| (ties by name). A row is
// listed when its change is at least floor_ns and, when the list is tested, significant; the
// counts cover every row (listed or not), before the cut.
template <class Row>
struct ChangeLists {
  std::vector<Row> added, removed, slower, faster;
  std::size_t added_count = 0, removed_count = 0, slower_count = 0, faster_count = 0, unchanged_count = 0;
  double floor_ns = 0;
  // Both traces have at least kMinStepsForTest (and at most kMaxStepsForRowTests) steps: rows are
  // tested. Otherwise rows above the floor are listed without a test.
  bool tested = false;
  std::size_t listed = 0;           // rows listed, before the --top cut
  std::size_t below_floor = 0;      // changed rows under the floor (not listed)
  std::size_t not_significant = 0;  // changed rows above the floor the test does not confirm (not listed)
  std::size_t renamed = 0;          // rows matched by a normalised name
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

// The gate judges the change (the Hodges–Lehmann shift over BASE's median, E) and its confidence
// interval [L, U] against the threshold T (docs/DIFF.md, "The gate"):
//   pass          U <= T: the data rule out a slowdown beyond T;
//   fail          L > T and the U test is significant: slower, beyond T, confirmed;
//   inconclusive  anything else: the interval straddles T, no attained interval (too few steps),
//                 or no relative change (BASE's median is 0). A real slowdown beyond T thus never
//                 passes unless the interval misses it (probability below (1 - confidence) / 2).
enum class GateOutcome : std::uint8_t { kPass, kFail, kInconclusive };
const char* gate_outcome_key(GateOutcome o);  // "pass", "fail", "inconclusive"

struct GateResult {
  bool enabled = false;
  double threshold_pct = 0;
  GateOutcome outcome = GateOutcome::kPass;
  bool failed = false;  // outcome == kFail
  // Inconclusive: steps per trace that would settle it (stats::steps_for_shift at alpha and
  // kGatePower, for a shift of |E - T| with the observed spread); NaN when unknown, inf when E = T.
  double steps_needed = stats::kNaN;
  std::string reason;  // why it passed, failed or was inconclusive ("" when not enabled)
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

  int exit_code() const {
    if (!gate.enabled) return 0;
    return gate.outcome == GateOutcome::kFail           ? kExitGateFailed
           : gate.outcome == GateOutcome::kInconclusive ? kExitGateInconclusive
                                                        : 0;
  }
};

// Both models must hold something to analyse (see nothing_to_analyse).
TraceDiff diff_traces(const TraceModel& base, const TraceModel& next, const DiffOptions& options);

// The pieces, for tests.
StepTimeDiff diff_step_time(const std::vector<double>& base_ns, const std::vector<double>& new_ns, double alpha);
FindingsDiff diff_findings(const std::vector<Finding>& base, const std::vector<Finding>& next);
GateResult evaluate_gate(const StepTimeDiff& step_time, std::optional<double> fail_if_slower_pct);
double min_attainable_p(std::size_t n_a, std::size_t n_b);
// The smallest n with min_attainable_p(n, n) <= alpha: steps per trace an exact interval at
// 1 - alpha needs (4 at alpha 0.05: 2 / C(8, 4) = 0.029).
std::size_t min_steps_for_interval(double alpha);

// The name two spans share when one was renamed by a change that left it the same operation:
// known class variants unified (the DataLoader iterator: _SingleProcessDataLoaderIter and
// _MultiProcessingDataLoaderIter become _DataLoaderIter), hexadecimal ids (0x7f3a...) become
// "0x<id>", and every other run of digits "<n>" (step numbers, ids: ProfilerStep#12 and
// ProfilerStep#40 both read ProfilerStep#<n>). Used only between names seen only in BASE and names
// seen only in NEW (docs/DIFF.md, "Renamed spans").
std::string normalized_span_name(std::string_view name);

// Benjamini–Hochberg (1995) at level q: which of the p-values are discoveries (NaN never is).
std::vector<bool> benjamini_hochberg(const std::vector<double>& p_values, double q);

}  // namespace ferret
