// ferret diff's statistics of "the change" (issue 14, point 6): the gate's three outcomes on
// hand-computed samples, a real +20% regression on 6 against 6 noisy steps that must never pass,
// renamed spans matched by a normalised name, per-operator rows tested over the steps (only
// significant changes above the floor listed, the rest counted), and one statistic for the change
// in the text headline, the table note and the JSON document.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "diff/trace_diff.h"
#include "ingest/trace_loader.h"
#include "report/diff/diff_report.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace diff_gate_test {

using test::corr;
using test::span;
using test::unwrapped;

std::vector<double> ms(std::initializer_list<double> values) {
  std::vector<double> out;
  for (double v : values) out.push_back(v * 1e6);
  return out;
}

// ---- The gate on plain samples --------------------------------------------------------------------

TEST(DiffGate, PassWhenTheIntervalRulesOutTheThreshold) {
  // BASE {10.0 .. 10.4} ms, NEW {10.05 .. 10.45}: differences 0.05 + 0.1 (j - i) ms, so (exact, 5
  // and 5, k = 3; shift_interval_test.cpp) the interval is [-0.25, +0.35] ms and the shift 0.05 ms;
  // over the 10.2 ms median: +0.49%, CI -2.45% .. +3.43%.
  const StepTimeDiff st =
      diff_step_time(ms({10.0, 10.1, 10.2, 10.3, 10.4}), ms({10.05, 10.15, 10.25, 10.35, 10.45}), 0.05);
  const stats::Comparison& c = st.comparison;
  EXPECT_NEAR(c.relative_shift, 0.05 / 10.2, 1e-9);
  EXPECT_NEAR(c.relative_shift_low, -0.25 / 10.2, 1e-9);
  EXPECT_NEAR(c.relative_shift_high, 0.35 / 10.2, 1e-9);
  const GateResult pass = evaluate_gate(st, 5.0);  // +3.43% <= 5%
  EXPECT_EQ(pass.outcome, GateOutcome::kPass);
  EXPECT_NE(pass.reason.find("rules out a slowdown beyond the 5% allowed"), std::string::npos) << pass.reason;
  // At 2% the estimate (+0.49%) is within, but +3.43% is not ruled out: inconclusive.
  const GateResult unsure = evaluate_gate(st, 2.0);
  EXPECT_EQ(unsure.outcome, GateOutcome::kInconclusive);
  EXPECT_NE(unsure.reason.find("cannot rule out"), std::string::npos) << unsure.reason;
}

TEST(DiffGate, FailWhenTheWholeIntervalIsBeyond) {
  // 4 and 4 separated: interval [1.7, 2.3] ms over the 10.15 ms median = +16.7% .. +22.7%; p =
  // 2/70 = 0.029 (exact). Beyond 5%: fail, exit 1.
  const StepTimeDiff st = diff_step_time(ms({10.0, 10.1, 10.2, 10.3}), ms({12.0, 12.1, 12.2, 12.3}), 0.05);
  const GateResult g = evaluate_gate(st, 5.0);
  EXPECT_EQ(g.outcome, GateOutcome::kFail);
  EXPECT_TRUE(g.failed);
  EXPECT_NEAR(st.comparison.relative_shift_low, 1.7 / 10.15, 1e-9);
  EXPECT_NE(g.reason.find("CI +16.7% to +22.7%"), std::string::npos) << g.reason;
  TraceDiff d;
  d.step_time = st;
  d.gate = g;
  EXPECT_EQ(d.exit_code(), 1);
}

TEST(DiffGate, InconclusiveSaysHowManyStepsSettleIt) {
  // BASE {10..14} ms, NEW {11.5..15.5}: shift 1.5 ms = +12.5% of the 12 ms median, CI -12.5% ..
  // +37.5% (shift_interval_test.cpp). U_base = 6 (pairs i >= j + 2), exact p = 2 * 28/252 = 0.222.
  // Beyond 5%, but not confirmed: inconclusive, exit 3. Steps that settle it: pooled SD
  // sqrt(2.5) = 1.5811 ms, shift to resolve |12.5% - 5%| * 12 ms = 0.9 ms:
  // (pi/3) 2 (1.95996 + 0.84162)^2 (1.5811 / 0.9)^2 = 50.74 -> 51 per trace.
  const StepTimeDiff st = diff_step_time(ms({10, 11, 12, 13, 14}), ms({11.5, 12.5, 13.5, 14.5, 15.5}), 0.05);
  EXPECT_NEAR(st.comparison.mann_whitney.p_value, 56.0 / 252.0, 1e-12);
  EXPECT_NEAR(st.spread_ns, std::sqrt(2.5) * 1e6, 1e-3);
  const GateResult g = evaluate_gate(st, 5.0);
  EXPECT_EQ(g.outcome, GateOutcome::kInconclusive);
  EXPECT_FALSE(g.failed);
  EXPECT_DOUBLE_EQ(g.steps_needed, 51.0);
  EXPECT_NE(g.reason.find("beyond the 5% allowed, but the data cannot confirm it"), std::string::npos) << g.reason;
  EXPECT_NE(g.reason.find("about 51 steps per trace would settle it"), std::string::npos) << g.reason;
  TraceDiff d;
  d.step_time = st;
  d.gate = g;
  EXPECT_EQ(d.exit_code(), kExitGateInconclusive);
  EXPECT_EQ(kExitGateInconclusive, 3);
}

