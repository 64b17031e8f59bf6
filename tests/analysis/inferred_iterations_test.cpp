// Steps where no ProfilerStep marks them: the optimizer's steps, the DataLoader's batches, or a
// repeating sequence of top-level operators (after setup, inside a wrapper annotation) define the
// iterations; the cold first one is left out of the window and said. Hand-made traces, times in us.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/analysis_options.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace inferred_iterations_test {

using test::span;

std::string op(const std::string& name, double ts, double dur, int tid = 1) {
  return span("cpu_op", name, 1, tid, ts, dur);
}

// Four training iterations of 1,000 us on thread 1 (the first 5,000 us: cold): aten::linear, then
// Optimizer.step#SGD.step [+200, +300) of each. The autograd thread 2 holds more operators (ten a
// iteration) and must not drive the steps.
std::string optimizer_loop() {
  std::vector<std::string> ev;
  double s = 0;
  for (int k = 0; k < 4; ++k) {
    const double len = k == 0 ? 5'000 : 1'000;
    ev.push_back(op("aten::linear", s, len - 900));
    for (int b = 0; b < 10; ++b)
      ev.push_back(op("autograd::engine::evaluate_function: AddmmBackward0", s + 110 + 5 * b, 4, 2));
    ev.push_back(span("user_annotation", "Optimizer.step#SGD.step", 1, 1, s + len - 800, 100));
    s += len;
  }
  return test::trace(ev);
}

TEST(InferredIterations, OptimizerStepsEndIterationsAndTheColdFirstIsLeftOut) {
  const TraceModel m = load_trace_text(optimizer_loop());
  const Relations& rel = m.relations;
  EXPECT_EQ(rel.step_marker_kind, StepMarker::kOptimizer);
  EXPECT_EQ(rel.step_marker, "Optimizer.step#SGD.step");
  ASSERT_EQ(rel.steps.size(), 4u);
  // Iteration 1 runs from the first operator to its optimizer step's end (4,300 us); iteration 2
  // from the first top-level span after that (aten::linear at 5,000) to 5,000 + 300.
  EXPECT_EQ(rel.steps[0].start_ns, 0);
  EXPECT_EQ(rel.steps[0].cpu_end_ns, 4'300'000);
  EXPECT_EQ(rel.steps[1].start_ns, 5'000'000);
  EXPECT_EQ(rel.steps[1].cpu_end_ns, 5'300'000);
  EXPECT_EQ(m.tid[rel.steps[1].event], 1);  // the driving thread, not the busier autograd thread

  const AnalysisContext ctx = make_analysis_context(m, {});
  ASSERT_TRUE(ctx.cold_first_step.has_value());
  EXPECT_EQ(ctx.cold_first_step->number, 1);
  ASSERT_EQ(ctx.steps.size(), 3u);
  EXPECT_EQ(ctx.steps.front().number, 2);
  EXPECT_NE(ctx.label.find("Optimizer.step#SGD.step"), std::string::npos) << ctx.label;
  // Chosen steps keep the cold one when asked for.
  AnalysisOptions all;
  all.first_step = 1;
  EXPECT_EQ(make_analysis_context(m, all).steps.size(), 4u);
}

