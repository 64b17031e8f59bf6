// `ferret watch`'s rules on hand-made summaries: each verdict at its thresholds' edges.
#include <gtest/gtest.h>

#include <algorithm>

#include "diagnosis/rule_registry.h"
#include "diagnosis/watch/rules_watch.h"

namespace ferret {
namespace {
namespace rules_watch_test {

// A summary of a run on 4 cores with `workers` DataLoader workers using `worker_cores` in all, a
// main process at `main_cores`, and one GPU busy `gpu_pct` (< 0: no GPU watched).
WatchSummary summary(double gpu_pct, int workers, double worker_cores, double main_cores = 0.3) {
  WatchSummary s;
  s.samples = 20;
  s.wall_s = 10;
  s.sampled_s = 10;
  s.cores_available = 4;
  s.cores_origin = "4 CPUs in the affinity mask";
  s.main_is_python = true;
  s.role_processes[0] = 1;
  s.role_processes[1] = workers;
  s.workers_alive_mean = workers;
  s.roles[0].mean = main_cores;
  s.roles[0].p95 = main_cores;
  s.roles[1].mean = worker_cores;
  s.busiest_main.mean = main_cores;
  s.busiest_main.p95 = main_cores;
  s.total.mean = main_cores + worker_cores;
  if (gpu_pct >= 0) {
    s.gpu_watched = true;
    s.gpu_source = "fake";
    WatchGpuStat g;
    g.judged_by = "tree";
    g.samples = 20;
    g.util_mean = gpu_pct;
    s.gpus.push_back(g);
    s.gpus_judged = 1;
    s.gpu_util_mean = gpu_pct;
  }
  return s;
}

std::vector<std::string> ids(const WatchSummary& s) {
  std::vector<Finding> f;
  rules_watch(s, f);
  std::vector<std::string> out;
  for (const Finding& x : f) {
    EXPECT_NE(find_rule(x.id), nullptr) << x.id;
    out.push_back(x.id);
  }
  return out;
}

using Ids = std::vector<std::string>;

TEST(RulesWatch, StarvedGpuAndPeggedWorkersIsCpuBoundInput) {
  // 2 workers on 4 cores can use 2 cores; 1.9 >= 0.9 x 2 = 1.8.
  WatchSummary s = summary(20, 2, 1.9);
  EXPECT_EQ(ids(s), Ids{"watch-cpu-bound-input"});
  std::vector<Finding> f;
  rules_watch(s, f);
  EXPECT_DOUBLE_EQ(f[0].max_speedup, 1 / (1 - 0.8));  // the GPU idle 80% of the time: at most 5x
  EXPECT_EQ(f[0].severity, Severity::kHigh);          // busy < 30%
  // 2 workers, 4 cores: idle cores, so the first fix is more workers (toward 3).
  EXPECT_NE(f[0].fixes[0].text.find("num_workers"), std::string::npos) << f[0].fixes[0].text;
  // 4 workers on 4 cores at 3.7 cores (>= 3.6): no idle core, more workers will not help.
  s = summary(20, 4, 3.7);
  f.clear();
  rules_watch(s, f);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].fixes[0].text.find("will not help past the 4 cores"), std::string::npos) << f[0].fixes[0].text;
  // 8 workers on 4 cores: capacity is the 4 cores.
  EXPECT_EQ(ids(summary(20, 8, 3.6)), Ids{"watch-cpu-bound-input"});
  EXPECT_EQ(ids(summary(20, 8, 3.5)), Ids{"watch-gpu-starved"});
}

TEST(RulesWatch, StarvedGpuWithIdleOrNoWorkersIsSomethingElse) {
  EXPECT_EQ(ids(summary(20, 2, 1.7)), Ids{"watch-gpu-starved"});  // 1.7 < 1.8
  EXPECT_EQ(ids(summary(59.9, 0, 0)), Ids{"watch-gpu-starved"});
  // A main process at one core with a starved GPU: the detail says so.
  std::vector<Finding> f;
  rules_watch(summary(40, 0, 0, 0.97), f);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "watch-gpu-starved");
  EXPECT_NE(f[0].detail.find("one core"), std::string::npos) << f[0].detail;
  EXPECT_EQ(f[0].severity, Severity::kMedium);  // 30% <= busy < 60%
}

TEST(RulesWatch, BusyGpuIsNoFinding) {
  EXPECT_EQ(ids(summary(60, 2, 1.95)), Ids{});
  EXPECT_EQ(ids(summary(95, 0, 0, 0.3)), Ids{});
  // Waiting CPU with a busy GPU is the GPU working: no finding.
  EXPECT_EQ(ids(summary(95, 0, 0, 0.01)), Ids{});
}

TEST(RulesWatch, CpuOnlyReportsTheCpuSide) {
  EXPECT_EQ(ids(summary(-1, 2, 1.9)), Ids{"watch-workers-pegged"});
  EXPECT_EQ(ids(summary(-1, 0, 0, 0.95)), Ids{"watch-main-one-core"});
  EXPECT_EQ(ids(summary(-1, 0, 0, 0.05)), Ids{"watch-waiting"});
  EXPECT_EQ(ids(summary(-1, 0, 0, 0.5)), Ids{});
  // Two cores' worth in the main process (multi-threaded ops) is not one-core bound.
  WatchSummary s = summary(-1, 0, 0, 1.8);
  s.busiest_main.p95 = 2.0;
  EXPECT_EQ(ids(s), Ids{});
}

TEST(WatchSummary, ACutShortLastSampleCountsInTheMeanNotThePeak) {
  WatchSeries series;
  series.interval_s = 0.5;
  series.cores_available = 2;
  for (int i = 1; i <= 3; ++i) {
    CpuSample c;
    c.t_s = 0.5 * i;
    c.interval_s = 0.5;
    c.cores[0] = 1.0;
    series.cpu.push_back(c);
  }
  CpuSample last;  // 2 ticks in the 10 ms before the command ended: "2 cores"
  last.t_s = 1.51;
  last.interval_s = 0.01;
  last.cores[0] = 2.0;
  series.cpu.push_back(last);
  const WatchSummary s = summarize_watch(series);
  EXPECT_NEAR(s.roles[0].cpu_s, 1.5 + 0.02, 1e-12);
  EXPECT_NEAR(s.roles[0].mean, 1.52 / 1.51, 1e-12);
  EXPECT_DOUBLE_EQ(s.roles[0].peak, 1.0);
  EXPECT_DOUBLE_EQ(s.roles[0].p95, 1.0);
  EXPECT_DOUBLE_EQ(s.sampled_s, 1.51);
}

}  // namespace rules_watch_test
}  // namespace
}  // namespace ferret