TEST(DiffGate, TooFewStepsAreInconclusiveNotPassed) {
  // 2 and 2 steps, +20%: no test, no interval. Before: "passed". Now inconclusive; the spread is
  // known (pooled SD of {10, 10.2} and {12, 12.2} = 0.1414 ms), so the steps are computed, but at
  // least 4 (an exact 95% interval needs 2 / C(8, 4) <= 0.05).
  const StepTimeDiff st = diff_step_time(ms({10.0, 10.2}), ms({12.0, 12.2}), 0.05);
  const GateResult g = evaluate_gate(st, 5.0);
  EXPECT_EQ(g.outcome, GateOutcome::kInconclusive);
  EXPECT_DOUBLE_EQ(g.steps_needed, 4.0);
  EXPECT_EQ(min_steps_for_interval(0.05), 4u);
  EXPECT_NE(g.reason.find("too few to confirm"), std::string::npos) << g.reason;
  // One step each: no spread at all.
  const GateResult one = evaluate_gate(diff_step_time(ms({10.0}), ms({12.0}), 0.05), 5.0);
  EXPECT_EQ(one.outcome, GateOutcome::kInconclusive);
  EXPECT_TRUE(std::isnan(one.steps_needed));
  EXPECT_NE(one.reason.find("profile at least 4 steps"), std::string::npos) << one.reason;
}

TEST(DiffGate, TwentyPercentOnSixNoisyStepsNeverPasses) {
  // A real +20% regression: BASE steps 10 ms, NEW 12 ms, each times (1 + 0.15 z), z standard
  // normal (Box-Muller on mt19937_64), 6 against 6 steps, --fail-if-slower 5. Over 200 seeds the gate
  // must fail or be inconclusive, never pass. The old rule (pass unless p < alpha) passes some of
  // these same seeds: the test tells the two apart.
  int passes = 0, fails = 0, inconclusive = 0, old_rule_passes = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    auto normal = [&rng] {
      const double u1 = (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53;
      const double u2 = static_cast<double>(rng() >> 11) * 0x1p-53;
      return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    };
    std::vector<double> base, next;
    for (int i = 0; i < 6; ++i) base.push_back(10e6 * (1 + 0.15 * normal()));
    for (int i = 0; i < 6; ++i) next.push_back(12e6 * (1 + 0.15 * normal()));
    const StepTimeDiff st = diff_step_time(base, next, 0.05);
    const GateResult g = evaluate_gate(st, 5.0);
    passes += g.outcome == GateOutcome::kPass;
    fails += g.outcome == GateOutcome::kFail;
    inconclusive += g.outcome == GateOutcome::kInconclusive;
    old_rule_passes += !(st.comparison.significant && st.comparison.relative_change > 0.05);
  }
  EXPECT_EQ(passes, 0);
  EXPECT_GT(fails, 0);
  EXPECT_GT(inconclusive, 0);
  EXPECT_GT(old_rule_passes, 0);
}

// ---- Hand-made traces with per-step durations -------------------------------------------------------

struct HostOp {
  std::string name;
  double start_us;
  double dur_us;
};
struct StepSpec {
  double step_us = 10000;
  double gemm_us = 4000;
  std::vector<HostOp> ops;
};

