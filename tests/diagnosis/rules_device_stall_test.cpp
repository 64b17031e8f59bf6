// device-stall: a device idle with its next work already launched, on a hand-made trace whose
// numbers are computed below, for CUDA and HIP names; the rule, its prediction against
// `ferret whatif --remove device-stalls`, and the real recommender trace it was built for.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/causal/causality.h"
#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rules_device_stall_test {

using test::span;

std::string host(const std::string& name, double ts, double dur, int c = -1) {
  return span(name.rfind("ProfilerStep", 0) == 0 ? "user_annotation" : "cuda_runtime", name, 1, 1, ts, dur,
              c >= 0 ? fmt::format(R"("correlation":{})", c) : "");
}
std::string kernel(double ts, double dur, int c) {
  return span("kernel", "k", 0, 7, ts, dur, fmt::format(R"("correlation":{})", c));
}

// Times in us. ProfilerStep#1 [0,200). Twelve launches at 10 i (5 us each; odd i through the graph
// launch call) queue kernels of 100 us on stream 7 at 1000 + 600 i: every kernel after the first
// waits 500 us behind an idle stream with nothing else traced on the device.
//   window [0,7700); busy 12 x 100 = 1200
//   [0,1000): k0's launch returned at 5: the device waited on the host [0,105), neither 895
//   [1100 + 600 (i-1), 1000 + 600 i), i = 1..11: 11 stalls of 500 = 5500 (71.4% of the window),
//     6 of them (odd i) ending in graph-launched work
//   launch to start: 1000 + 590 i, i = 0..11: median (upper) 1000 + 590 x 6 = 4540
// Closing the stalls: k0 keeps its start (1000, nothing before it on its stream), each next kernel
// follows 4 us (kBackToBackGapNs) after the previous: the last ends at 1000 + 104 x 11 + 100 =
// 2244, the step's end (its host part ends at 200): 7700 / 2244 = 3.431x.
std::string stall_trace(const std::string& launch, const std::string& graph_launch) {
  std::vector<std::string> ev = {host("ProfilerStep#1", 0, 200)};
  for (int i = 0; i < 12; ++i) {
    ev.push_back(host(i % 2 ? graph_launch : launch, 10 * i, 5, i + 1));
    ev.push_back(kernel(1000 + 600 * i, 100, i + 1));
  }
  return test::trace(ev);
}

constexpr std::int64_t kUs = 1000;

TEST(DeviceStall, StallsWithWorkQueuedByHandForCudaAndHip) {
  for (const auto& [launch, graph] : {std::pair<std::string, std::string>{"cudaLaunchKernel", "cudaGraphLaunch"},
                                      {"hipLaunchKernel", "hipGraphLaunch"}}) {
    const TraceModel m = load_trace_text(stall_trace(launch, graph));
    const TraceAnalysis a = analyze_trace(m, {});
    ASSERT_EQ(a.context.window_end_ns, 7700 * kUs) << launch;
    const DeviceCausality& d = a.causality.devices.at(0);
    EXPECT_EQ(d.busy_ns, 1200 * kUs);
    EXPECT_EQ(d.device_waited_on_host_ns, 105 * kUs) << launch;
    EXPECT_EQ(d.stalls, 11u) << launch;
    EXPECT_EQ(d.stall_ns, 5500 * kUs) << launch;
    EXPECT_EQ(d.stalls_before_graph_work, 6u) << launch;
    EXPECT_EQ(d.median_launch_to_start_ns, 4540 * kUs);
    EXPECT_EQ(d.neither_ns, (895 + 5500) * kUs);

    const Diagnosis diag = diagnose(a);
    ASSERT_FALSE(diag.findings.empty());
    const Finding& f = diag.findings.front();
    EXPECT_EQ(f.id, "device-stall") << f.title;
    EXPECT_EQ(diag.verdict.finding_id, "device-stall");
    EXPECT_EQ(f.severity, Severity::kHigh);
    EXPECT_NEAR(f.time_share, 5500.0 / 7700.0, 1e-9);
    EXPECT_NEAR(f.predicted_speedup, 7700.0 / 2244.0, 1e-3) << f.title;
    // Low utilization (16%) folds into it; no finding blames the host.
    for (const Finding& g : diag.findings) {
      EXPECT_NE(g.id, "cpu-bound");
      EXPECT_NE(g.id, "low-gpu-utilization");
      EXPECT_NE(g.id, "launch-bound");
    }
    // The fixes fit the vendor's tools.
    const std::string fixes = fmt::format("{}", fmt::join(fix_texts(f), "\n"));
    EXPECT_NE(fixes.find(launch[0] == 'h' ? "rocprofv3" : "nsys"), std::string::npos) << fixes;
  }
}

