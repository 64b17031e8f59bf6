// The analysed window: steps, --window NAME[#K], --time A-B, the whole trace; selectors that match
// nothing are errors; GPU work queued before profiling began belongs to no window.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "analysis/timeline/gpu_timeline.h"
#include "analysis/timeline/step_breakdown.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace analysis_window_test {

using test::corr;
using test::span;

// Times in us. Host thread (pid 1, tid 1):
//   warmup        [0, 100)    launches corr 10 at 10 -> kernel [20, 150) on device 0 stream 7
//   ProfilerStep#1 [200, 300) launches corr 11 at 210 -> kernel [220, 280)
//   ProfilerStep#2 [300, 400) launches corr 12 at 310 -> kernel [320, 420)
//   warmup        [500, 550)  launches nothing
// GPU-side copy of step 1: gpu_user_annotation ProfilerStep#1 [218, 282) on device 0.
// Queued before profiling began (no launch in the trace):
//   corr 3 (< 10, the first launch's id) on device 0 stream 8 at [202, 218): inside step 1
//   no correlation, device 1, at [1, 5): starts before the first launch call (10)
// Not before the trace: corr 50 at [600, 610) (a later launch the trace lost).
const std::string kTrace =
    std::string(R"({"traceEvents":[)") + span("user_annotation", "warmup", 1, 1, 0, 100) + "," +
    span("cuda_runtime", "cudaLaunchKernel", 1, 1, 10, 5, corr(10)) + "," +
    span("kernel", "k_warm", 0, 7, 20, 130, corr(10)) + "," +
    span("user_annotation", "ProfilerStep#1", 1, 1, 200, 100) + "," +
    span("cuda_runtime", "cudaLaunchKernel", 1, 1, 210, 5, corr(11)) + "," +
    span("kernel", "k_step1", 0, 7, 220, 60, corr(11)) + "," +
    span("gpu_user_annotation", "ProfilerStep#1", 0, 7, 218, 64) + "," +
    span("user_annotation", "ProfilerStep#2", 1, 1, 300, 100) + "," +
    span("cuda_runtime", "cudaLaunchKernel", 1, 1, 310, 5, corr(12)) + "," +
    span("kernel", "k_step2", 0, 7, 320, 100, corr(12)) + "," + span("user_annotation", "warmup", 1, 1, 500, 50) + "," +
    span("kernel", "k_before", 0, 8, 202, 16, corr(3)) + "," + span("kernel", "k_before_no_corr", 1, 7, 1, 4) + "," +
    span("kernel", "k_lost_launch", 0, 7, 600, 10, corr(50)) + "]}";

TEST(LaunchedBeforeTrace, MarksWorkQueuedBeforeProfilingOnly) {
  const TraceModel m = load_trace_text(kTrace);
  const Relations& r = m.relations;
  EXPECT_EQ(r.launched_before_trace, 2u);
  EXPECT_EQ(r.launched_before_trace_ns, (16 + 4) * 1000);
  for (std::size_t e = 0; e < m.size(); ++e) {
    const std::string_view name = m.name_of(static_cast<EventIndex>(e));
    EXPECT_EQ(r.launched_before_trace_event(static_cast<EventIndex>(e)),
              name == "k_before" || name == "k_before_no_corr")
        << name;
  }
}

TEST(LaunchedBeforeTrace, NothingIsMarkedWhenNoActivityLinksToALaunch) {
  // Without any working link the trace cannot tell queued-before work from the rest.
  const TraceModel m = load_trace_text(std::string(R"({"traceEvents":[)") +
                                       span("cuda_runtime", "cudaLaunchKernel", 1, 1, 10, 5, corr(10)) + "," +
                                       span("kernel", "k", 0, 7, 1, 4, corr(3)) + "]}");
  EXPECT_EQ(m.relations.launched_before_trace, 0u);
}

