// Who waits on whom (analysis/causal/causality.h) on hand-made traces whose every number is computed by
// hand below, for CUDA and HIP names: each reason an activity starts when it does, and the
// window's four parts.
#include "analysis/causal/causality.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace causality_test {

using test::span;
using test::trace;

std::string event(const char* cat, const std::string& name, int pid, int tid, double ts, double dur, int c) {
  return span(cat, name, pid, tid, ts, dur, c >= 0 ? "\"correlation\":" + std::to_string(c) : "");
}
std::string host(const char* cat, const std::string& name, double ts, double dur, int c = -1) {
  return event(cat, name, 1, 1, ts, dur, c);
}
std::string gpu(const std::string& name, int stream, double ts, double dur, int c) {
  return event("kernel", name, 0, stream, ts, dur, c);
}

// Times in us. ProfilerStep#1 [0,1000), extended to 1800 by the GPU work it launched.
//   k0 [0,15) stream 9, no launch, before the first launch call     before trace, delay 0
//   launch 1 at 10 -> k1 [40,120) stream 7, first on its stream      launch, delay 0
//   launch 2 at 30 -> k2 [120,220) stream 7 behind k1                stream backlog, 120 - 30 = 90
//   launch 3 at 300 -> k3 [310,400) stream 7, idle since 220         launch, 300 - 220 = 80
//   launch 4 at 320 -> k4 [405,450) stream 8, right after k3's end   cross-stream, 400 - 320 = 80
//   sync [460,600) while the device shows no work
//   launch 5 at 600 -> k5 [610,700) stream 7, idle since 400         launch, 600 - 400 = 200
//   launch 6 at 705 -> k6 [1750,1800) stream 9, nothing in front     before trace, 1750 - 705 = 1045
// Window [0,1800): busy 15 + 180 + 90 + 45 + 90 + 50 = 470. Gaps:
//   [15,40) 25: k1 launched at 10, before it         neither 25
//   [220,310) 90: k3's launch returned at 305 > 220  device waited on the host 90
//   [400,405) 5: k4 launched at 320, before it       neither 5
//   [450,610) 160: the sync [460,600) 140            host waited on the device 140; k5's launch returned at
//                                                    605 > 450: the rest [450,460) + [600,610) 20 the device waited
//   [700,1750) 1050: k6's launch returned at 710     device waited [700,810) 110 (the call + 100 us
//                                                    latency), neither 940
// device waited 220, host waited 140, both 470, neither 970: 1800.
// Launch to start (us): 30, 90, 10, 85, 10, 1045: median (upper) 85, p90 1045.
std::string two_api_trace(const std::string& launch, const std::string& sync) {
  return trace({
      host("user_annotation", "ProfilerStep#1", 0, 1000),
      host("cuda_runtime", launch, 10, 5, 1),
      host("cuda_runtime", launch, 30, 5, 2),
      host("cuda_runtime", launch, 300, 5, 3),
      host("cuda_runtime", launch, 320, 5, 4),
      host("cuda_runtime", sync, 460, 140),
      host("cuda_runtime", launch, 600, 5, 5),
      host("cuda_runtime", launch, 705, 5, 6),
      gpu("k0", 9, 0, 15, 99),
      gpu("k1", 7, 40, 80, 1),
      gpu("k2", 7, 120, 100, 2),
      gpu("k3", 7, 310, 90, 3),
      gpu("k4", 8, 405, 45, 4),
      gpu("k5", 7, 610, 90, 5),
      gpu("k6", 9, 1750, 50, 6),
  });
}

constexpr std::int64_t kUs = 1000;

