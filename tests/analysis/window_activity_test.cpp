// What kind of window: steady, graph capture, initialisation; blocking waits at its edges.
#include "analysis/timeline/window_activity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/timeline/step_breakdown.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace window_activity_test {

using test::corr;
using test::span;
using test::trace;

WindowActivityResult analyze(const TraceModel& m) { return analyze_window_activity(m, make_analysis_context(m, {})); }

// Capture [100, 200) on thread 1 holds four kernel launches (corr 2-5, no kernel runs for them);
// one eager launch at 300 (corr 6) runs a kernel. 4 of 5 launches captured >= 50%: capture.
const std::vector<std::string> kCaptureEvents = {
    span("cuda_runtime", "cudaStreamBeginCapture", 1, 1, 100, 1, corr(1)),
    span("cuda_runtime", "cudaLaunchKernel", 1, 1, 110, 5, corr(2)),
    span("cuda_runtime", "cudaLaunchKernel", 1, 1, 120, 5, corr(3)),
    span("cuda_runtime", "cudaLaunchKernel", 1, 1, 130, 5, corr(4)),
    span("cuda_runtime", "cudaLaunchKernel", 1, 1, 140, 5, corr(5)),
    span("cuda_runtime", "cudaStreamEndCapture", 1, 1, 190, 10, corr(7)),
    span("cuda_runtime", "cudaGraphInstantiate", 1, 1, 210, 40, corr(8)),
    span("cuda_runtime", "cudaLaunchKernel", 1, 1, 300, 5, corr(6)),
    span("kernel", "warm_kernel", 0, 7, 310, 20, corr(6)),
};
const std::string kCapture = trace(kCaptureEvents);

TEST(WindowActivity, CaptureWindowByHand) {
  const TraceModel m = load_trace_text(kCapture);
  const WindowActivityResult r = analyze(m);
  EXPECT_EQ(r.activity, WindowActivity::kGraphCapture);
  EXPECT_EQ(r.capture_regions, 1u);
  EXPECT_EQ(r.kernel_launches, 5u);
  EXPECT_EQ(r.captured_launches, 4u);
  EXPECT_EQ(r.kernels_executed, 1u);
  EXPECT_EQ(r.graph_instantiations, 1u);
  EXPECT_EQ(r.capture_ns, 100000);  // 100 .. 200 us (EndCapture returns at 200)
  EXPECT_TRUE(r.inference_server.empty());
}

TEST(WindowActivity, FewCapturedLaunchesAreNotACaptureWindow) {
  // The same capture among six more eager launches: 4 of 11 < 50%.
  std::vector<std::string> events = {span("cuda_runtime", "cudaStreamBeginCapture", 1, 1, 100, 1, corr(1)),
                                     span("cuda_runtime", "cudaLaunchKernel", 1, 1, 110, 5, corr(2)),
                                     span("cuda_runtime", "cudaLaunchKernel", 1, 1, 120, 5, corr(3)),
                                     span("cuda_runtime", "cudaLaunchKernel", 1, 1, 130, 5, corr(4)),
                                     span("cuda_runtime", "cudaLaunchKernel", 1, 1, 140, 5, corr(5)),
                                     span("cuda_runtime", "cudaStreamEndCapture", 1, 1, 190, 10, corr(7))};
  for (int i = 0; i < 7; ++i) {
    events.push_back(span("cuda_runtime", "cudaLaunchKernel", 1, 1, 300 + 50 * i, 5, corr(20 + i)));
    events.push_back(span("kernel", "k", 0, 7, 310 + 50 * i, 20, corr(20 + i)));
  }
  const WindowActivityResult r = analyze(load_trace_text(trace(events)));
  EXPECT_EQ(r.captured_launches, 4u);
  EXPECT_EQ(r.kernel_launches, 11u);
  EXPECT_NE(r.activity, WindowActivity::kGraphCapture);
}

TEST(WindowActivity, InferenceServerFromFrameNames) {
  std::vector<std::string> events = kCaptureEvents;
  events.push_back(
      span("python_function", "vllm/v1/worker/gpu_model_runner.py(5467): _capture_cudagraphs", 1, 1, 90, 200));
  EXPECT_EQ(analyze(load_trace_text(trace(events))).inference_server, "vLLM");
}