// Steps back to back from t = 0 (ProfilerStep#first..): aten::mm [0, 1000) us launching
// gemm_kernel [1000, 1000 + gemm) on stream 7 (launch [900, 1000)), then the step's host ops.
std::string trace_of(const std::vector<StepSpec>& steps, int first = 0) {
  std::vector<std::string> events;
  double t0 = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const StepSpec& s = steps[i];
    const int c = 100 + static_cast<int>(i);
    events.push_back(
        span("user_annotation", "ProfilerStep#" + std::to_string(first + static_cast<int>(i)), 1, 1, t0, s.step_us));
    events.push_back(span("cpu_op", "aten::mm", 1, 1, t0, 1000));
    events.push_back(span("cuda_runtime", "cudaLaunchKernel", 1, 1, t0 + 900, 100, corr(c)));
    events.push_back(span("kernel", "gemm_kernel", 0, 7, t0 + 1000, s.gemm_us, corr(c) + R"(,"device":0,"stream":7)"));
    for (const HostOp& op : s.ops) events.push_back(span("cpu_op", op.name, 1, 1, t0 + op.start_us, op.dur_us));
    t0 += s.step_us;
  }
  return test::trace(events);
}

std::vector<StepSpec> uniform_steps(int n, const std::vector<HostOp>& ops, double step_us = 10000) {
  return std::vector<StepSpec>(static_cast<std::size_t>(n), StepSpec{step_us, 4000, ops});
}

const char* kSingle = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
const char* kMulti = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";

TEST(DiffRenames, NormalisedNames) {
  EXPECT_EQ(normalized_span_name(kSingle), normalized_span_name(kMulti));
  EXPECT_EQ(normalized_span_name(kSingle), "enumerate(DataLoader)#_DataLoaderIter.__next__");
  EXPECT_EQ(normalized_span_name("ProfilerStep#12"), normalized_span_name("ProfilerStep#40"));
  EXPECT_EQ(normalized_span_name("ProfilerStep#12"), "ProfilerStep#<n>");
  EXPECT_EQ(normalized_span_name("hook 0x7f3a9c at 12"), "hook 0x<id> at <n>");
  EXPECT_EQ(normalized_span_name("aten::mm"), "aten::mm");
}

TEST(DiffRenames, DataLoaderIteratorClassChangeIsOneRow) {
  // BASE waits 3000 us per step in the single-process iterator, NEW 500 us in the multi-process
  // one: one row, faster by 2500 us per step, not a removed and an added row.
  const TraceModel base = load_trace_text(trace_of(uniform_steps(5, {{kSingle, 5000, 3000}})));
  const TraceModel next = load_trace_text(trace_of(uniform_steps(5, {{kMulti, 5000, 500}})));
  const TraceDiff d = diff_traces(base, next, {});
  EXPECT_EQ(d.ops.added_count, 0u);
  EXPECT_EQ(d.ops.removed_count, 0u);
  EXPECT_EQ(d.ops.renamed, 1u);
  ASSERT_EQ(d.ops.faster.size(), 1u);
  EXPECT_EQ(d.ops.faster[0].name, kMulti);
  EXPECT_EQ(d.ops.faster[0].matched_from, kSingle);
  EXPECT_DOUBLE_EQ(d.ops.faster[0].delta_ns, -2500e3);
  EXPECT_TRUE(d.ops.faster[0].test.significant);  // 5 x 3000 against 5 x 500: p = 0.00398 (ties)
  const std::string text = diff_text(d, Style{});
  EXPECT_NE(text.find(std::string("~ was ") + kSingle), std::string::npos) << text;
  EXPECT_NE(text.find("matched by a normalised name"), std::string::npos) << text;
  const nlohmann::ordered_json j = diff_json(d);
  EXPECT_EQ(j["operators"]["faster"][0]["matched_from"], kSingle);
  EXPECT_EQ(j["operators"]["renamed"], 1);
}

// The diff's text fits the layout width: the step table closes its gaps, the rows' name column
// takes what the numbers leave (a longer name gets a line of its own), titles wrap.
TEST(DiffText, FitsTheWidth) {
  const TraceModel base =
      load_trace_text(trace_of(uniform_steps(5, {{kSingle, 5000, 3000}, {"aten::bmm", 1000, 800}})));
  const TraceModel next = load_trace_text(trace_of(uniform_steps(5, {{kMulti, 5000, 500}, {"aten::bmm", 1000, 1900}})));
  const TraceDiff d = diff_traces(base, next, {});
  ASSERT_EQ(d.ops.slower.size(), 1u);
  for (std::size_t width : {60u, 80u, 120u}) {
    SCOPED_TRACE(width);
    Style st;
    st.width = width;
    const std::string text = diff_text(d, st);
    EXPECT_LE(test::longest_line(text), width) << text;
    // aten::bmm: 800 -> 1900 us per step on the host, +1.100 ms, +137.5%, one row whatever the width.
    EXPECT_NE(text.find("aten::bmm"), std::string::npos) << text;
    EXPECT_NE(text.find("800.000 us   1.900 ms   +1.100 ms +137.5% h\n"), std::string::npos) << text;
    EXPECT_NE(text.find("Step (mean)"), std::string::npos) << text;
  }
}