TEST(Causality, EachReasonAndTheWindowByHandForCudaAndHip) {
  for (const auto& [launch, sync] : {std::pair<std::string, std::string>{"cudaLaunchKernel", "cudaDeviceSynchronize"},
                                     {"hipLaunchKernel", "hipDeviceSynchronize"}}) {
    const TraceModel m = load_trace_text(two_api_trace(launch, sync));
    const AnalysisContext ctx = make_analysis_context(m, {});
    ASSERT_EQ(ctx.window_start_ns, 0);
    ASSERT_EQ(ctx.window_end_ns, 1800 * kUs);
    const CausalityResult r = analyze_causality(m, ctx);
    ASSERT_EQ(r.devices.size(), 1u) << launch;
    ASSERT_EQ(r.busiest, 0);
    const DeviceCausality& d = r.devices[0];
    EXPECT_EQ(d.busy_ns, 470 * kUs) << launch;
    EXPECT_EQ(d.device_waited_on_host_ns, 220 * kUs) << launch;
    EXPECT_EQ(d.host_waited_on_device_ns, 140 * kUs) << launch;
    EXPECT_EQ(d.both_busy_ns, 470 * kUs) << launch;
    EXPECT_EQ(d.neither_ns, 970 * kUs) << launch;
    EXPECT_EQ(d.device_waited_on_host_ns + d.host_waited_on_device_ns + d.both_busy_ns + d.neither_ns, d.window_ns);
    EXPECT_EQ(d.reason(StartReason::kLaunch).activities, 3u);
    EXPECT_EQ(d.reason(StartReason::kLaunch).delay_ns, 280 * kUs);
    EXPECT_EQ(d.reason(StartReason::kStreamBacklog).activities, 1u);
    EXPECT_EQ(d.reason(StartReason::kStreamBacklog).delay_ns, 90 * kUs);
    EXPECT_EQ(d.reason(StartReason::kCrossStream).activities, 1u);
    EXPECT_EQ(d.reason(StartReason::kCrossStream).delay_ns, 80 * kUs);
    EXPECT_EQ(d.reason(StartReason::kBeforeTrace).activities, 2u);
    EXPECT_EQ(d.reason(StartReason::kBeforeTrace).delay_ns, 1045 * kUs);
    EXPECT_EQ(d.reason(StartReason::kUnknown).activities, 0u);
    EXPECT_EQ(d.launched, 6u);
    EXPECT_EQ(d.median_launch_to_start_ns, 85 * kUs);
    EXPECT_EQ(d.p90_launch_to_start_ns, 1045 * kUs);
    // [15,40) follows work queued before it, but 25 us is a launch latency, not a stall.
    EXPECT_EQ(d.stalls, 0u);
    // Per activity, in start order.
    ASSERT_EQ(r.activities.size(), 7u);
    const StartReason expected[] = {StartReason::kBeforeTrace, StartReason::kLaunch,      StartReason::kStreamBacklog,
                                    StartReason::kLaunch,      StartReason::kCrossStream, StartReason::kLaunch,
                                    StartReason::kBeforeTrace};
    for (std::size_t k = 0; k < 7; ++k)
      EXPECT_EQ(start_reason_name(r.activities[k].reason), std::string(start_reason_name(expected[k])))
          << "k" << k << " (" << m.name_of(r.activities[k].event) << ")";
  }
}

// A host that keeps the device fed: a deep queue (each launch long before its kernel) is device
// backlog, not the host's doing; the device waits on nothing and the host on nothing.
TEST(Causality, ADeepQueueIsBacklogNotLaunchOverhead) {
  std::vector<std::string> events = {host("user_annotation", "ProfilerStep#1", 0, 100)};
  // 10 launches in [0,100); kernels of 200 us back to back from 100 on stream 7.
  for (int i = 0; i < 10; ++i) {
    events.push_back(host("cuda_runtime", "cudaLaunchKernel", i * 10, 5, i + 1));
    events.push_back(gpu("k", 7, 100 + i * 200, 200, i + 1));
  }
  const TraceModel m = load_trace_text(trace(events));
  const AnalysisContext ctx = make_analysis_context(m, {});
  ASSERT_EQ(ctx.window_end_ns, 2100 * kUs);
  const DeviceCausality d = analyze_causality(m, ctx).devices.at(0);
  // The first kernel waited 100 us for nothing traced: launch at 0, start 100 (under 1 ms: launch).
  EXPECT_EQ(d.reason(StartReason::kLaunch).activities, 1u);
  EXPECT_EQ(d.reason(StartReason::kStreamBacklog).activities, 9u);
  // Kernel i (1..9) queued from its launch at 10 i to the previous end 100 + 200 i: sum 1000 + 190 * 45.
  EXPECT_EQ(d.reason(StartReason::kStreamBacklog).delay_ns, (9 * 100 + 190 * 45) * kUs);
  EXPECT_EQ(d.busy_ns, 2000 * kUs);
  EXPECT_EQ(d.both_busy_ns, 2000 * kUs);
  // [0,100): the first kernel's launch call returned at 5 and it started 95 us later, within a
  // launch latency: the device waited on the host, the only wait in the window.
  EXPECT_EQ(d.device_waited_on_host_ns, 100 * kUs);
  EXPECT_EQ(d.neither_ns, 0);
}

