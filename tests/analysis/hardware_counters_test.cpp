// Measured SM and Tensor activity from CUPTI PM sampling (Kineto's `hardware_counters` counter
// events), beside the estimated SM efficiency. Times in the fixtures are microseconds; expected
// means are worked out in the comments.
#include <string>

#include <gtest/gtest.h>

#include "analysis/operator/gpu_metrics.h"
#include "analysis/timeline/trace_summary.h"
#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "report/trace/analyze_report.h"

namespace ferret {
namespace {
namespace hardware_counters_test {

// One step [100,200) on device 0 (10 SMs); one kernel of 5 blocks fills it: 5 / 10 = 0.5 blocks
// per SM, so the estimated SM efficiency is 50%. PM sampling on device 0:
//   SM Active, the metric as the arg: 10 at 80, 70 at 120, 40 at 160, 0 at 210 (the last sample
//     ends the series). In the window: [100,120) x 10 + [120,160) x 70 + [160,200) x 40
//     = 200 + 2800 + 1600 = 4600 over 100 us -> 46.0%, covering 100% of the window.
//   Tensor Active, the value as "value": 25 at 100, 5 at 150, 15 at 175 (last).
//     [100,150) x 25 + [150,175) x 5 = 1250 + 125 = 1375 over 75 us -> 18.333...%.
// Ignored: a DRAM throughput series (another metric), a counter of another category with an SM-like
// name, and PM samples of device 1, which ran no kernel.
const char* kPmSampling = R"J({
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0,
                        "numSms": 10}],
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 101, "dur": 2,
   "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "pid": 0, "tid": 7, "ts": 100,
   "dur": 100, "args": {"device": 0, "stream": 7, "correlation": 1, "grid": [5, 1, 1], "block": [128, 1, 1]}},
  {"ph": "C", "cat": "hardware_counters", "name": "SM Active", "pid": 0, "tid": 0, "ts": 80,
   "args": {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed": 10}},
  {"ph": "C", "cat": "hardware_counters", "name": "SM Active", "pid": 0, "tid": 0, "ts": 120,
   "args": {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed": 70.0}},
  {"ph": "C", "cat": "hardware_counters", "name": "SM Active", "pid": 0, "tid": 0, "ts": 160,
   "args": {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed": 40}},
  {"ph": "C", "cat": "hardware_counters", "name": "SM Active", "pid": 0, "tid": 0, "ts": 210,
   "args": {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed": 0}},
  {"ph": "C", "cat": "hardware_counters", "name": "Tensor Active", "pid": 0, "tid": 0, "ts": 100,
   "args": {"value": 25}},
  {"ph": "C", "cat": "hardware_counters", "name": "Tensor Active", "pid": 0, "tid": 0, "ts": 150,
   "args": {"value": 5}},
  {"ph": "C", "cat": "hardware_counters", "name": "Tensor Active", "pid": 0, "tid": 0, "ts": 175,
   "args": {"value": 15}},
  {"ph": "C", "cat": "hardware_counters", "name": "DRAM Throughput", "pid": 0, "tid": 0, "ts": 100,
   "args": {"dram__throughput.avg.pct_of_peak_sustained_elapsed": 90}},
  {"ph": "C", "cat": "hardware_counters", "name": "DRAM Throughput", "pid": 0, "tid": 0, "ts": 200,
   "args": {"dram__throughput.avg.pct_of_peak_sustained_elapsed": 90}},
  {"ph": "C", "name": "SM Active", "pid": 0, "tid": 0, "ts": 100, "args": {"value": 99}},
  {"ph": "C", "name": "SM Active", "pid": 0, "tid": 0, "ts": 200, "args": {"value": 99}},
  {"ph": "C", "cat": "hardware_counters", "name": "SM Active", "pid": 1, "tid": 0, "ts": 100,
   "args": {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed": 80}},
  {"ph": "C", "cat": "hardware_counters", "name": "SM Active", "pid": 1, "tid": 0, "ts": 200,
   "args": {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed": 80}}
  ]
})J";

TEST(HardwareCounters, TimeWeightedMeansOverTheWindowBesideTheEstimate) {
  const TraceModel m = load_trace_text(kPmSampling);
  EXPECT_EQ(m.report.repair_count(), 0u);
  const GpuMetricsResult g = analyze_gpu_metrics(m, make_analysis_context(m, {}));
  ASSERT_EQ(g.devices.size(), 1u);  // device 1's samples do not make it a device
  const DeviceMetrics& d = g.devices[0];
  EXPECT_DOUBLE_EQ(d.sm_efficiency_pct, 50.0);  // estimated, from the launch size
  EXPECT_DOUBLE_EQ(d.measured_sm_active_pct, 46.0);
  EXPECT_NEAR(d.measured_tensor_active_pct, 1375.0 / 75.0, 1e-9);
  EXPECT_DOUBLE_EQ(d.measured_coverage_pct, 100.0);

  // Three PM sampling series: SM Active (the same on both devices), Tensor Active, DRAM Throughput;
  // the counter without the category is not PM sampling.
  EXPECT_EQ(summarize_trace(m).hardware_counter_series, 3u);
}

TEST(HardwareCounters, JsonAndTextSayMeasured) {
  const TraceModel m = load_trace_text(kPmSampling);
  const TraceAnalysis analysis = analyze_trace(m, {});
  const Diagnosis diagnosis = diagnose(analysis);
  const nlohmann::ordered_json j = analyze_json(analysis, diagnosis);
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["gpus"][0]["measured_sm_active_pct"].get<double>(), 46.0);
  EXPECT_DOUBLE_EQ(j["gpus"][0]["measured_tensor_active_pct"].get<double>(), 18.33);  // rounded to 2 places
  EXPECT_DOUBLE_EQ(j["gpus"][0]["measured_coverage_pct"].get<double>(), 100.0);
  const std::string text = analyze_text(analysis, diagnosis, Style{});
  EXPECT_NE(text.find("measured: SM active 46.0%  Tensor active 18.3%  (100% of window sampled)"), std::string::npos)
      << text;
}

TEST(HardwareCounters, AbsentWithoutPmSampling) {
  // The same step and kernel without counters: the measured fields stay unknown.
  const TraceModel m = load_trace_text(R"J({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 101, "dur": 2,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100, "dur": 100,
     "args": {"device": 0, "stream": 7, "correlation": 1, "blocks per SM": 0.5}}
  ]})J");
  const TraceAnalysis analysis = analyze_trace(m, {});
  ASSERT_EQ(analysis.gpu_metrics.devices.size(), 1u);
  EXPECT_EQ(analysis.gpu_metrics.devices[0].measured_sm_active_pct, -1);
  EXPECT_EQ(analysis.gpu_metrics.devices[0].measured_tensor_active_pct, -1);
  const Diagnosis diagnosis = diagnose(analysis);
  const nlohmann::ordered_json j = analyze_json(analysis, diagnosis);
  EXPECT_TRUE(j["gpus"][0]["measured_sm_active_pct"].is_null());
  EXPECT_TRUE(j["gpus"][0]["measured_tensor_active_pct"].is_null());
  EXPECT_EQ(analyze_text(analysis, diagnosis, Style{}).find("measured:"), std::string::npos);
}

}  // namespace hardware_counters_test
}  // namespace
}  // namespace ferret