// Five DataLoader batches on thread 1, 2,000 us apart, each followed by aten::conv2d: four
// iterations from one batch to the next; the first left out.
TEST(InferredIterations, DataLoaderBatchesStartIterations) {
  std::vector<std::string> ev;
  for (int k = 0; k < 5; ++k) {
    const double s = 2'000.0 * k;
    ev.push_back(span("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1, 1, s, 300));
    ev.push_back(op("aten::conv2d", s + 400, 1'000));
  }
  const TraceModel m = load_trace_text(test::trace(ev));
  EXPECT_EQ(m.relations.step_marker_kind, StepMarker::kDataLoader);
  ASSERT_EQ(m.relations.steps.size(), 4u);
  EXPECT_EQ(m.relations.steps[2].start_ns, 4'000'000);
  EXPECT_EQ(m.relations.steps[2].cpu_end_ns, 6'000'000);
  const AnalysisContext ctx = make_analysis_context(m, {});
  EXPECT_EQ(ctx.steps.size(), 3u);
  EXPECT_EQ(ctx.window_start_ns, 2'000'000);
}

// A benchmark script: one annotation around it all, setup (aten::empty, aten::uniform_), then six
// rounds of aten::mm + aten::relu, 100 us apart: the loop is the periodic tail, two operators an
// iteration, found under the wrapper; five iterations, each to the next round's start (the last
// round, with no next, left out).
TEST(InferredIterations, RepeatedOperatorsAfterSetupInsideAWrapper) {
  std::vector<std::string> ev = {span("user_annotation", "[bench]", 1, 1, 0, 1'000), op("aten::empty", 1, 5),
                                 op("aten::uniform_", 10, 80)};
  for (int k = 0; k < 6; ++k) {
    const double s = 100.0 + 100.0 * k;
    ev.push_back(op("aten::mm", s, 40));
    ev.push_back(op("aten::relu", s + 50, 20));
  }
  const TraceModel m = load_trace_text(test::trace(ev));
  const Relations& rel = m.relations;
  EXPECT_EQ(rel.step_marker_kind, StepMarker::kRepeatedOps);
  EXPECT_EQ(rel.step_marker, "aten::mm");
  EXPECT_EQ(rel.step_marker_ops, 2u);
  ASSERT_EQ(rel.steps.size(), 5u);
  EXPECT_EQ(rel.steps[0].start_ns, 100'000);
  EXPECT_EQ(rel.steps[0].cpu_end_ns, 200'000);
  EXPECT_EQ(rel.steps[4].cpu_end_ns, 600'000);

  // In the report: what the steps are and that the first was left out as cold.
  const std::string path = test::temp_path("inferred-iterations.json");
  test::write_file(path, test::trace(ev));
  const test::CommandResult r = test::run_ferret("analyze " + path + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json steps = nlohmann::json::parse(r.out)["traces"][0]["steps"];
  EXPECT_EQ(steps["marker"], "repeated_ops");
  EXPECT_EQ(steps["marker_ops"], 2);
  EXPECT_EQ(steps["count"], 4);
  EXPECT_EQ(steps["cold_first"]["number"], 1);
  const test::CommandResult text = test::run_ferret("analyze " + path);
  EXPECT_NE(text.out.find("no ProfilerStep spans: 4 iterations 2..5"), std::string::npos) << text.out;
}

// Nothing repeats (four different operators), or the repeats cover under half of the time (a
// long setup, then five short rounds): the whole trace is one window, as before.
TEST(InferredIterations, NoLoopLeavesTheWholeTrace) {
  const TraceModel distinct = load_trace_text(
      test::trace({op("aten::a", 0, 10), op("aten::b", 20, 10), op("aten::c", 40, 10), op("aten::d", 60, 10)}));
  EXPECT_TRUE(distinct.relations.steps.empty());
  EXPECT_EQ(distinct.relations.step_marker_kind, StepMarker::kProfilerStep);

  std::vector<std::string> ev = {op("aten::to", 0, 10'000)};
  for (int k = 0; k < 5; ++k) ev.push_back(op("aten::add", 10'000 + 10.0 * k, 5));
  const TraceModel short_loop = load_trace_text(test::trace(ev));
  EXPECT_TRUE(short_loop.relations.steps.empty());
  EXPECT_TRUE(make_analysis_context(short_loop, {}).whole_trace());
}

// A micro-benchmark on HIP: aten::add called in a loop, each call launching a 10 us kernel and then
// waiting for it (hipDeviceSynchronize), a call every 100 us; the first launch loads the code
// object (8,600 us). Seven calls: six iterations, the first (cold, 8,700 us) left out, five of
// 100 us each with 10 us on the device. The window is a micro-benchmark, the verdict says so,
// and the device's idle time between calls is no host-bound finding's gain.
TEST(InferredIterations, MicrobenchmarkLoopIsItsOwnWindow) {
  std::vector<std::string> ev;
  double s = 0;
  for (int k = 0; k < 7; ++k) {
    const double launch = k == 0 ? 8'600 : 5;
    ev.push_back(op("aten::add", s, 10 + launch));
    ev.push_back(span("cuda_runtime", "hipLaunchKernel", 1, 1, s + 5, launch, test::corr(k + 1)));
    ev.push_back(span("kernel", "elementwise_kernel_add", 0, 3, s + 10 + launch, 10, test::corr(k + 1)));
    ev.push_back(span("cuda_runtime", "hipDeviceSynchronize", 1, 1, s + 12 + launch, 10));
    s += k == 0 ? 8'700 : 100;
  }
  const std::string path = test::temp_path("microbenchmark.json");
  test::write_file(path, test::trace(ev));
  const TraceModel m = load_trace(path);
  EXPECT_EQ(m.relations.step_marker_kind, StepMarker::kRepeatedOps);
  EXPECT_EQ(m.relations.step_marker_ops, 1u);
  ASSERT_EQ(m.relations.steps.size(), 6u);
  const test::CommandResult r = test::run_ferret("analyze " + path + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json t = nlohmann::json::parse(r.out)["traces"][0];
  EXPECT_EQ(t["window"]["activity"], "microbenchmark");
  EXPECT_EQ(t["steps"]["count"], 5);
  EXPECT_NEAR(t["steps"]["cold_first"]["duration_us"].get<double>(), 8'700, 1e-6);
  EXPECT_EQ(t["verdict"]["finding_id"], "microbenchmark-window");
  EXPECT_FALSE(t["verdict"]["bottleneck_found"].get<bool>());
  const nlohmann::json& f = t["findings"][0];
  ASSERT_EQ(f["id"], "microbenchmark-window");
  for (const nlohmann::json& e : f["evidence"]) {
    const double v = e["value"].get<double>();
    if (e["name"] == "per_call_us") {
      EXPECT_NEAR(v, 100, 0.01);
    } else if (e["name"] == "device_per_call_us") {
      EXPECT_NEAR(v, 10, 0.01);
    } else if (e["name"] == "first_call_us") {
      EXPECT_NEAR(v, 8'700, 0.01);
    }
  }
  for (const nlohmann::json& other : t["findings"]) {
    if (other["id"] == "microbenchmark-window") continue;
    EXPECT_LE(other["max_speedup"].get<double>(), 1.0) << other["id"];  // nothing to gain in a benchmark loop
  }
}

// A real notebook-style recording (examples/record_cpu_traces.py `notebook`, torch 1.13 on the
// CPU): a profile with no schedule around five SGD iterations of an MLP built inside it. A second
// reader of the file finds the Optimizer.step#SGD.step spans and the first top-level operator
// after each; ferret's iterations start and end there, and the first is left out as cold.
TEST(InferredIterations, NotebookRecordingWithoutASchedule) {
  const std::string path = std::string(FERRET_SOURCE_DIR) + "/examples/traces/cpu-notebook.json.gz";
  const TraceModel m = load_trace(path);
  ASSERT_EQ(m.relations.step_marker_kind, StepMarker::kOptimizer);
  EXPECT_EQ(m.relations.step_marker, "Optimizer.step#SGD.step");
  ASSERT_EQ(m.relations.steps.size(), 5u);

  // The second reader: optimizer spans' ends (us, as written) in time order.
  const nlohmann::json doc = nlohmann::json::parse(test::gunzip(test::read_file(path)));
  std::vector<double> opt_end;
  const nlohmann::json& events = doc.is_array() ? doc : doc["traceEvents"];  // the legacy export is an array
  for (const nlohmann::json& e : events)
    if (e.value("name", "") == "Optimizer.step#SGD.step")
      opt_end.push_back(e["ts"].get<double>() + e["dur"].get<double>());
  std::sort(opt_end.begin(), opt_end.end());
  ASSERT_EQ(opt_end.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k)
    EXPECT_NEAR(static_cast<double>(m.relations.steps[k].cpu_end_ns), opt_end[k] * 1e3, 1.0) << k;

  const AnalysisContext ctx = make_analysis_context(m, {});
  ASSERT_TRUE(ctx.cold_first_step.has_value());
  ASSERT_EQ(ctx.steps.size(), 4u);
  // The cold iteration (the model's first calls) is the slowest.
  const std::int64_t cold = ctx.cold_first_step->end_ns - ctx.cold_first_step->start_ns;
  for (const Step& s : ctx.steps) EXPECT_GT(cold, s.end_ns - s.start_ns);
}

}  // namespace inferred_iterations_test
}  // namespace
}  // namespace ferret
