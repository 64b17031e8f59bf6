// Utilisation log statistics and rules on the fixtures of tests/data/smi/ (the values written into
// them are listed in each test, with the hand computation), and on small hand-made series where a
// rule must fire or must not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "analysis/smi/smi_stats.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/smi/rules_smi.h"
#include "ingest/smi/smi_log_parser.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace smi_rules_test {

constexpr std::int64_t kNs = 1000000000;

SmiLog fixture_log(const std::string& name) {
  return parse_smi_text(test::read_file(std::string(FERRET_SOURCE_DIR) + "/tests/data/smi/" + name), name);
}

std::vector<Finding> findings_of(const SmiLog& log) {
  std::vector<Finding> out;
  rules_smi(log, analyze_smi(log), out);
  for (const Finding& f : out) {
    const RuleInfo* rule = find_rule(f.id);
    EXPECT_NE(rule, nullptr) << f.id;
    if (rule != nullptr) {
      EXPECT_EQ(rule->dimension, f.dimension) << f.id;
    }
  }
  return out;
}

const Finding* find(const std::vector<Finding>& fs, const std::string& id) {
  for (const Finding& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

std::string ids_of(const std::vector<Finding>& fs) {
  std::string out;
  for (const Finding& f : fs) out += f.id + " ";
  return out;
}

// A log of one or more GPUs with the given utilisation series, 1 s apart from t = 0.
SmiLog series(const std::vector<std::vector<double>>& gpus) {
  SmiLog log;
  log.sources.push_back(SmiSource{});
  log.sources[0].name = "hand";
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    SmiGpu gpu;
    gpu.key = std::to_string(g);
    for (std::size_t i = 0; i < gpus[g].size(); ++i) {
      SmiSample s;
      s.time_ns = static_cast<std::int64_t>(i) * kNs;
      s.util_pct = gpus[g][i];
      gpu.samples.push_back(s);
    }
    log.gpus.push_back(gpu);
  }
  return log;
}

TEST(SmiStats, QueryCsvMeansAndPercentilesByHand) {
  const SmiLog log = fixture_log("query-two-gpus.csv");
  const SmiStats st = analyze_smi(log);
  ASSERT_EQ(st.gpus.size(), 2u);
  const SmiGpuStats& g0 = st.gpus[0];
  // GPU 0 utilization: 70 90 100 90 80 90 100 95 85 100 -> sum 900, mean 90. Sorted:
  // 70 80 85 90 90 90 95 100 100 100. Type 7: p5 h = 0.45 -> 70 + 0.45 x 10 = 74.5; p50 h = 4.5
  // -> 90; p95 h = 8.55 -> 100.
  EXPECT_EQ(g0.busy_metric, "utilization");
  EXPECT_DOUBLE_EQ(g0.busy_mean, 90);
  EXPECT_DOUBLE_EQ(g0.busy_p5, 74.5);
  EXPECT_DOUBLE_EQ(g0.busy_p50, 90);
  EXPECT_DOUBLE_EQ(g0.busy_p95, 100);
  EXPECT_EQ(g0.sample_period_ns, kNs);
  EXPECT_EQ(g0.span_ns(), 10 * kNs);
  // GPU 1: 30 40 50 20 60 40 30 50 40 40 -> mean 40; sorted 20 30 30 40 40 40 40 50 50 60:
  // p5 = 20 + 0.45 x 10 = 24.5, p50 = 40, p95 = 50 + 0.55 x 10 = 55.5.
  const SmiGpuStats& g1 = st.gpus[1];
  EXPECT_DOUBLE_EQ(g1.busy_mean, 40);
  EXPECT_DOUBLE_EQ(g1.busy_p5, 24.5);
  EXPECT_DOUBLE_EQ(g1.busy_p50, 40);
  EXPECT_DOUBLE_EQ(g1.busy_p95, 55.5);
  EXPECT_EQ(g1.idle_periods, 0u);  // never below 10%
  // Memory: GPU 0's peak memory.used is 41000 of 81559 MiB.
  EXPECT_DOUBLE_EQ(g0.mem_peak_used_mib, 41000);
  EXPECT_DOUBLE_EQ(g0.mem_total_mib, 81559);
  // Power: 500 690 695 690 600 690 695 690 600 695 -> mean 6545 / 10 = 654.5; sorted
  // 500 600 600 690 690 690 690 695 695 695 -> p95 = 695; limit 700.
  EXPECT_DOUBLE_EQ(g0.power_mean_w, 654.5);
  EXPECT_DOUBLE_EQ(g0.power_p95_w, 695);
  EXPECT_DOUBLE_EQ(g0.power_limit_w, 700);
  // Throttle: every sample busy; >= 98% of 700 W (686 W) in 7 samples, SW power cap in 2 of them.
  EXPECT_EQ(g0.throttle.busy_samples, 10u);
  EXPECT_EQ(g0.throttle.power_at_limit, 7u);
  EXPECT_EQ(g0.throttle.power_cap, 2u);
  EXPECT_EQ(g0.throttle.throttled_samples, 7u);
  // Clocks while busy: 1980 x 3 + 1800 x 7 = 18540 -> 1854 MHz of 1980.
  EXPECT_DOUBLE_EQ(g0.throttle.busy_clock_mhz, 1854);
  EXPECT_DOUBLE_EQ(g0.throttle.max_clock_mhz, 1980);
  EXPECT_EQ(st.gpus[1].throttle.throttled_samples, 0u);
}

TEST(SmiRules, QueryCsvStarvedImbalancedAndThrottled) {
  const std::vector<Finding> fs = findings_of(fixture_log("query-two-gpus.csv"));
  const Finding* starved = find(fs, "gpu-starved");
  ASSERT_NE(starved, nullptr);
  EXPECT_EQ(starved->severity, Severity::kMedium);  // 40% is below 60, not below 30
  EXPECT_DOUBLE_EQ(starved->evidence[0].value, 40);
  EXPECT_NEAR(starved->max_speedup, 1 / 0.4, 1e-9);  // 60% of the time without work
  EXPECT_NE(starved->title.find("GPU 1"), std::string::npos) << starved->title;
  const Finding* odd = find(fs, "gpu-imbalance");
  ASSERT_NE(odd, nullptr);  // 40 against 90: 50 points
  EXPECT_NE(odd->title.find("GPU 1"), std::string::npos) << odd->title;
  const Finding* hot = find(fs, "gpu-throttling");
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(hot->severity, Severity::kHigh);  // 7 of 10 busy samples >= 50%
  EXPECT_DOUBLE_EQ(hot->evidence[0].value, 70);
  EXPECT_NE(hot->title.find("GPU 0"), std::string::npos) << hot->title;
  EXPECT_EQ(find(fs, "gpu-idle-periodic"), nullptr);
}

TEST(SmiStats, DmonRegularIdleLeavesOutStartAndEnd) {
  const SmiLog log = fixture_log("dmon-dt.txt");
  const SmiGpuStats g = analyze_smi(log).gpus[0];
  // sm: 0 | 95 95 95 | 2 | 95 x4 | 0 | 95 x4 | 3 | 95 x4 | 0, one sample a second from 12:00:00.
  // Idle (< 10%) inside the run at 4 s, 9 s and 14 s, each 1 s; the 0 at 0 s is start-up and the
  // 0 at 19 s shutdown.
  ASSERT_EQ(g.idle_periods, 3u);
  EXPECT_EQ(g.idle[0].start_ns - g.first_ns, 4 * kNs);
  EXPECT_EQ(g.idle[0].duration_ns(), kNs);
  EXPECT_EQ(g.idle[2].start_ns - g.first_ns, 14 * kNs);
  EXPECT_EQ(g.idle_ns, 3 * kNs);
  EXPECT_EQ(g.leading_idle_ns, kNs);
  EXPECT_EQ(g.trailing_idle_ns, kNs);
  // Starts 5 s apart exactly: CV 0.
  EXPECT_DOUBLE_EQ(g.idle_spacing_ns, 5e9);
  EXPECT_DOUBLE_EQ(g.idle_spacing_cv, 0);
  EXPECT_TRUE(g.idle_regular);
  // Mean over all 20: (15 x 95 + 0 + 2 + 0 + 3 + 0) / 20 = 1430 / 20 = 71.5; between the first
  // and last busy sample (1..18): 1430 / 18.
  EXPECT_DOUBLE_EQ(g.busy_mean, 71.5);
  EXPECT_DOUBLE_EQ(g.active_busy_mean, 1430.0 / 18);
  const std::vector<Finding> fs = findings_of(log);
  const Finding* periodic = find(fs, "gpu-idle-periodic");
  ASSERT_NE(periodic, nullptr);
  // 3 s idle of the 18 s between start-up and shutdown (20 s span - 1 - 1): 16.7% >= 5%: medium.
  EXPECT_NEAR(periodic->time_share, 3.0 / 18, 1e-9);
  EXPECT_EQ(periodic->severity, Severity::kMedium);
  EXPECT_EQ(find(fs, "gpu-starved"), nullptr);  // 79% busy between start and end
}

TEST(SmiRules, IrregularIdleIsNotPeriodic) {
  // Idle at 3, 5 and 15 s: spacings 2 and 10 s, mean 6, population sd 4, CV 0.67 > 0.25.
  std::vector<double> u(20, 90);
  u[3] = u[5] = u[15] = 0;
  const SmiLog log = series({u});
  const SmiGpuStats g = analyze_smi(log).gpus[0];
  EXPECT_EQ(g.idle_periods, 3u);
  EXPECT_NEAR(g.idle_spacing_cv, 4.0 / 6.0, 1e-12);
  EXPECT_FALSE(g.idle_regular);
  EXPECT_EQ(find(findings_of(log), "gpu-idle-periodic"), nullptr);
  // Two evenly spaced idle periods are not enough.
  std::vector<double> two(20, 90);
  two[5] = two[10] = 0;
  EXPECT_EQ(find(findings_of(series({two})), "gpu-idle-periodic"), nullptr);
}

TEST(SmiRules, StarvedThresholdsAndTooFewSamples) {
  EXPECT_EQ(find(findings_of(series({std::vector<double>(10, 60)})), "gpu-starved"), nullptr);  // 60 is not < 60
  const std::vector<Finding> low = findings_of(series({std::vector<double>(10, 25)}));
  ASSERT_NE(find(low, "gpu-starved"), nullptr);
  EXPECT_EQ(find(low, "gpu-starved")->severity, Severity::kHigh);                              // < 30%
  EXPECT_EQ(find(findings_of(series({std::vector<double>(4, 20)})), "gpu-starved"), nullptr);  // 4 < 5 samples
  // Never busy (an unused GPU): not starved, no busy stretch to judge.
  EXPECT_EQ(find(findings_of(series({std::vector<double>(10, 0)})), "gpu-starved"), nullptr);
}

TEST(SmiStats, TableLogMeansByHand) {
  // table-535-slurm.log: three tables 5 s apart. GPU 0 at 90, 100, 80 % -> mean 270 / 3 = 90;
  // GPU 1 at 40, 50, 60 % -> 150 / 3 = 50. GPU 0's memory 40526, 40530, 40534 of 81920 MiB -> peak
  // 40534; power 310, 355, 290 W -> mean 955 / 3; hottest 55 C.
  const SmiStats st = analyze_smi(fixture_log("table-535-slurm.log"));
  ASSERT_EQ(st.gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(st.gpus[0].busy_mean, 90);
  EXPECT_DOUBLE_EQ(st.gpus[1].busy_mean, 50);
  EXPECT_EQ(st.gpus[0].busy_metric, "utilization");
  EXPECT_EQ(st.gpus[0].sample_period_ns, 5 * kNs);
  EXPECT_EQ(st.gpus[0].span_ns(), 15 * kNs);
  EXPECT_DOUBLE_EQ(st.gpus[0].mem_peak_used_mib, 40534);
  EXPECT_DOUBLE_EQ(st.gpus[0].mem_total_mib, 81920);
  EXPECT_DOUBLE_EQ(st.gpus[0].power_mean_w, 955.0 / 3);
  EXPECT_DOUBLE_EQ(st.gpus[0].power_limit_w, 400);
  EXPECT_DOUBLE_EQ(st.gpus[0].temp_max_c, 55);
  // Three samples a GPU are fewer than the five a rule judges on.
  EXPECT_EQ(ids_of(findings_of(fixture_log("table-535-slurm.log"))), "");
}

TEST(SmiRules, UnusedGpuIsNamedAndTheBusyOneIsNot) {
  // table-418-unused-gpu.log: GPU 0 at 0 96 98 100 94 92 % (mean 480 / 6 = 80; between its first
  // and last busy sample 480 / 5 = 96), GPU 1 at 0% with 0 MiB used in all six tables.
  const SmiLog log = fixture_log("table-418-unused-gpu.log");
  const SmiStats st = analyze_smi(log);
  EXPECT_DOUBLE_EQ(st.gpus[0].busy_mean, 80);
  EXPECT_DOUBLE_EQ(st.gpus[0].active_busy_mean, 96);
  EXPECT_DOUBLE_EQ(st.gpus[1].busy_mean, 0);
  EXPECT_TRUE(std::isnan(st.gpus[1].active_busy_mean));  // never busy
  const std::vector<Finding> fs = findings_of(log);
  // Only gpu-unused: gpu-starved and gpu-imbalance judge a GPU between its busy samples and leave
  // the never-busy one out; GPU 0 at 96% fires nothing.
  ASSERT_EQ(fs.size(), 1u) << ids_of(fs);
  const Finding& unused = fs[0];
  EXPECT_EQ(unused.id, "gpu-unused");
  EXPECT_EQ(unused.severity, Severity::kHigh);
  EXPECT_EQ(unused.title, "GPU 1 never used: busy at most 0% in all 6 samples");
  EXPECT_EQ(unused.title.find("GPU 0"), std::string::npos);
  EXPECT_NE(unused.detail.find("no process of the job opened it"), std::string::npos) << unused.detail;
  EXPECT_NE(unused.detail.find("The log's other GPU did work"), std::string::npos) << unused.detail;
  ASSERT_EQ(unused.evidence.size(), 5u);
  EXPECT_DOUBLE_EQ(unused.evidence[0].value, 1);  // unused_gpus
  EXPECT_DOUBLE_EQ(unused.evidence[1].value, 2);  // gpus
  EXPECT_DOUBLE_EQ(unused.evidence[2].value, 0);  // busy_max_pct
  EXPECT_DOUBLE_EQ(unused.evidence[3].value, 6);  // samples
  EXPECT_DOUBLE_EQ(unused.evidence[4].value, 0);  // memory_peak_used_mib
}

TEST(SmiRules, UnusedThresholdsAndTheOtherRulesBesideIt) {
  // Below the idle threshold (10%) in every sample: unused, the highest value named.
  const std::vector<Finding> low = findings_of(series({std::vector<double>(10, 9)}));
  ASSERT_NE(find(low, "gpu-unused"), nullptr);
  EXPECT_NE(find(low, "gpu-unused")->title.find("busy at most 9%"), std::string::npos);
  // Busy once (10% is not idle): used; it is judged by gpu-starved instead.
  std::vector<double> once(10, 0);
  once[4] = 10;
  EXPECT_EQ(find(findings_of(series({once})), "gpu-unused"), nullptr);
  // Four samples are too few to judge.
  EXPECT_EQ(find(findings_of(series({std::vector<double>(4, 0)})), "gpu-unused"), nullptr);
  // Three busy GPUs and an unused one: one finding for the unused GPU, no imbalance (the busy
  // three agree) and no starvation.
  const std::vector<double> busy(10, 90), idle(10, 0);
  const std::vector<Finding> four = findings_of(series({busy, busy, busy, idle}));
  ASSERT_EQ(four.size(), 1u) << ids_of(four);
  EXPECT_EQ(four[0].id, "gpu-unused");
  EXPECT_NE(four[0].title.find("GPU 3"), std::string::npos) << four[0].title;
  // No GPU did any work: one finding naming both, saying so.
  const std::vector<Finding> none = findings_of(series({idle, idle}));
  ASSERT_EQ(none.size(), 1u) << ids_of(none);
  EXPECT_EQ(none[0].title, "2 of 2 GPUs never used: busy at most 0% in every sample");
  EXPECT_NE(none[0].detail.find("No GPU of the log did any work"), std::string::npos) << none[0].detail;
  // DCGM's SM active near 0 while a kernel ran most of the time: small kernels, not an unused GPU.
  SmiLog small = series({std::vector<double>(10, 90)});
  for (SmiSample& smp : small.gpus[0].samples) smp.sm_active_pct = 5;
  EXPECT_EQ(find(findings_of(small), "gpu-unused"), nullptr);
  for (SmiSample& smp : small.gpus[0].samples) smp.util_pct = 0;  // and with no kernel either: unused
  EXPECT_NE(find(findings_of(small), "gpu-unused"), nullptr);
  // Memory held with no work: something was placed on the GPU.
  SmiLog held = series({busy, idle});
  for (SmiSample& smp : held.gpus[1].samples) smp.mem_used_mib = 30000;
  const std::vector<Finding> held_findings = findings_of(held);  // find() points into it
  const Finding* placed = find(held_findings, "gpu-unused");
  ASSERT_NE(placed, nullptr);
  EXPECT_NE(placed->detail.find("Up to 30000 MiB of memory was held on it"), std::string::npos) << placed->detail;
}

TEST(SmiRules, OneGpuUnlikeTheOthers) {
  const std::vector<double> busy(10, 90), slow(10, 65), near(10, 75);
  // Four GPUs: 90 90 90 65 -> the fourth is 25 points under the others' median 90.
  const std::vector<Finding> fs = findings_of(series({busy, busy, busy, slow}));
  const Finding* odd = find(fs, "gpu-imbalance");
  ASSERT_NE(odd, nullptr);
  EXPECT_NE(odd->title.find("GPU 3"), std::string::npos) << odd->title;
  EXPECT_DOUBLE_EQ(odd->evidence[2].value, -25);
  // 75 is 15 points under: within the margin.
  EXPECT_EQ(find(findings_of(series({busy, busy, busy, near})), "gpu-imbalance"), nullptr);
  // Spread, not one odd GPU: 90 90 65 65 - half differ, no finding.
  EXPECT_EQ(find(findings_of(series({busy, busy, slow, slow})), "gpu-imbalance"), nullptr);
}

TEST(SmiRules, ThrottleReasonsFireAndIdleThrottlingDoesNot) {
  // 20 busy samples: one thermal sample is 5% (< 10%), no finding.
  SmiLog log = series({std::vector<double>(20, 90)});
  for (SmiSample& s : log.gpus[0].samples) s.throttle_reasons = 0;
  log.gpus[0].samples[0].throttle_reasons = kSmiReasonHwThermal;
  log.gpus[0].samples[1].throttle_reasons = kSmiReasonGpuIdle;  // idle is not throttling
  EXPECT_EQ(analyze_smi(log).gpus[0].throttle.throttled_samples, 1u);
  EXPECT_EQ(find(findings_of(log), "gpu-throttling"), nullptr);
  // A second one (HW slowdown): 2 of 20 = 10%, medium (< 50%).
  log.gpus[0].samples[2].throttle_reasons = kSmiReasonHwSlowdown;
  const std::vector<Finding> fs = findings_of(log);  // kept: find() points into it
  const Finding* f = find(fs, "gpu-throttling");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_DOUBLE_EQ(f->evidence[0].value, 10);
  // Reasons while idle do not count.
  SmiLog idle = series({std::vector<double>(10, 0)});
  for (SmiSample& s : idle.gpus[0].samples) s.throttle_reasons = kSmiReasonSwPowerCap;
  EXPECT_EQ(find(findings_of(idle), "gpu-throttling"), nullptr);
}

TEST(SmiStats, TraceWindowAgainstTheRun) {
  const SmiLog log = fixture_log("query-two-gpus.csv");
  const SmiStats st = analyze_smi(log);
  const std::int64_t noon = 1706702400LL * kNs;
  // [12:00:00.5, 12:00:01.5]: a sample reports the second before it, so those at 01 and 02 count.
  const SmiTraceWindow w = align_smi_window(log, st, "t", true, noon + kNs / 2, noon + 3 * kNs / 2);
  ASSERT_TRUE(w.aligned) << w.reason;
  ASSERT_EQ(w.gpus.size(), 2u);
  EXPECT_EQ(w.gpus[0].samples_in_window, 2u);
  EXPECT_DOUBLE_EQ(w.gpus[0].window_busy_mean, 95);  // (90 + 100) / 2
  EXPECT_DOUBLE_EQ(w.gpus[1].window_busy_mean, 45);  // (40 + 50) / 2
  EXPECT_DOUBLE_EQ(w.gpus[1].run_busy_mean, 40);
  EXPECT_EQ(w.run_ns, 10 * kNs);
  EXPECT_FALSE(align_smi_window(log, st, "t", false, 0, kNs).aligned);
  const SmiTraceWindow outside = align_smi_window(log, st, "t", true, noon + 3600 * kNs, noon + 3601 * kNs);
  EXPECT_FALSE(outside.aligned);
  EXPECT_NE(outside.reason.find("--utc-offset"), std::string::npos);
  // A log without times cannot be aligned.
  const SmiLog rel = fixture_log("dcgmi-dmon.txt");
  EXPECT_FALSE(align_smi_window(rel, analyze_smi(rel), "t", true, noon, noon + kNs).aligned);
}

TEST(SmiStats, SmActiveIsPreferredWhenLogged) {
  const SmiLog log = fixture_log("dcgmi-dmon.txt");
  const SmiStats st = analyze_smi(log);
  // SMACT 0.5 0.6 0.7 0.4 N/A 0.55 -> 50 60 70 40 55: mean 275 / 5 = 55; GPUTL 90 throughout.
  EXPECT_EQ(st.gpus[0].busy_metric, "sm_active");
  EXPECT_EQ(st.gpus[0].busy_values, 5u);
  EXPECT_DOUBLE_EQ(st.gpus[0].busy_mean, 55);
  EXPECT_DOUBLE_EQ(st.gpus[0].util_mean, 90);
  // TENSO 0.1 0.2 0.3 0.2 0.2 0.2 -> mean 20%.
  EXPECT_DOUBLE_EQ(st.gpus[0].tensor_active_mean, 20);
  const std::vector<Finding> fs = findings_of(log);
  // A kernel ran 90% of the time: not starved, and 55% SM active is not under DCGM's 50%.
  EXPECT_EQ(find(fs, "gpu-starved"), nullptr);
  EXPECT_EQ(find(fs, "gpu-underfilled"), nullptr);
  EXPECT_NE(find(fs, "gpu-imbalance"), nullptr);  // 55 against 80
}

// One GPU, 10 samples 1 s apart, with the tool's utilisation (NaN: not logged) and SM active.
SmiLog util_and_sm_active(double util, double sm_active) {
  SmiLog log = series({std::vector<double>(10, util)});
  for (SmiSample& s : log.gpus[0].samples) s.sm_active_pct = sm_active;
  return log;
}

TEST(SmiRules, LowSmActiveIsUnderfilledWhenKernelsRanAndStarvedWhenTheyDidNot) {
  // A kernel ran 90% of the time, SM active 40%: underfilled (medium), not starved.
  std::vector<Finding> fs = findings_of(util_and_sm_active(90, 40));
  EXPECT_EQ(find(fs, "gpu-starved"), nullptr);
  const Finding* under = find(fs, "gpu-underfilled");
  ASSERT_NE(under, nullptr);
  EXPECT_EQ(under->severity, Severity::kMedium);
  EXPECT_DOUBLE_EQ(under->evidence[0].value, 40);
  EXPECT_DOUBLE_EQ(under->evidence[1].value, 90);
  EXPECT_NE(under->title.find("SM active 40% while a kernel ran 90% of the time"), std::string::npos) << under->title;
  // The edges: 50% SM active is not under 50; 59% utilisation is not kernels mostly running.
  EXPECT_EQ(find(findings_of(util_and_sm_active(90, 50)), "gpu-underfilled"), nullptr);
  fs = findings_of(util_and_sm_active(59, 40));
  EXPECT_EQ(find(fs, "gpu-underfilled"), nullptr);
  const Finding* starved = find(fs, "gpu-starved");
  ASSERT_NE(starved, nullptr);  // a kernel ran only 59% of the time: starved, judged by SM active 40%
  EXPECT_DOUBLE_EQ(starved->evidence[0].value, 40);
  EXPECT_NE(starved->detail.find("59%"), std::string::npos) << starved->detail;          // the utilisation beside it
  EXPECT_NE(find(findings_of(util_and_sm_active(60, 40)), "gpu-underfilled"), nullptr);  // 60 is mostly running
  // SM active alone (no utilisation logged): starvation cannot be told from underfill; gpu-starved,
  // whose detail says SM active also falls with small kernels.
  fs = findings_of(util_and_sm_active(std::nan(""), 40));
  EXPECT_EQ(find(fs, "gpu-underfilled"), nullptr);
  ASSERT_NE(find(fs, "gpu-starved"), nullptr);
  EXPECT_NE(find(fs, "gpu-starved")->detail.find("no utilisation"), std::string::npos);
}

}  // namespace smi_rules_test
}  // namespace
}  // namespace ferret