TEST(DiffRenames, ShiftedStepNumbersInNamesAreOneRow) {
  // BASE's step i runs "forward step <12 + i>" for 300 us, NEW's "forward step <40 + i>" for
  // 1500 us: five names on each side, one normalised name, so one row summing them: 1 call and
  // +1200 us per step. And the windows' own step numbers (#12.. against #40..) do not matter.
  std::vector<StepSpec> b, n;
  for (int i = 0; i < 5; ++i) {
    b.push_back({10000, 4000, {{"forward step " + std::to_string(12 + i), 5000, 300}}});
    n.push_back({10000, 4000, {{"forward step " + std::to_string(40 + i), 5000, 1500}}});
  }
  const TraceDiff d = diff_traces(load_trace_text(trace_of(b, 12)), load_trace_text(trace_of(n, 40)), {});
  EXPECT_EQ(d.base.first_step, 12);
  EXPECT_EQ(d.next.first_step, 40);
  EXPECT_EQ(d.ops.added_count + d.ops.removed_count, 0u);
  ASSERT_EQ(d.ops.slower.size(), 1u);
  EXPECT_EQ(d.ops.slower[0].name, "forward step <n>");
  EXPECT_NE(d.ops.slower[0].matched_from.find("5 names in BASE (forward step 12, ...), 5 in NEW (forward step 40"),
            std::string::npos)
      << d.ops.slower[0].matched_from;
  EXPECT_DOUBLE_EQ(d.ops.slower[0].base_calls, 1.0);
  EXPECT_DOUBLE_EQ(d.ops.slower[0].delta_ns, 1200e3);
  EXPECT_TRUE(d.ops.slower[0].test.significant);
}

TEST(DiffRows, InsignificantAndSmallChangesAreCountedNotListed) {
  // 6 steps each of 10 ms (floor: 1% of the 10 ms median = 100 us per step):
  //   aten::big    500 -> 2500 us in every step: +2000 us, ties: normal approximation, U = 0,
  //                sigma^2 = 36/12 (13 - 420/132) = 29.4545, z = 17.5 / 5.4272 = 3.2245, p = 0.00126
  //   aten::noisy  {200, 900, 400, 1000, 300, 700} -> {400, 1100, 500, 1200, 300, 900}: means
  //                583.3 -> 733.3 (+150 us, above the floor), but the steps overlap (U_base = 12.5
  //                of 36): not significant
  //   aten::tiny   20 -> 40 us in every step: significant, but below the floor
  // Benjamini–Hochberg over the two rows above the floor: 0.00126 <= 0.05 / 2. So one row listed,
  // "and 2 smaller or not-significant changes (below the floor ...: 1; not significant ...: 1)".
  const double noisy_base[] = {200, 900, 400, 1000, 300, 700}, noisy_new[] = {400, 1100, 500, 1200, 300, 900};
  std::vector<StepSpec> b, n;
  for (int i = 0; i < 6; ++i) {
    b.push_back(
        {10000, 4000, {{"aten::noisy", 2000, noisy_base[i]}, {"aten::tiny", 4000, 20}, {"aten::big", 5000, 500}}});
    n.push_back(
        {10000, 4000, {{"aten::noisy", 2000, noisy_new[i]}, {"aten::tiny", 4000, 40}, {"aten::big", 5000, 2500}}});
  }
  const TraceDiff d = diff_traces(load_trace_text(trace_of(b)), load_trace_text(trace_of(n)), {});
  EXPECT_TRUE(d.ops.tested);
  EXPECT_DOUBLE_EQ(d.ops.floor_ns, 100e3);
  EXPECT_EQ(d.ops.slower_count, 3u);  // counted: all three are slower
  EXPECT_EQ(d.ops.listed, 1u);
  ASSERT_EQ(d.ops.slower.size(), 1u);
  EXPECT_EQ(d.ops.slower[0].name, "aten::big");
  EXPECT_NEAR(d.ops.slower[0].test.p_value, 0.00126, 1e-5);
  EXPECT_EQ(d.ops.below_floor, 1u);
  EXPECT_EQ(d.ops.not_significant, 1u);
  const std::string text = diff_text(d, Style{});
  EXPECT_NE(unwrapped(text).find("and 2 smaller or not-significant changes"), std::string::npos) << text;
  EXPECT_EQ(text.find("aten::noisy"), std::string::npos) << text;
  EXPECT_EQ(text.find("aten::tiny"), std::string::npos) << text;
  const nlohmann::ordered_json j = diff_json(d);
  EXPECT_EQ(j["operators"]["not_listed"]["below_floor"], 1);
  EXPECT_EQ(j["operators"]["not_listed"]["not_significant"], 1);
  EXPECT_EQ(j["operators"]["slower"].size(), 1u);
}