TEST(StepGpuSpan, GpuSideCopyOfTheStepWinsOverLaunchedWork) {
  const TraceModel m = load_trace_text(kTrace);
  ASSERT_EQ(m.relations.steps.size(), 2u);
  const Step& s1 = m.relations.steps[0];
  EXPECT_TRUE(s1.gpu_span_from_annotation);
  EXPECT_EQ(s1.gpu_start_ns, 218000);  // the gpu_user_annotation, not the kernel's 220
  EXPECT_EQ(s1.gpu_end_ns, 282000);
  const Step& s2 = m.relations.steps[1];
  EXPECT_FALSE(s2.gpu_span_from_annotation);
  EXPECT_EQ(s2.gpu_start_ns, 320000);  // its one kernel
  EXPECT_EQ(s2.gpu_end_ns, 420000);
  EXPECT_EQ(s2.end_ns, 420000);  // extended to its GPU work
}

TEST(StepWindow, WorkQueuedBeforeProfilingIsNotTheStepsWork) {
  const TraceModel m = load_trace_text(kTrace);
  const AnalysisContext ctx = make_analysis_context(m, {});
  EXPECT_EQ(ctx.source, WindowSource::kSteps);
  EXPECT_EQ(ctx.label, "ProfilerStep#1-2");
  EXPECT_EQ(ctx.window_start_ns, 200000);
  EXPECT_EQ(ctx.window_end_ns, 420000);
  const StepBreakdownResult b = analyze_step_breakdown(m, ctx);
  ASSERT_EQ(b.steps.size(), 2u);
  // Step 1's kernel time is its own kernel, 60 us; k_before (16 us inside it) is not counted.
  EXPECT_EQ(b.steps[0].ns[static_cast<int>(StepCategory::kKernel)], 60000);
  // Timeline span = first .. last counted activity in the window = 220 .. 420 (k_before would make
  // it 202 .. 420); busy = 60 + 100.
  const GpuTimelineResult t = analyze_gpu_timeline(m, ctx);
  EXPECT_EQ(t.overall.span_ns, 200000);
  EXPECT_EQ(t.overall.compute_ns, 160000);
}

AnalysisContext context(const TraceModel& m, const std::string& window) {
  AnalysisOptions o;
  o.window_name = window;
  return make_analysis_context(m, o);
}

TEST(AnnotationWindow, KthSpanExtendedToTheGpuWorkItLaunched) {
  const TraceModel m = load_trace_text(kTrace);
  const AnalysisContext first = context(m, "warmup");
  EXPECT_EQ(first.source, WindowSource::kAnnotation);
  EXPECT_FALSE(first.has_steps);
  EXPECT_EQ(first.label, "warmup#1");
  EXPECT_EQ(first.window_start_ns, 0);
  EXPECT_EQ(first.window_end_ns, 150000);  // span ends at 100; the kernel it launched at 150
  const AnalysisContext second = context(m, "warmup#2");
  EXPECT_EQ(second.label, "warmup#2");
  EXPECT_EQ(second.window_start_ns, 500000);
  EXPECT_EQ(second.window_end_ns, 550000);
  // A step can be a window too: its own span, no step statistics.
  EXPECT_EQ(context(m, "ProfilerStep#2").window_end_ns, 420000);
}

TEST(AnnotationWindow, NoSuchSpanNamesTheAnnotationsThatExist) {
  const TraceModel m = load_trace_text(kTrace);
  try {
    context(m, "inference");
    FAIL() << "expected a SelectionError";
  } catch (const SelectionError& e) {
    EXPECT_NE(std::string(e.what()).find("no span named \"inference\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"warmup\" (2x)"), std::string::npos) << e.what();
  }
  try {
    context(m, "warmup#3");
    FAIL() << "expected a SelectionError";
  } catch (const SelectionError& e) {
    EXPECT_NE(std::string(e.what()).find("occurs 2 times"), std::string::npos) << e.what();
  }
}