// The real traces the causal model was built for (issue: who waits on whom), by what their owners'
// tools and a reading of the raw events say: an MTIA inference server whose host runs far ahead
// (launch to start in milliseconds, the device working nearly all the window); an MI300 server
// whose window opens with a ~470 ms host wait on work the trace does not hold (half the window);
// an A100 recommender with a queue 160 ms deep. And text and JSON say the same numbers.
TEST(CausalityCorpus, HostAheadEdgeWaitAndDeepQueue) {
  FERRET_REQUIRE_CORPUS(mtia, "mtia-inference-backlog.json.gz");
  FERRET_REQUIRE_CORPUS(sglang, "mi300-sglang-prefill-edge-wait.json.gz");
  FERRET_REQUIRE_CORPUS(recsys, "a100-recsys-rank0-deep-queue.json.gz");
  const auto busiest = [](const std::string& path) {
    const TraceModel m = load_trace(path);
    const CausalityResult r = analyze_causality(m, make_analysis_context(m, {}));
    EXPECT_GE(r.busiest, 0) << path;
    return r.devices.at(static_cast<std::size_t>(r.busiest));
  };
  const DeviceCausality a = busiest(mtia);
  {  // the breakdown alone read this window as CPU-bound; the causal timeline does not confirm it
    const test::CommandResult r = test::run_ferret("analyze --json " + mtia);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json doc = nlohmann::json::parse(r.out);  // a named document: the loop reads into it
    for (const nlohmann::json& f : doc["traces"][0]["findings"]) EXPECT_NE(f["id"], "cpu-bound") << f["title"];
  }
  EXPECT_LT(a.device_waited_on_host_ns, a.window_ns / 10);
  EXPECT_GT(a.both_busy_ns, a.window_ns * 8 / 10);
  EXPECT_GT(a.median_launch_to_start_ns, 1'000'000);
  {  // the ~470 ms wait on untraced work that opens the window is an edge wait, cut off the window
    const TraceModel m = load_trace(sglang);
    const AnalysisContext ctx = make_analysis_context(m, {});
    EXPECT_GT(ctx.edge_trimmed_ns, 400'000'000);
    ASSERT_EQ(ctx.edge_waits.size(), 1u);
    EXPECT_TRUE(ctx.edge_waits[0].at_start);
  }
  const DeviceCausality b = busiest(sglang);
  EXPECT_LT(b.device_waited_on_host_ns, b.window_ns / 100);
  const DeviceCausality c = busiest(recsys);
  EXPECT_GT(c.median_launch_to_start_ns, 100'000'000);
  EXPECT_GT(c.reason(StartReason::kStreamBacklog).activities, c.launched / 2);
  EXPECT_LT(c.device_waited_on_host_ns, c.window_ns / 20);
  for (const DeviceCausality& d : {a, b, c})
    EXPECT_EQ(d.device_waited_on_host_ns + d.host_waited_on_device_ns + d.both_busy_ns + d.neither_ns, d.window_ns);
  // The text line is the JSON's numbers, rounded.
  const test::CommandResult text = test::run_ferret("analyze --width 200 " + recsys);
  const test::CommandResult doc = test::run_ferret("analyze --json " + recsys);
  ASSERT_EQ(text.exit_code, 0);
  const nlohmann::json j = nlohmann::json::parse(doc.out)["traces"][0]["causality"];
  const nlohmann::json& dev = j["devices"][0];
  const double window = dev["window_us"];
  EXPECT_NE(text.out.find(fmt::format("the host on the device {:.1f}%",
                                      100 * dev["host_waited_on_device_us"].get<double>() / window)),
            std::string::npos)
      << text.out.substr(0, 600);
  EXPECT_EQ(j["busiest_device"], dev["device"]);
}

}  // namespace causality_test
}  // namespace
}  // namespace ferret
