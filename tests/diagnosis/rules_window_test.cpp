// A window that is not a steady state says so first: the window finding is finding #1 and the
// verdict; a blocking wait at the window's edge is named and kept out of other rules' evidence.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rules_window_test {

using test::corr;
using test::span;
using test::trace;

bool has_finding(const Diagnosis& d, const std::string& id) {
  return std::any_of(d.findings.begin(), d.findings.end(), [&](const Finding& f) { return f.id == id; });
}

TEST(RulesWindow, CaptureIsTheVerdictAndFindingOne) {
  // Four launches inside a capture, one eager launch whose kernel runs; the host is otherwise busy
  // for 1 ms, so the GPU looks mostly idle - a "bottleneck" that only describes the capture.
  const TraceModel m = load_trace_text(trace({
      span("python_function", "sglang/srt/model_executor/cuda_graph_runner.py(300): capture", 1, 1, 0, 1000),
      span("cuda_runtime", "cudaStreamBeginCapture", 1, 1, 100, 1, corr(1)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 110, 5, corr(2)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 120, 5, corr(3)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 130, 5, corr(4)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 140, 5, corr(5)),
      span("cuda_runtime", "cudaStreamEndCapture", 1, 1, 190, 10, corr(7)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 300, 5, corr(6)),
      span("kernel", "warm_kernel", 0, 7, 310, 20, corr(6)),
  }));
  const TraceAnalysis a = analyze_trace(m, {});
  const Diagnosis d = diagnose(a);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings.front().id, "graph-capture-window");
  EXPECT_EQ(d.verdict.finding_id, "graph-capture-window");
  EXPECT_FALSE(d.verdict.bottleneck_found);
  EXPECT_NE(d.verdict.headline.find("not serving: 4 of 5 kernel launches were captured, 1 kernel ran"),
            std::string::npos)
      << d.verdict.headline;
  // SGLang's own way to profile replay is among the fixes.
  const Finding& f = d.findings.front();
  EXPECT_TRUE(std::ranges::any_of(fix_texts(f), [](const std::string& s) {
    return s.find("SGLang") != std::string::npos || s.find("sglang") != std::string::npos;
  }));
}

TEST(RulesWindow, InitialisationIsTheVerdict) {
  const TraceModel m = load_trace_text(trace({
      span("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000000),
      span("cuda_runtime", "cudaFree", 1, 1, 0, 600000, corr(1)),
      span("cuda_runtime", "cudaMalloc", 1, 1, 600000, 100000, corr(2)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 800000, 10, corr(4)),
      span("kernel", "k", 0, 7, 800020, 100000, corr(4)),
  }));
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings.front().id, "initialisation-window");
  EXPECT_EQ(d.verdict.finding_id, "initialisation-window");
  // 700 ms of 1,000: context creation 600 + allocation 100.
  EXPECT_NE(d.verdict.headline.find("70%"), std::string::npos) << d.verdict.headline;
  // The other findings (the GPU idles most of this window) have nothing to gain in a steady state
  // this window does not show: bound and prediction 1, as docs/RULES.md promises.
  ASSERT_GT(d.findings.size(), 1u);
  for (std::size_t k = 1; k < d.findings.size(); ++k) {
    EXPECT_EQ(d.findings[k].max_speedup, 1.0) << d.findings[k].id;
    EXPECT_TRUE(d.findings[k].predicted_speedup < 0 || d.findings[k].predicted_speedup == 1.0) << d.findings[k].id;
  }
}

// The SGLang prefill case: the trace opens with a 493 ms hipMemcpyWithStream while the GPU shows
// nothing of the trace's own (the copy it issues runs at its end). It was reported as "synchronous
// copies, up to 2.00x"; it is a wait on work from before profiling.
TEST(RulesWindow, BlockingCopyAtTheTraceStartIsAnEdgeWaitNotASyncCopyFinding) {
  std::vector<std::string> events = {
      span("cuda_runtime", "hipMemcpyWithStream", 1, 1, 0, 493000, corr(1)),
      span("gpu_memcpy", "Memcpy HtoD (Host -> Device)", 0, 7, 492990, 8, corr(1)),
  };
  // Then 100 ms of ordinary launches keeping the GPU busy half of the time.
  for (int i = 0; i < 100; ++i) {
    events.push_back(span("cuda_runtime", "hipLaunchKernel", 1, 1, 493100 + 1000 * i, 10, corr(10 + i)));
    events.push_back(span("kernel", "k", 0, 7, 493200 + 1000 * i, 500, corr(10 + i)));
  }
  const TraceModel m = load_trace_text(trace(events));
  const TraceAnalysis a = analyze_trace(m, {});
  const Diagnosis d = diagnose(a);
  EXPECT_TRUE(has_finding(d, "window-edge-wait"));
  EXPECT_FALSE(has_finding(d, "sync-copy"));
  EXPECT_EQ(a.host_blockers.copies.sync_copy_calls, 0u);
  // The window starts when the copy returns: 493 ms are not this window's.
  EXPECT_EQ(a.context.window_start_ns, 493000000);
}