TEST(TimeWindow, MillisecondsFromTheTraceStart) {
  const TraceModel m = load_trace_text(kTrace);
  AnalysisOptions o;
  o.time_from_ms = 0.1;
  o.time_to_ms = 0.25;
  // The trace starts at 0 us, with the first warmup span.
  const AnalysisContext ctx = make_analysis_context(m, o);
  EXPECT_EQ(ctx.source, WindowSource::kTimeRange);
  EXPECT_EQ(ctx.window_start_ns, 100000);
  EXPECT_EQ(ctx.window_end_ns, 250000);
  EXPECT_EQ(ctx.label, "0.1-0.25 ms");
  // Open-ended: to the trace's end, 610 us (k_lost_launch).
  o.time_to_ms.reset();
  EXPECT_EQ(make_analysis_context(m, o).window_end_ns, 610000);
  o.time_from_ms = 1.0;  // past the end
  EXPECT_THROW(make_analysis_context(m, o), SelectionError);
}

TEST(Selectors, StepsOrDeviceThatMatchNothingAreErrors) {
  const TraceModel m = load_trace_text(kTrace);
  AnalysisOptions o;
  o.first_step = 99;
  o.last_step = 100;
  try {
    make_analysis_context(m, o);
    FAIL() << "expected a SelectionError";
  } catch (const SelectionError& e) {
    EXPECT_NE(std::string(e.what()).find("--steps 99-100 selects no step"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ProfilerStep#1-2"), std::string::npos) << e.what();
  }
  AnalysisOptions d;
  d.device = 3;
  try {
    make_analysis_context(m, d);
    FAIL() << "expected a SelectionError";
  } catch (const SelectionError& e) {
    EXPECT_NE(std::string(e.what()).find("devices 0, 1"), std::string::npos) << e.what();
  }
  d.device = 1;  // device 1 has activity (queued before profiling, but there)
  EXPECT_NO_THROW(make_analysis_context(m, d));
  AnalysisOptions both;
  both.first_step = 1;
  both.window_name = "warmup";
  EXPECT_THROW(make_analysis_context(m, both), SelectionError);
}

// End to end: exit 2 and the message, not a silent analysis of something else.
TEST(SelectorsCli, ExitTwoNamingWhatExists) {
  const std::string path = test::temp_path("window-selectors.json");
  test::write_file(path, kTrace);
  const test::CommandResult steps = test::run_ferret("analyze --steps 99-100 " + path);
  EXPECT_EQ(steps.exit_code, 2);
  EXPECT_NE(steps.err.find("ProfilerStep#1-2"), std::string::npos) << steps.err;
  const test::CommandResult device = test::run_ferret("analyze --device 3 " + path);
  EXPECT_EQ(device.exit_code, 2);
  EXPECT_NE(device.err.find("no GPU activity on device 3"), std::string::npos) << device.err;
  const test::CommandResult window = test::run_ferret("analyze --json --window warmup#2 " + path);
  ASSERT_EQ(window.exit_code, 0) << window.err;
  const nlohmann::json w = nlohmann::json::parse(window.out).at("traces")[0].at("window");
  EXPECT_EQ(w.at("source"), "annotation");
  EXPECT_EQ(w.at("label"), "warmup#2");
  EXPECT_DOUBLE_EQ(w.at("duration_us").get<double>(), 50.0);
  const test::CommandResult all = test::run_ferret("analyze --json " + path);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const nlohmann::json before = nlohmann::json::parse(all.out).at("traces")[0].at("window").at("launched_before_trace");
  EXPECT_EQ(before.at("activities"), 2);
  EXPECT_DOUBLE_EQ(before.at("time_us").get<double>(), 20.0);
  EXPECT_EQ(test::run_ferret("analyze --time 5-1 " + path).exit_code, 2);
  EXPECT_EQ(test::run_ferret("analyze --timeline-definition pandas " + path).exit_code, 2);
  std::remove(path.c_str());
}

}  // namespace analysis_window_test
}  // namespace
}  // namespace ferret
