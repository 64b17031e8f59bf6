// Relations on hand-made traces: nesting, correlation, launch -> op, steps. Every expected value is
// worked out by hand in the comment above it; times in the traces are microseconds, the model's
// are nanoseconds (x1000).
#include "model/relations.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ingest/trace_loader.h"

namespace ferret {
namespace {
namespace relations_test {

EventIndex find(const TraceModel& m, std::string_view name) {
  for (std::size_t e = 0; e < m.size(); ++e)
    if (m.name_of(static_cast<EventIndex>(e)) == name) return static_cast<EventIndex>(e);
  ADD_FAILURE() << "no event named " << name;
  return kNoEvent;
}

std::string span(const char* cat, const std::string& name, int tid, double ts, double dur,
                 const std::string& args = "{}", int pid = 1) {
  return fmt::format(
      R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {}}})", cat, name,
      pid, tid, ts, dur, args);
}
std::string corr(int c) { return fmt::format(R"({{"correlation": {}}})", c); }
std::string kernel(const std::string& name, double ts, double dur, int c) {
  return span("kernel", name, 7, ts, dur, corr(c), 0);
}

TraceModel load(const std::vector<std::string>& events) {
  std::string text = R"({"traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i) text += (i ? ",\n" : "\n") + events[i];
  return load_trace_text(text + "]}");
}

// --- Nesting -------------------------------------------------------------------------------------

TEST(RelationsNesting, InnermostEnclosingSpanPerThread) {
  // Thread 1: A [0,100) holds B [10,40) which holds C [20,30); D [50,90) is in A; F [100,110)
  // starts where A ends, so it is not inside A. Thread 2: E [15,25) overlaps B in time but lives
  // on another thread: no parent. The kernel is GPU work, never nested. Listed out of time order.
  const TraceModel m = load({span("cpu_op", "C", 1, 20, 10), span("cpu_op", "A", 1, 0, 100),
                             span("cpu_op", "E", 2, 15, 10), span("cpu_op", "B", 1, 10, 30),
                             span("cpu_op", "D", 1, 50, 40), span("cpu_op", "F", 1, 100, 10), kernel("K", 20, 10, 1)});
  const auto& parent = m.relations.parent;
  ASSERT_EQ(parent.size(), m.size());
  EXPECT_EQ(parent[find(m, "A")], kNoEvent);
  EXPECT_EQ(parent[find(m, "B")], find(m, "A"));
  EXPECT_EQ(parent[find(m, "C")], find(m, "B"));
  EXPECT_EQ(parent[find(m, "D")], find(m, "A"));
  EXPECT_EQ(parent[find(m, "E")], kNoEvent);
  EXPECT_EQ(parent[find(m, "F")], kNoEvent);
  EXPECT_EQ(parent[find(m, "K")], kNoEvent);
  EXPECT_EQ(m.relations.nesting_repairs, 0u);
  EXPECT_EQ(m.report.repair_count(), 0u);
  EXPECT_TRUE(m.relations.built);
}

TEST(RelationsNesting, SamePidDifferentThreadsAndSameTidDifferentPids) {
  // (pid 1, tid 5) and (pid 2, tid 5) are different threads.
  const TraceModel m =
      load({span("cpu_op", "outer", 5, 0, 100, "{}", 1), span("cpu_op", "other_process", 5, 10, 10, "{}", 2)});
  EXPECT_EQ(m.relations.parent[find(m, "other_process")], kNoEvent);
}

TEST(RelationsNesting, ChildThatOutlivesItsParentIsNestedAndCounted) {
  // P [0,100); Q [50,150) starts inside P and ends after it: Q's parent is P, one repair. S
  // [60,70) lies inside both: its parent is Q (the innermost). Nothing is dropped and Q keeps
  // its recorded 100 us duration.
  const TraceModel m =
      load({span("cpu_op", "P", 1, 0, 100), span("cpu_op", "Q", 1, 50, 100), span("cpu_op", "S", 1, 60, 10)});
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.relations.parent[find(m, "Q")], find(m, "P"));
  EXPECT_EQ(m.relations.parent[find(m, "S")], find(m, "Q"));
  EXPECT_EQ(m.dur_ns[find(m, "Q")], 100000);
  EXPECT_EQ(m.relations.nesting_repairs, 1u);
  EXPECT_EQ(m.report.repair_count(), 1u);
  ASSERT_EQ(m.report.repairs.size(), 1u);
  const Issue& issue = m.report.repairs.begin()->second;
  EXPECT_EQ(issue.count, 1u);
  EXPECT_NE(issue.first_location.find(fmt::format("event #{}", find(m, "Q"))), std::string::npos)
      << issue.first_location;
}