// The same trace without the stalls (kernels back to back behind their launches) has none, and a
// host that is behind (each kernel launched right before it runs) is not a stall either.
TEST(DeviceStall, NoStallWhenTheQueueIsFullOrTheHostIsLate) {
  std::vector<std::string> queued = {host("ProfilerStep#1", 0, 200)}, late = {host("ProfilerStep#1", 0, 7000)};
  for (int i = 0; i < 12; ++i) {
    queued.push_back(host("cudaLaunchKernel", 10 * i, 5, i + 1));
    queued.push_back(kernel(1000 + 100 * i, 100, i + 1));
    late.push_back(host("cudaLaunchKernel", 600 * i, 5, i + 1));
    late.push_back(kernel(600 * i + 10, 100, i + 1));
  }
  for (const auto* events : {&queued, &late}) {
    const TraceModel m = load_trace_text(test::trace(*events));
    const TraceAnalysis a = analyze_trace(m, {});
    EXPECT_EQ(a.causality.devices.at(0).stalls, 0u);
    for (const Finding& f : diagnose(a).findings) EXPECT_NE(f.id, "device-stall") << f.title;
  }
}

// `analyze` and `whatif --remove device-stalls` give one number for one cause.
TEST(DeviceStall, AnalyzeAndWhatIfAgree) {
  const std::string path = test::temp_path("device-stall.json");
  test::write_file(path, stall_trace("cudaLaunchKernel", "cudaGraphLaunch"));
  const test::CommandResult analyzed = test::run_ferret("analyze --json " + path);
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  const nlohmann::json doc = nlohmann::json::parse(analyzed.out);
  const nlohmann::json& t = doc["traces"][0];
  EXPECT_EQ(t["causality"]["devices"][0]["stalls"]["count"], 11);
  EXPECT_DOUBLE_EQ(t["causality"]["devices"][0]["stalls"]["time_us"].get<double>(), 5500.0);
  const double predicted = t["findings"][0]["predicted_speedup"];
  for (const std::string how : {"--remove device-stalls", "--fix device-stall"}) {
    const test::CommandResult w = test::run_ferret("whatif --json " + how + " " + path);
    ASSERT_EQ(w.exit_code, 0) << w.err;
    const nlohmann::json j = nlohmann::json::parse(w.out);
    EXPECT_NEAR(j["speedup"].get<double>(), predicted, 0.01) << how;
    EXPECT_DOUBLE_EQ(j["predicted_step_us"].get<double>(), 2244.0) << how;
    EXPECT_EQ(j["changes"]["touched"]["device_stalls"], 11) << how;
    EXPECT_EQ(j["changes"]["remove"][0], "device-stalls") << how;
  }
}

// The A100 recommender whose queue is 160 ms deep while its device idles two thirds of the window:
// the breakdown alone read "low GPU utilization" with host fixes. Reading the raw events, six
// gaps of ~64 ms per window each end in a memset that a cudaGraphLaunch queued ~130 ms earlier,
// with no traced activity on any stream in between.
TEST(DeviceStallCorpus, RecommenderDeepQueueStallsBeforeGraphWork) {
  FERRET_REQUIRE_CORPUS(recsys, "a100-recsys-rank0-deep-queue.json.gz");
  const test::CommandResult r = test::run_ferret("analyze --json " + recsys);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& t = doc["traces"][0];
  EXPECT_EQ(t["findings"][0]["id"], "device-stall") << t["findings"][0]["title"];
  const nlohmann::json& d = t["causality"]["devices"][0];
  const double window = d["window_us"];
  // At least the six ~64 ms gaps: over 380 ms of the 1,232 ms window.
  EXPECT_GT(d["stalls"]["time_us"].get<double>(), 380'000.0);
  EXPECT_LE(d["stalls"]["time_us"].get<double>(), window - d["busy_us"].get<double>());
  EXPECT_GT(d["stalls"]["before_graph_work"].get<int>(), d["stalls"]["count"].get<int>() / 2);
  // The prediction respects the device's own work: at most window / busy.
  const double predicted = t["findings"][0]["predicted_speedup"];
  EXPECT_GT(predicted, 1.5);
  EXPECT_LE(predicted, window / d["busy_us"].get<double>() + 1e-6);
  for (const nlohmann::json& f : t["findings"]) EXPECT_NE(f["id"], "cpu-bound");
}

}  // namespace rules_device_stall_test
}  // namespace
}  // namespace ferret
