// Time outliers on hand-made traces (issue 19, item 4): one event moved far away in time is set
// aside (or its far-reaching duration zeroed), counted, and never stretches a step; recordings
// with long waits between dense windows, and traces too small to tell, keep every event.
//
// The clean trace: host thread (pid 1, tid 1) with steps ProfilerStep#1..4 of 1000 us each,
// step k at [k*1000, k*1000 + 1000) us; in each, three launches at +100, +200, +300 us (10 us)
// and their kernels on device 0, stream 7, at launch + 50 us lasting 100 us. Every kernel ends
// inside its step's CPU span, so every step lasts exactly 1000 us = 1,000,000 ns.
#include "model/time_outliers.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "analysis/timeline/trace_summary.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace time_outliers_test {

constexpr double kDayUs = 86400e6;

struct Events {
  std::vector<std::string> list;
  // Index in `list` of the kernel launched at step `step` (1-based), slot 0..2.
  static std::size_t kernel_at(int step, int slot) {
    return static_cast<std::size_t>(1 + (step - 1) * 8 + 3 + 2 * slot);
  }
};

// `offset_us` shifts the whole recording; step numbers and correlation ids start after `first`.
Events clean_steps(double offset_us = 0, int first_step = 1, int first_corr = 1) {
  Events ev;
  ev.list.push_back(test::span("cpu_op", "aten::setup", 1, 1, offset_us + 500, 10));
  for (int s = 0; s < 4; ++s) {
    const double t = offset_us + (s + 1) * 1000.0;
    ev.list.push_back(test::span("user_annotation", fmt::format("ProfilerStep#{}", first_step + s), 1, 1, t, 1000));
    ev.list.push_back(test::span("cpu_op", "aten::mm", 1, 1, t + 50, 400));
    for (int k = 0; k < 3; ++k) {
      const int c = first_corr + s * 3 + k;
      ev.list.push_back(test::span("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 100 * (k + 1), 10, test::corr(c)));
      ev.list.push_back(
          test::span("kernel", fmt::format("gemm_{}_{}", s + 1, k), 0, 7, t + 100 * (k + 1) + 50, 100, test::corr(c)));
    }
  }
  return ev;
}

TraceModel load(const std::vector<std::string>& events) { return load_trace_text(test::trace(events)); }

std::uint64_t skipped(const TraceModel& m, const std::string& reason) {
  const auto it = m.report.skips.find(reason);
  return it == m.report.skips.end() ? 0 : it->second.count;
}
std::uint64_t repaired(const TraceModel& m, const std::string& reason) {
  const auto it = m.report.repairs.find(reason);
  return it == m.report.repairs.end() ? 0 : it->second.count;
}

void expect_clean_steps(const TraceModel& m, std::size_t steps = 4) {
  ASSERT_EQ(m.relations.steps.size(), steps);
  for (const Step& s : m.relations.steps) EXPECT_EQ(s.end_ns - s.start_ns, 1000000) << "ProfilerStep#" << s.number;
}

bool has_event_named(const TraceModel& m, std::string_view name) {
  for (std::size_t e = 0; e < m.size(); ++e)
    if (m.name_of(static_cast<EventIndex>(e)) == name) return true;
  return false;
}

TEST(TimeOutliers, CleanTraceKeepsEverything) {
  const Events ev = clean_steps();
  const TraceModel m = load(ev.list);
  EXPECT_EQ(m.size(), ev.list.size());
  EXPECT_EQ(m.report.skip_count() + m.report.repair_count(), 0u);
  expect_clean_steps(m);
}

TEST(TimeOutliers, KernelMovedDaysLaterIsSetAside) {
  // Step 2's second kernel (gemm_2_1, at 2250 us) moved 115 days later: without the rule, step 2
  // would end 115 days later (the issue's "1,666,666 s" step).
  Events ev = clean_steps();
  ev.list[Events::kernel_at(2, 1)] = test::span("kernel", "gemm_2_1", 0, 7, 2250 + 115 * kDayUs, 100, test::corr(5));
  const TraceModel m = load(ev.list);
  EXPECT_EQ(skipped(m, kTimeOutlierSkip), 1u);
  EXPECT_EQ(m.size(), ev.list.size() - 1);
  EXPECT_FALSE(has_event_named(m, "gemm_2_1"));
  expect_clean_steps(m);
  // The latest sound kernel start is gemm_4_2 at 4350 us: the moved one is 115 days minus
  // 2100 us after it, "115.0 days".
  const Issue& issue = m.report.skips.at(kTimeOutlierSkip);
  EXPECT_NE(issue.first_location.find("\"gemm_2_1\""), std::string::npos) << issue.first_location;
  EXPECT_NE(issue.first_location.find("115.0 days after"), std::string::npos) << issue.first_location;
  EXPECT_NE(issue.first_location.find("device 0"), std::string::npos) << issue.first_location;
  // Its launch is still in the trace, now without GPU work; the other 11 kernels are linked.
  EXPECT_EQ(m.relations.launches_without_gpu, 1u);
}

TEST(TimeOutliers, KernelNearTwoToThe62SharingACorrelationIsSetAside) {
  // An extra kernel at 2^62 ns = 4611686018427387.904 us sharing correlation 4 (step 2's first
  // launch): it would make a 146-year step.
  Events ev = clean_steps();
  ev.list.push_back(
      R"({"ph":"X","cat":"kernel","name":"ghost","pid":0,"tid":7,"ts":4611686018427387.904,"dur":5,"args":{"correlation":4}})");
  const TraceModel m = load(ev.list);
  EXPECT_EQ(skipped(m, kTimeOutlierSkip), 1u);
  EXPECT_FALSE(has_event_named(m, "ghost"));
  expect_clean_steps(m);
  EXPECT_NE(m.report.skips.at(kTimeOutlierSkip).first_location.find("years after"), std::string::npos);
}

TEST(TimeOutliers, HostEventsFarAwayAreSetAside) {
  // A cpu_op 3 years before the recording and a runtime call 40 days after it, on the recording's
  // thread: both set aside, and the trace's span is the clean one, 500 us .. 5000 us.
  Events ev = clean_steps();
  ev.list.push_back(test::span("cpu_op", "aten::early", 1, 1, 1500 - 3 * 365 * kDayUs, 20));
  ev.list.push_back(test::span("cuda_runtime", "cudaMemcpyAsync", 1, 1, 3000 + 40 * kDayUs, 20));
  const TraceModel m = load(ev.list);
  EXPECT_EQ(skipped(m, kTimeOutlierSkip), 2u);
  EXPECT_FALSE(has_event_named(m, "aten::early"));
  EXPECT_FALSE(has_event_named(m, "cudaMemcpyAsync"));
  const TraceSummary s = summarize_trace(m);
  EXPECT_EQ(s.first_ns, 500000);
  EXPECT_EQ(s.last_ns, 5000000);
  expect_clean_steps(m);
  EXPECT_NE(m.report.skips.at(kTimeOutlierSkip).first_location.find("process 1"), std::string::npos);
}

TEST(TimeOutliers, DenseWindowsSeparatedByAWaitKeepEverything) {
  // A profiler schedule with a wait: the same four steps again an hour (or three days) later.
  // Two dense clusters, neither a handful: nothing is set aside, and all eight steps last 1000 us.
  for (const double wait_us : {3600e6, 3 * kDayUs}) {
    Events ev = clean_steps();
    const Events later = clean_steps(5000 + wait_us, 5, 13);
    ev.list.insert(ev.list.end(), later.list.begin(), later.list.end());
    const TraceModel m = load(ev.list);
    EXPECT_EQ(m.size(), ev.list.size()) << wait_us;
    EXPECT_EQ(m.report.skip_count() + m.report.repair_count(), 0u) << wait_us;
    expect_clean_steps(m, 8);
  }
}

TEST(TimeOutliers, TooFewEventsKeepEverything) {
  // Two or three events: nothing says which of them is the recording.
  for (const std::size_t count : {2u, 3u}) {
    std::vector<std::string> events = {test::span("cpu_op", "a", 1, 1, 0, 10), test::span("cpu_op", "b", 1, 1, 20, 10),
                                       test::span("cpu_op", "c", 1, 1, 115 * kDayUs, 10)};
    events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(3 - count));
    const TraceModel m = load(events);
    EXPECT_EQ(m.size(), count);
    EXPECT_EQ(m.report.skip_count() + m.report.repair_count(), 0u);
  }
  // Nine kernels where the far one is one of nine: a bulk of 8 is 8 times the outliers, enough.
  // With only six near ones (under 8 x 1), too little evidence: kept.
  for (const int near : {8, 6}) {
    std::vector<std::string> events;
    for (int k = 0; k < near; ++k) events.push_back(test::span("kernel", "k", 0, 7, 100.0 * k, 50));
    events.push_back(test::span("kernel", "far", 0, 7, 115 * kDayUs, 50));
    const TraceModel m = load(events);
    EXPECT_EQ(skipped(m, kTimeOutlierSkip), near == 8 ? 1u : 0u) << near;
  }
}

TEST(TimeOutliers, FarReachingDurationIsZeroed) {
  // gemm_3_2 (at 3350 us) given a 5-day duration: under the parser's 30-day limit, yet it would
  // stretch step 3 to 5 days. Its start is sound: it stays, with duration 0, counted as a repair.
  Events ev = clean_steps();
  ev.list[Events::kernel_at(3, 2)] = test::span("kernel", "gemm_3_2", 0, 7, 3350, 5 * kDayUs, test::corr(9));
  const TraceModel m = load(ev.list);
  EXPECT_EQ(m.size(), ev.list.size());
  EXPECT_EQ(repaired(m, kTimeOutlierDurationRepair), 1u);
  EXPECT_EQ(m.report.skip_count(), 0u);
  expect_clean_steps(m);
  for (std::size_t e = 0; e < m.size(); ++e) {
    if (m.name_of(static_cast<EventIndex>(e)) == "gemm_3_2") {
      EXPECT_EQ(m.dur_ns[e], 0);
    }
  }
}

TEST(TimeOutliers, SpanReachingIntoTheRecordingStays) {
  // An annotation that began two days earlier and ends inside the recording is not far from it.
  Events ev = clean_steps();
  ev.list.push_back(test::span("user_annotation", "whole run", 1, 1, 2000 - 2 * kDayUs, 2 * kDayUs));
  const TraceModel m = load(ev.list);
  EXPECT_EQ(m.size(), ev.list.size());
  EXPECT_EQ(m.report.skip_count(), 0u);
}

TEST(TimeOutliers, SideTablesFollowTheRemovedEvents) {
  // Kernel args of every kernel: after gemm_2_1 is removed, each remaining row still names a
  // kernel, and the rows of the kernels after it point at their new (one lower) index.
  Events ev = clean_steps();
  for (std::size_t s = 1; s <= 4; ++s)
    for (int k = 0; k < 3; ++k) {
      std::string& kernel = ev.list[Events::kernel_at(static_cast<int>(s), k)];
      kernel.insert(kernel.size() - 2, ",\"grid\":[" + std::to_string(s * 10 + static_cast<std::size_t>(k)) + ",1,1]");
    }
  ev.list[Events::kernel_at(2, 1)] =
      test::span("kernel", "gemm_2_1", 0, 7, 2250 + 115 * kDayUs, 100, test::corr(5) + ",\"grid\":[21,1,1]");
  const TraceModel m = load(ev.list);
  ASSERT_EQ(m.kernel_args.size(), 11u);
  for (const KernelArgs& k : m.kernel_args) {
    const std::string name(m.name_of(k.event));
    // gemm_S_K was given grid S*10+K.
    EXPECT_EQ(name, fmt::format("gemm_{}_{}", k.grid[0] / 10, k.grid[0] % 10));
  }
}

}  // namespace time_outliers_test
}  // namespace
}  // namespace ferret