TEST(RelationsNesting, EveryOutlivingChildIsCounted) {
  // Two independent overruns: Q1 [50,150) over P1 [0,100); Q2 [250,350) over P2 [200,300).
  const TraceModel m = load({span("cpu_op", "P1", 1, 0, 100), span("cpu_op", "Q1", 1, 50, 100),
                             span("cpu_op", "P2", 1, 200, 100), span("cpu_op", "Q2", 1, 250, 100)});
  EXPECT_EQ(m.size(), 4u);
  EXPECT_EQ(m.relations.nesting_repairs, 2u);
  EXPECT_EQ(m.report.repair_count(), 2u);
  EXPECT_EQ(m.relations.parent[find(m, "Q2")], find(m, "P2"));
}

// --- Correlation -------------------------------------------------------------------------------

TEST(RelationsCorrelation, LaunchesLinkToTheirGpuWork) {
  // aten::mm [0,100) issues: launch c5 [10,20) -> gemm [30,50); launch c8 [30,35) whose kernel is
  // missing; cudaMemcpyAsync c9 [40,45) -> memcpy [50,55); cudaStreamSynchronize c10 [50,60) (no
  // GPU work, and not a kernel launch). GPU work without a launch: orphan (c77) and nocorr (no
  // correlation at all) -> 2 unmatched; a cuda_sync wait c11 is not counted as unmatched.
  const TraceModel m = load({
      span("cpu_op", "aten::mm", 1, 0, 100, R"({"External id": 1})"),
      span("cuda_runtime", "cudaLaunchKernel", 1, 10, 10, R"({"correlation": 5, "External id": 1})"),
      kernel("gemm", 30, 20, 5),
      kernel("orphan", 60, 10, 77),
      span("kernel", "nocorr", 7, 80, 10, "{}", 0),
      span("cuda_runtime", "cudaLaunchKernelExC", 1, 30, 5, corr(8)),
      span("cuda_runtime", "cudaMemcpyAsync", 1, 40, 5, corr(9)),
      span("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 7, 50, 5, corr(9), 0),
      span("cuda_runtime", "cudaStreamSynchronize", 1, 50, 10, corr(10)),
      span("cuda_sync", "Stream Sync", 7, 55, 3, corr(11), 0),
  });
  const Relations& r = m.relations;
  const EventIndex launch = find(m, "cudaLaunchKernel"), gemm = find(m, "gemm");
  EXPECT_EQ(r.launcher_of(gemm), launch);
  EXPECT_EQ(r.gpu_of_launch(launch), std::vector<EventIndex>{gemm});
  EXPECT_EQ(r.op_of_launch(launch), find(m, "aten::mm"));
  EXPECT_EQ(r.launcher_of(find(m, "Memcpy HtoD (Pinned -> Device)")), find(m, "cudaMemcpyAsync"));
  EXPECT_EQ(r.op_of_launch(find(m, "cudaMemcpyAsync")), find(m, "aten::mm"));
  EXPECT_EQ(r.launcher_of(find(m, "orphan")), kNoEvent);
  EXPECT_EQ(r.launcher_of(find(m, "nocorr")), kNoEvent);
  EXPECT_TRUE(r.gpu_of_launch(find(m, "cudaLaunchKernelExC")).empty());
  EXPECT_EQ(r.unmatched_gpu, 2u);
  EXPECT_EQ(r.launches_without_gpu, 1u);  // only the kernel launch c8; a sync launches nothing
  // Lookups with events of the wrong kind answer "none".
  EXPECT_EQ(r.launcher_of(find(m, "aten::mm")), kNoEvent);
  EXPECT_EQ(r.op_of_launch(gemm), kNoEvent);
  EXPECT_TRUE(r.gpu_of_launch(gemm).empty());
  // Launch table: the 4 runtime calls with a correlation id (c5, c8, c9, c10).
  EXPECT_EQ(r.launches.size(), 4u);
  // GPU table: gemm, orphan, nocorr, memcpy, sync.
  EXPECT_EQ(r.gpu_events.size(), 5u);
}

TEST(RelationsCorrelation, LaunchInsideANestedChildOpBelongsToTheInnermostOp) {
  // aten::linear [0,100) > aten::addmm [10,60) > launch c1 [20,30): op is aten::addmm.
  // aten::linear > launch c2 [70,75): op is aten::linear.
  // aten::linear > python fn [80,95) > launch c3 [82,83): the walk passes the Python frame and
  // stops at aten::linear.
  const TraceModel m = load({
      span("cpu_op", "aten::linear", 1, 0, 100),
      span("cpu_op", "aten::addmm", 1, 10, 50),
      span("cuda_runtime", "launch_in_addmm", 1, 20, 10, corr(1)),
      span("cuda_runtime", "launch_in_linear", 1, 70, 5, corr(2)),
      span("python_function", "fn", 1, 80, 15),
      span("cuda_runtime", "launch_in_python", 1, 82, 1, corr(3)),
      kernel("k1", 40, 5, 1),
      kernel("k2", 80, 5, 2),
      kernel("k3", 90, 5, 3),
  });
  EXPECT_EQ(m.relations.op_of_launch(find(m, "launch_in_addmm")), find(m, "aten::addmm"));
  EXPECT_EQ(m.relations.op_of_launch(find(m, "launch_in_linear")), find(m, "aten::linear"));
  EXPECT_EQ(m.relations.op_of_launch(find(m, "launch_in_python")), find(m, "aten::linear"));
  EXPECT_EQ(m.relations.launcher_of(find(m, "k3")), find(m, "launch_in_python"));
}

TEST(RelationsCorrelation, LaunchWithoutEnclosingOpFallsBackToExternalIdThenAnnotation) {
  // Thread 2: backward op ext 42 [0,10). Thread 3: launch ext 42 [5,6) has no enclosing op: the
  // External id finds the op on thread 2. Thread 4: user annotation "region" [0,50) holds a
  // launch with no External id: the annotation. Thread 5: a launch inside ProfilerStep#1 only:
  // a step is not an operator, so none.
  const TraceModel m = load({
      span("cpu_op", "MmBackward0", 2, 0, 10, R"({"External id": 42})"),
      span("cuda_runtime", "launch_ext", 3, 5, 1, R"({"External id": 42, "correlation": 1})"),
      span("user_annotation", "region", 4, 0, 50),
      span("cuda_runtime", "launch_annotated", 4, 5, 1, corr(2)),
      span("user_annotation", "ProfilerStep#1", 5, 0, 50),
      span("cuda_runtime", "launch_in_step", 5, 5, 1, corr(3)),
  });
  EXPECT_EQ(m.relations.op_of_launch(find(m, "launch_ext")), find(m, "MmBackward0"));
  EXPECT_EQ(m.relations.op_of_launch(find(m, "launch_annotated")), find(m, "region"));
  EXPECT_EQ(m.relations.op_of_launch(find(m, "launch_in_step")), kNoEvent);
}

// Launches nested in launches, with annotations and an op at different depths: every launch gets
// the nearest op above it, else the innermost annotation, whatever order the walks meet the chain
// in (the walks are memoised; they were quadratic in the chain's depth).
//   thread 1: op [0,100) > L1 [1,98) > "outer" annotation [2,96) > L2 [3,94) > "inner" [4,92) > L3 [5,90)
//   thread 2: "solo" [0,100) > M1 [1,98) > M2 [2,96) > ProfilerStep#1 [3,94) > M3 [4,92)
TEST(RelationsCorrelation, NestedLaunchesFindTheNearestOpOrInnermostAnnotation) {
  const TraceModel m = load({
      span("cuda_runtime", "L3", 1, 5, 85, corr(3)),
      span("cpu_op", "op", 1, 0, 100),
      span("cuda_runtime", "L1", 1, 1, 97, corr(1)),
      span("user_annotation", "outer", 1, 2, 94),
      span("cuda_runtime", "L2", 1, 3, 91, corr(2)),
      span("user_annotation", "inner", 1, 4, 88),
      span("user_annotation", "solo", 2, 0, 100),
      span("cuda_runtime", "M1", 2, 1, 97, corr(11)),
      span("cuda_runtime", "M2", 2, 2, 94, corr(12)),
      span("user_annotation", "ProfilerStep#1", 2, 3, 91),
      span("cuda_runtime", "M3", 2, 4, 88, corr(13)),
  });
  for (const char* l : {"L1", "L2", "L3"}) EXPECT_EQ(m.relations.op_of_launch(find(m, l)), find(m, "op")) << l;
  for (const char* l : {"M1", "M2", "M3"}) EXPECT_EQ(m.relations.op_of_launch(find(m, l)), find(m, "solo")) << l;

  // 20,000 identical launch spans nest into one chain under "region": each resolves to it.
  std::vector<std::string> chain = {span("user_annotation", "region", 3, 0, 100)};
  for (int i = 0; i < 20000; ++i) chain.push_back(span("cuda_runtime", "cudaLaunchKernel", 3, 10, 50, corr(100 + i)));
  const TraceModel deep = load(chain);
  const EventIndex region = find(deep, "region");
  ASSERT_EQ(deep.relations.launches.size(), 20000u);
  for (const EventIndex launch : deep.relations.launches) ASSERT_EQ(deep.relations.op_of_launch(launch), region);
}

// --- Steps ---------------------------------------------------------------------------------------

TEST(RelationsSteps, EndExtendsToGpuWorkAndNextStartIsClamped) {
  // ProfilerStep#1 [0,1000): launches c1 at 100 -> K1 [200,300), c2 at 900 -> K2 [950,1300).
  //   end = max(1000, 300, 1300) = 1300; kernels = 2.
  // ProfilerStep#2 [1000,2000): c3 at 1100 -> K3 [1350,1500), c4 at 1900 -> K4 [1950,2100).
  //   start = max(1000, step 1's end 1300) = 1300; end = max(2000, 2100) = 2100; kernels = 2.
  // c5 at 2500 (after every step) -> K5 [2600,5000): belongs to no step, extends nothing.
  // 2 >= 0.8 * 2: the last step is complete and kept.
  const TraceModel m = load({
      span("user_annotation", "ProfilerStep#2", 1, 1000, 1000),  // out of order on purpose
      span("user_annotation", "ProfilerStep#1", 1, 0, 1000),
      span("cuda_runtime", "cudaLaunchKernel", 1, 100, 5, corr(1)),
      kernel("K1", 200, 100, 1),
      span("cuda_runtime", "cudaLaunchKernel", 1, 900, 5, corr(2)),
      kernel("K2", 950, 350, 2),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1100, 5, corr(3)),
      kernel("K3", 1350, 150, 3),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1900, 5, corr(4)),
      kernel("K4", 1950, 150, 4),
      span("cuda_runtime", "cudaLaunchKernel", 1, 2500, 5, corr(5)),
      kernel("K5", 2600, 2400, 5),
  });
  const auto& steps = m.relations.steps;
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].number, 1);
  EXPECT_EQ(steps[0].event, find(m, "ProfilerStep#1"));
  EXPECT_EQ(steps[0].start_ns, 0);
  EXPECT_EQ(steps[0].cpu_end_ns, 1000000);
  EXPECT_EQ(steps[0].end_ns, 1300000);
  EXPECT_EQ(steps[0].kernels, 2u);
  EXPECT_EQ(steps[1].number, 2);
  EXPECT_EQ(steps[1].start_ns, 1300000);
  EXPECT_EQ(steps[1].cpu_end_ns, 2000000);
  EXPECT_EQ(steps[1].end_ns, 2100000);
  EXPECT_EQ(steps[1].kernels, 2u);
  EXPECT_FALSE(m.relations.dropped_step.has_value());
  EXPECT_TRUE(m.report.notes.empty());
}