TEST(DiffRows, TooFewStepsListAboveTheFloorUntested) {
  // 2 steps each: no per-step test; aten::big (+2000 us) is listed untested, aten::tiny is counted.
  const TraceDiff d = diff_traces(
      load_trace_text(trace_of(uniform_steps(2, {{"aten::tiny", 4000, 20}, {"aten::big", 5000, 500}}))),
      load_trace_text(trace_of(uniform_steps(2, {{"aten::tiny", 4000, 40}, {"aten::big", 5000, 2500}}))), {});
  EXPECT_FALSE(d.ops.tested);
  ASSERT_EQ(d.ops.slower.size(), 1u);
  EXPECT_EQ(d.ops.slower[0].name, "aten::big");
  EXPECT_FALSE(d.ops.slower[0].test.tested);
  EXPECT_EQ(d.ops.below_floor, 1u);
  EXPECT_NE(diff_text(d, Style{}).find("untested"), std::string::npos);
}

// ---- One statistic for the change, in every format ----------------------------------------------------

TEST(DiffHeadline, TextAndJsonAgreeAndNameTheStatistic) {
  // BASE steps {10, 10, 10, 10, 10, 20} ms (one slow step: mean 11.667, median 10), NEW six steps
  // of 9 ms. Hodges–Lehmann shift: the 36 differences are 30 x -1 and 6 x -11 ms, median -1 ms,
  // -10.0% of the 10 ms median; the mean moves 11.667 -> 9 ms, -22.9%. Both shown, each named.
  std::vector<StepSpec> b = uniform_steps(5, {}), n = uniform_steps(6, {}, 9000);
  b.push_back({20000, 4000, {}});
  const TraceDiff d = diff_traces(load_trace_text(trace_of(b)), load_trace_text(trace_of(n)), {});
  EXPECT_NEAR(d.step_time.comparison.relative_shift, -0.10, 1e-12);
  const std::string raw_text = diff_text(d, Style{});
  const std::string text = unwrapped(raw_text);
  const nlohmann::ordered_json j = diff_json(d);
  const auto& st = j["step_time"];
  EXPECT_EQ(st["change"]["statistic"], "hodges-lehmann-shift");
  EXPECT_DOUBLE_EQ(st["change"]["relative_pct"].get<double>(), -10.0);
  EXPECT_NEAR(st["mean"]["relative_pct"].get<double>(), -22.857, 1e-3);
  // The headline in the text is the JSON's, and its numbers are the JSON's numbers.
  EXPECT_NE(text.find(st["headline"].get<std::string>()), std::string::npos) << raw_text;
  std::smatch m;
  const std::string headline = st["headline"];
  ASSERT_TRUE(std::regex_search(headline, m, std::regex(R"(, ([+-][0-9.]+)% \(Hodges-Lehmann shift)"))) << headline;
  EXPECT_NEAR(std::stod(m[1]), st["change"]["relative_pct"].get<double>(), 0.05);
  ASSERT_TRUE(std::regex_search(headline, m, std::regex(R"(; mean ([+-][0-9.]+)% )"))) << headline;
  EXPECT_NEAR(std::stod(m[1]), st["mean"]["relative_pct"].get<double>(), 0.05);
  // The table's step row is the mean, labelled, and the note under it repeats the change.
  ASSERT_TRUE(std::regex_search(raw_text, m, std::regex(R"(Step \(mean\) .* ([+-][0-9.]+)%\n)"))) << raw_text;
  EXPECT_NEAR(std::stod(m[1]), st["mean"]["relative_pct"].get<double>(), 0.05);
  EXPECT_NE(text.find("the step-time change is the Hodges-Lehmann shift above, -10.0%"), std::string::npos) << text;
  const std::string md = diff_markdown(d);
  EXPECT_NE(md.find("Hodges-Lehmann shift"), std::string::npos) << md;
  EXPECT_NE(md.find("| **step (mean)** |"), std::string::npos) << md;
}

}  // namespace diff_gate_test
}  // namespace
}  // namespace ferret