// One step of 1,000 ms: cudaFree at 0 takes 600 ms (the first runtime call: lazy context
// creation), cudaMalloc [600, 700) ms, cuModuleLoadData [700, 750) ms, then ordinary work.
// One-time union = 600 + 100 + 50 = 750 ms of 1,000: 75% >= 50%.
TEST(WindowActivity, InitialisationWindowByHand) {
  const TraceModel m = load_trace_text(trace({
      span("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000000),
      span("cuda_runtime", "cudaFree", 1, 1, 0, 600000, corr(1)),
      span("cuda_runtime", "cudaMalloc", 1, 1, 600000, 100000, corr(2)),
      span("cuda_driver", "cuModuleLoadData", 1, 1, 700000, 50000, corr(3)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 800000, 10, corr(4)),
      span("kernel", "k", 0, 7, 800020, 100000, corr(4)),
  }));
  const WindowActivityResult r = analyze(m);
  EXPECT_EQ(r.activity, WindowActivity::kInitialisation);
  EXPECT_EQ(r.one_time_ns, 750000000);
  EXPECT_NEAR(r.one_time_share, 0.75, 1e-9);
  ASSERT_EQ(r.one_time.size(), 3u);
  EXPECT_NE(r.one_time[0].what.find("context creation"), std::string::npos);  // 600 ms, the largest
  EXPECT_EQ(r.one_time[0].ns, 600000000);
  EXPECT_EQ(r.one_time[1].ns, 100000000);  // allocation
  EXPECT_EQ(r.one_time[2].ns, 50000000);   // module loading
}

// A kernel's first launch that loads its code is one-time; later launches of the same kernel, and
// a long launch of a kernel seen before, are not. Two steps of 10 ms (us below): conv_k's first
// launch [100, 1,437) holds 1,337 us (under a first cudnn_convolution), gemm_k's first [2,000,
// 2,005) is ordinary; in step 2 conv_k launches in 5 us and gemm_k in 2,000 us (a full queue,
// not a load). One-time: 1,337 us of 20,000 = 6.7%: steady.
TEST(WindowActivity, FirstLaunchThatLoadsCodeIsOneTime) {
  const TraceModel m = load_trace_text(trace({
      span("user_annotation", "ProfilerStep#1", 1, 1, 0, 10000),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 50, 5, corr(9)),
      span("kernel", "warm_k", 0, 7, 60, 10, corr(9)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 100, 1337, corr(1)),
      span("kernel", "conv_k", 0, 7, 1440, 100, corr(1)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 2000, 5, corr(2)),
      span("kernel", "gemm_k", 0, 7, 2010, 100, corr(2)),
      span("user_annotation", "ProfilerStep#2", 1, 1, 10000, 10000),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 10050, 5, corr(8)),
      span("kernel", "warm_k", 0, 7, 10060, 10, corr(8)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 10100, 5, corr(3)),
      span("kernel", "conv_k", 0, 7, 10110, 100, corr(3)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 12000, 2000, corr(4)),
      span("kernel", "gemm_k", 0, 7, 14010, 100, corr(4)),
  }));
  const WindowActivityResult r = analyze(m);
  EXPECT_EQ(r.activity, WindowActivity::kSteady);
  ASSERT_EQ(r.one_time.size(), 1u);
  EXPECT_NE(r.one_time[0].what.find("first launch"), std::string::npos) << r.one_time[0].what;
  EXPECT_EQ(r.one_time[0].count, 1u);
  EXPECT_EQ(r.one_time[0].ns, 1'337'000);
  EXPECT_NEAR(r.one_time_share, 1337.0 / 20000.0, 1e-9);
}