// Steps k = 1..n at [1000k, 1000k + 1000) us, step k launching kernels[k-1] kernels that end
// inside the step, so no extension and no clamping.
TraceModel steps_trace(const std::vector<int>& kernels) {
  std::vector<std::string> events;
  int c = 0;
  for (std::size_t k = 1; k <= kernels.size(); ++k) {
    const double base = 1000.0 * static_cast<double>(k);
    events.push_back(span("user_annotation", fmt::format("ProfilerStep#{}", k), 1, base, 1000));
    for (int j = 0; j < kernels[k - 1]; ++j) {
      ++c;
      events.push_back(span("cuda_runtime", "cudaLaunchKernel", 1, base + 10 + 20 * j, 5, corr(c)));
      events.push_back(kernel(fmt::format("k{}", c), base + 15 + 20 * j, 5, c));
    }
  }
  return load(events);
}

TEST(RelationsSteps, TrailingStepUnder80PercentOfThePreviousKernelsIsDropped) {
  // Kernels 5, 5, 3: 3 < 0.8 * 5 = 4 -> ProfilerStep#3 is incomplete and dropped, with a note.
  const TraceModel m = steps_trace({5, 5, 3});
  ASSERT_EQ(m.relations.steps.size(), 2u);
  EXPECT_EQ(m.relations.steps[1].number, 2);
  ASSERT_TRUE(m.relations.dropped_step.has_value());
  EXPECT_EQ(m.relations.dropped_step->number, 3);
  EXPECT_EQ(m.relations.dropped_step->kernels, 3u);
  ASSERT_EQ(m.report.notes.size(), 1u);
  EXPECT_NE(m.report.notes[0].find("ProfilerStep#3"), std::string::npos) << m.report.notes[0];
}