// The same with two tiny launches first (as the real trace has: 0.12 ms of them), which defeated a
// "before the window's first launch" test: the wait is still explained by work outside the trace
// (the trace's own work before it is 16 us against a 493 ms wait), and still cut off the window.
TEST(RulesWindow, TinyLaunchesBeforeAnEdgeWaitDoNotHideIt) {
  std::vector<std::string> events = {
      span("cuda_runtime", "hipLaunchKernel", 1, 1, 0, 10, corr(2)),
      span("kernel", "tiny_a", 0, 7, 20, 8, corr(2)),
      span("cuda_runtime", "hipLaunchKernel", 1, 1, 60, 10, corr(3)),
      span("kernel", "tiny_b", 0, 7, 80, 8, corr(3)),
      span("cuda_runtime", "hipMemcpyWithStream", 1, 1, 120, 493000, corr(1)),
      span("gpu_memcpy", "Memcpy HtoD (Host -> Device)", 0, 7, 493110, 8, corr(1)),
  };
  for (int i = 0; i < 100; ++i) {
    events.push_back(span("cuda_runtime", "hipLaunchKernel", 1, 1, 493200 + 1000 * i, 10, corr(10 + i)));
    events.push_back(span("kernel", "k", 0, 7, 493300 + 1000 * i, 500, corr(10 + i)));
  }
  const TraceModel m = load_trace_text(trace(events));
  const TraceAnalysis a = analyze_trace(m, {});
  const Diagnosis d = diagnose(a);
  ASSERT_EQ(a.context.edge_waits.size(), 1u);
  EXPECT_TRUE(a.context.edge_waits[0].at_start);
  EXPECT_TRUE(has_finding(d, "window-edge-wait"));
  EXPECT_FALSE(has_finding(d, "sync-copy"));
  EXPECT_EQ(a.context.window_start_ns, 493120000);
}

// A forward pass whose launches the profiler saw and whose kernels it did not: `n` launch calls
// named `launch` under one operator, 1 us apart, and the kernels of the first `kernels` of them.
std::string launches_without_kernels(int n, int kernels, const std::string& launch = "cudaLaunchKernel") {
  std::vector<std::string> events = {span("cpu_op", "aten::conv2d", 1, 1, 0, 10.0 * n + 10)};
  for (int i = 0; i < n; ++i) {
    events.push_back(span("cuda_runtime", launch, 1, 1, 10.0 * i + 1, 5, corr(i + 1)));
    if (i < kernels) events.push_back(span("kernel", "k", 0, 7, 10.0 * i + 3, 4, corr(i + 1)));
  }
  return trace(events);
}

TEST(RulesWindow, LaunchesWithoutAnyKernelAreABrokenCaptureSaidFirst) {
  // 260 launches, no device record at all: the case of a profile taken without
  // ProfilerActivity.CUDA, or under nsys.
  const TraceModel m = load_trace_text(launches_without_kernels(260, 0));
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings.front();
  EXPECT_EQ(f.id, "device-activity-missing");
  EXPECT_EQ(d.verdict.finding_id, "device-activity-missing");
  EXPECT_FALSE(d.verdict.bottleneck_found);
  EXPECT_EQ(d.verdict.headline.find("No bottleneck found"), std::string::npos) << d.verdict.headline;
  EXPECT_NE(d.verdict.headline.find("260 kernel launches (cudaLaunchKernel) and 0 kernels"), std::string::npos)
      << d.verdict.headline;
  // Why (not requested, another CUPTI client, a crash before the flush) and the fix.
  EXPECT_NE(f.detail.find("CUPTI"), std::string::npos);
  EXPECT_NE(f.detail.find("Nsight"), std::string::npos);
  EXPECT_NE(f.detail.find("before the profiler flushed"), std::string::npos);
  EXPECT_NE(f.fixes.front().text.find("ProfilerActivity.CUDA"), std::string::npos);
  // Not a CPU-only job: the host's conv only launched the work it would have run.
  EXPECT_FALSE(has_finding(d, "matmul-dominated"));
  for (std::size_t k = 1; k < d.findings.size(); ++k) EXPECT_EQ(d.findings[k].max_speedup, 1.0) << d.findings[k].id;
}

TEST(RulesWindow, HipLaunchesWithoutKernelsNameRocmTools) {
  const TraceModel m = load_trace_text(launches_without_kernels(12, 0, "hipLaunchKernel"));
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings.front();
  ASSERT_EQ(f.id, "device-activity-missing");
  EXPECT_NE(f.title.find("12 kernel launches (hipLaunchKernel)"), std::string::npos) << f.title;
  EXPECT_NE(f.detail.find("roctracer"), std::string::npos);
  EXPECT_NE(f.detail.find("rocprof"), std::string::npos);
}

TEST(RulesWindow, DeviceActivityMissingNeedsTenLaunchesAndAlmostNoKernel) {
  // 9 launches: under the threshold (a script's edge).
  EXPECT_FALSE(has_finding(diagnose(analyze_trace(load_trace_text(launches_without_kernels(9, 0)), {})),
                           "device-activity-missing"));
  // 200 launches, 2 kernels: 1% recorded, still broken.
  EXPECT_TRUE(has_finding(diagnose(analyze_trace(load_trace_text(launches_without_kernels(200, 2)), {})),
                          "device-activity-missing"));
  // 200 launches, 3 kernels: 1.5%, some device record reached the trace; not this finding.
  EXPECT_FALSE(has_finding(diagnose(analyze_trace(load_trace_text(launches_without_kernels(200, 3)), {})),
                           "device-activity-missing"));
  // A healthy trace: every launch ran.
  EXPECT_FALSE(has_finding(diagnose(analyze_trace(load_trace_text(launches_without_kernels(50, 50)), {})),
                           "device-activity-missing"));
}

TEST(RulesWindow, CpuOnlyCorpusTraceIsNoBrokenCapture) {
  FERRET_REQUIRE_CORPUS(path, "cpu-only.pt.trace.json.gz");
  EXPECT_FALSE(has_finding(diagnose(analyze_trace(load_trace(path), {})), "device-activity-missing"));
}

}  // namespace rules_window_test
}  // namespace
}  // namespace ferret