// Lazy loading under a library's first calls: 1,500 cudaFuncGetAttributes of 400 us each (module
// loads) in a 1 s step, then 1,500 more of 2 us (ordinary queries) in the next. The long ones are
// GPU code module loading: 600 ms of the 1.103 s window (54%), an initialisation window; the short
// ones are not one-time. hipFuncGetAttributes the same.
TEST(WindowActivity, LongFunctionAttributeQueriesAreModuleLoading) {
  for (const std::string query : {"cudaFuncGetAttributes", "hipFuncGetAttributes"}) {
    std::vector<std::string> ev = {span("user_annotation", "ProfilerStep#1", 1, 1, 0, 1'000'000),
                                   span("user_annotation", "ProfilerStep#2", 1, 1, 1'000'000, 100'000)};
    for (int i = 0; i < 1500; ++i) {
      ev.push_back(span("cuda_runtime", query, 1, 1, 100.0 + 600.0 * i, 400));
      ev.push_back(span("cuda_runtime", query, 1, 1, 1'000'100.0 + 60.0 * i, 2));
    }
    const std::string launch = query.substr(0, 3) == "hip" ? "hipLaunchKernel" : "cudaLaunchKernel";
    ev.push_back(span("cuda_runtime", launch, 1, 1, 1'095'000, 5, corr(1)));
    ev.push_back(span("kernel", "k", 0, 7, 1'095'010, 8'000, corr(1)));
    const TraceModel m = load_trace_text(trace(ev));
    const WindowActivityResult r = analyze(m);
    ASSERT_EQ(r.window_ns, 1'103'010'000) << query;
    ASSERT_EQ(r.one_time.size(), 1u) << query;
    EXPECT_EQ(r.one_time[0].what, "GPU code module loading");
    EXPECT_EQ(r.one_time[0].count, 1500u);
    EXPECT_EQ(r.one_time[0].ns, 600'000'000);
    EXPECT_EQ(r.activity, WindowActivity::kInitialisation) << query;
  }
}

// The first DataLoader batch starts the workers. Four steps (ms): step 1 [0, 400) waits 300 ms for
// its batch, steps 2-4 (100 ms each) 2 ms. 300 >= 10 x 2 and >= 10 ms: one-time, 300 of 700 ms
// (43%: still steady). A first batch of 15 ms (7.5 x 2) is an ordinary slow batch.
TEST(WindowActivity, FirstDataLoaderBatchIsStartUp) {
  auto steps = [](double first_batch_ms) {
    std::vector<std::string> ev;
    double t = 0;
    for (int k = 0; k < 4; ++k) {
      const double len = k == 0 ? 400'000 : 100'000;
      ev.push_back(span("user_annotation", "ProfilerStep#" + std::to_string(k + 1), 1, 1, t, len));
      ev.push_back(span("user_annotation", "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 1, 1, t,
                        k == 0 ? first_batch_ms * 1000 : 2'000));
      t += len;
    }
    return load_trace_text(trace(ev));
  };
  const TraceModel cold = steps(300);
  const WindowActivityResult r = analyze(cold);
  EXPECT_EQ(r.activity, WindowActivity::kSteady);
  ASSERT_EQ(r.one_time.size(), 1u);
  EXPECT_NE(r.one_time[0].what.find("DataLoader start-up"), std::string::npos) << r.one_time[0].what;
  EXPECT_EQ(r.one_time[0].ns, 300'000'000);
  EXPECT_NEAR(r.one_time_share, 300.0 / 700.0, 1e-9);
  const TraceModel slow = steps(15);
  EXPECT_TRUE(analyze(slow).one_time.empty());
}

TEST(WindowActivity, OrdinaryStepsAreSteady) {
  const TraceModel m = load_trace_text(trace({
      span("user_annotation", "ProfilerStep#1", 1, 1, 0, 100),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 10, 5, corr(1)),
      span("kernel", "k", 0, 7, 20, 50, corr(1)),
      span("user_annotation", "ProfilerStep#2", 1, 1, 100, 100),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 110, 5, corr(2)),
      span("kernel", "k", 0, 7, 120, 50, corr(2)),
  }));
  EXPECT_EQ(analyze(m).activity, WindowActivity::kSteady);
  // The same work without ProfilerStep marks: nothing says it is a steady state.
  const TraceModel bare = load_trace_text(trace({
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 10, 5, corr(1)),
      span("kernel", "k", 0, 7, 20, 50, corr(1)),
  }));
  EXPECT_EQ(analyze(bare).activity, WindowActivity::kUnknown);
}

// A step opens with a 20 ms cudaDeviceSynchronize at 0.1 ms during which no GPU work of the trace
// runs (it waits on work queued before profiling): an edge wait, cut off the window. The step
// then launches one 5 ms kernel. Step span [0, 30 ms).
TEST(EdgeWait, BlockingCallOpeningTheWindowIsCutOff) {
  const TraceModel m = load_trace_text(trace({
      span("user_annotation", "ProfilerStep#1", 1, 1, 0, 30000),
      span("cuda_runtime", "cudaDeviceSynchronize", 1, 1, 100, 20000, corr(1)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 20200, 10, corr(2)),
      span("kernel", "k", 0, 7, 20300, 5000, corr(2)),
  }));
  const AnalysisContext ctx = make_analysis_context(m, {});
  ASSERT_EQ(ctx.edge_waits.size(), 1u);
  EXPECT_TRUE(ctx.edge_waits[0].at_start);
  EXPECT_EQ(ctx.edge_waits[0].duration_ns, 20000000);
  EXPECT_EQ(ctx.edge_waits[0].gpu_busy_ns, 0);
  EXPECT_EQ(ctx.window_start_ns, 20100000);  // the wait's end
  EXPECT_EQ(ctx.edge_trimmed_ns, 20100000);  // 0.1 ms before it + the 20 ms wait
  // The step is now 30 - 20.1 = 9.9 ms; its kernel is 5 ms of it.
  const StepBreakdownResult b = analyze_step_breakdown(m, ctx);
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(b.steps[0].duration_ns, 9900000);
  EXPECT_EQ(b.steps[0].ns[static_cast<int>(StepCategory::kKernel)], 5000000);
}

// The other edge: a step launches a 5 ms kernel [0.2, 5.2 ms), then closes with a 20 ms
// cudaDeviceSynchronize [9.5, 29.5 ms) during which no GPU work of the trace runs, 0.5 ms before
// the step's end at 30 ms. The work launched before it (5 ms) is no wait on the trace's own work
// after it (none): an edge wait at the end, cut off: the window ends at 9.5 ms (20.5 ms trimmed).
TEST(EdgeWait, BlockingCallClosingTheWindowIsCutOff) {
  const TraceModel m = load_trace_text(trace({
      span("user_annotation", "ProfilerStep#1", 1, 1, 0, 30000),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 100, 10, corr(2)),
      span("kernel", "k", 0, 7, 200, 5000, corr(2)),
      span("cuda_runtime", "cudaDeviceSynchronize", 1, 1, 9500, 20000, corr(1)),
  }));
  const AnalysisContext ctx = make_analysis_context(m, {});
  ASSERT_EQ(ctx.edge_waits.size(), 1u);
  EXPECT_FALSE(ctx.edge_waits[0].at_start);
  EXPECT_EQ(ctx.edge_waits[0].duration_ns, 20000000);
  EXPECT_EQ(ctx.edge_waits[0].gpu_busy_ns, 0);
  EXPECT_EQ(ctx.window_end_ns, 9500000);     // the wait's start
  EXPECT_EQ(ctx.edge_trimmed_ns, 20500000);  // the 20 ms wait + 0.5 ms after it
  const StepBreakdownResult b = analyze_step_breakdown(m, ctx);
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(b.steps[0].duration_ns, 9500000);
  EXPECT_EQ(b.steps[0].ns[static_cast<int>(StepCategory::kKernel)], 5000000);
}

TEST(EdgeWait, WaitWhileTheTracesOwnWorkRunsIsNotAnEdgeWait) {
  // The kernel launched at 0.05 ms runs during the sync: the sync waits on the window's own work.
  const TraceModel m = load_trace_text(trace({
      span("user_annotation", "ProfilerStep#1", 1, 1, 0, 30000),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 50, 10, corr(2)),
      span("kernel", "k", 0, 7, 70, 19000, corr(2)),
      span("cuda_runtime", "cudaDeviceSynchronize", 1, 1, 100, 20000, corr(1)),
  }));
  EXPECT_TRUE(make_analysis_context(m, {}).edge_waits.empty());
}

// The corpus: a real vLLM decode trace on MI300X records HIP graph capture (421 of the 428 kernel
// launches were captured, counted from the raw events; 7 kernels ran).
TEST(WindowActivityCorpus, VllmDecodeTraceIsCapture) {
  FERRET_REQUIRE_CORPUS(path, "mi300-vllm-decode-graph-capture.pt.trace.json.gz");
  const TraceModel m = load_trace(path);
  const WindowActivityResult r = analyze(m);
  EXPECT_EQ(r.activity, WindowActivity::kGraphCapture);
  EXPECT_EQ(r.captured_launches, 421u);
  EXPECT_EQ(r.kernel_launches, 428u);
  EXPECT_EQ(r.kernels_executed, 7u);
  EXPECT_EQ(r.inference_server, "vLLM");
}

// The Qwen H100 trace's one step opens with a 14.1 ms cudaDeviceSynchronize (100.8 us after the
// step starts) waiting on work queued before profiling (read off the raw events).
TEST(WindowActivityCorpus, QwenStepOpensWithAnEdgeWait) {
  FERRET_REQUIRE_CORPUS(path, "h100-qwen0.5b-inference-torch2.json.gz");
  const TraceModel m = load_trace(path);
  const AnalysisContext ctx = make_analysis_context(m, {});
  ASSERT_EQ(ctx.edge_waits.size(), 1u);
  EXPECT_EQ(m.name_of(ctx.edge_waits[0].event), "cudaDeviceSynchronize");
  EXPECT_NEAR(static_cast<double>(ctx.edge_waits[0].duration_ns), 14102.5e3, 1e3);
  EXPECT_NEAR(static_cast<double>(ctx.edge_trimmed_ns), (100.8 + 14102.5) * 1e3, 1e3);
  EXPECT_EQ(analyze_window_activity(m, ctx).activity, WindowActivity::kSteady);
}

}  // namespace window_activity_test
}  // namespace
}  // namespace ferret