TEST(RelationsSteps, TrailingStepAtExactly80PercentIsKept) {
  // Kernels 5, 5, 4: 4 >= 0.8 * 5 = 4 -> complete.
  const TraceModel m = steps_trace({5, 5, 4});
  ASSERT_EQ(m.relations.steps.size(), 3u);
  EXPECT_EQ(m.relations.steps[2].kernels, 4u);
  EXPECT_FALSE(m.relations.dropped_step.has_value());
  EXPECT_TRUE(m.report.notes.empty());
}

TEST(RelationsSteps, OnlyTheLastStepIsJudged) {
  // Kernels 10, 2, 2: the short middle step is not trailing; the last has 2 >= 0.8 * 2.
  const TraceModel m = steps_trace({10, 2, 2});
  EXPECT_EQ(m.relations.steps.size(), 3u);
  EXPECT_FALSE(m.relations.dropped_step.has_value());
}

TEST(RelationsSteps, ASingleStepIsNeverDropped) {
  const TraceModel m = steps_trace({0});
  ASSERT_EQ(m.relations.steps.size(), 1u);
  EXPECT_EQ(m.relations.steps[0].start_ns, 1000000);
  EXPECT_EQ(m.relations.steps[0].end_ns, 2000000);
}

TEST(RelationsSteps, StepNumbersFromNames) {
  EXPECT_EQ(profiler_step_number("ProfilerStep#12"), 12);
  EXPECT_EQ(profiler_step_number("ProfilerStep#0"), 0);
  EXPECT_EQ(profiler_step_number("ProfilerStep#"), -1);
  EXPECT_EQ(profiler_step_number("ProfilerStep#1a"), -1);
  EXPECT_EQ(profiler_step_number("xProfilerStep#1"), -1);
  EXPECT_EQ(profiler_step_number("ProfilerStep"), -1);
  EXPECT_EQ(profiler_step_number(""), -1);
}

TEST(RelationsSteps, RebuildingGivesTheSameRelations) {
  TraceModel m = steps_trace({3, 3});
  const auto before = m.relations.steps;
  build_relations(m);
  ASSERT_EQ(m.relations.steps.size(), before.size());
  EXPECT_EQ(m.relations.steps[1].end_ns, before[1].end_ns);
  EXPECT_EQ(m.relations.launches.size(), 6u);
}

TEST(RelationsSteps, LoadWithoutRelations) {
  LoadOptions o;
  o.build_relations = false;
  const TraceModel m = load_trace_text(
      R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]})",
      o);
  EXPECT_FALSE(m.relations.built);
  EXPECT_TRUE(m.relations.steps.empty());
}

}  // namespace relations_test
}  // namespace
}  // namespace ferret
