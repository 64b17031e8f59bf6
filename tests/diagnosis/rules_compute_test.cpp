// Step-time, data-pipeline and GPU-efficiency rules: on hand-made analysis results (the structs
// built directly, each number chosen on one side of a documented threshold) and on real traces
// whose bottleneck the TensorBoard plugin named (../shared/corpus/MANIFEST.md).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/analysis_options.h"
#include "base/text.h"
#include "diagnosis/rules.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rules_compute_test {

constexpr double kStepNs = 100e6;  // a 100 ms step

// A one-step breakdown from percentages of the step (Other takes the rest).
StepBreakdownResult breakdown(double kernel, double runtime, double dataloader, double cpu_exec, double other) {
  StepBreakdownResult b;
  b.has_steps = true;
  StepCost s;
  s.number = 1;
  s.duration_ns = static_cast<std::int64_t>(kStepNs);
  auto set = [&](StepCategory c, double pct) {
    const int i = static_cast<int>(c);
    s.ns[i] = static_cast<std::int64_t>(pct / 100 * kStepNs);
    b.average_ns[i] = pct / 100 * kStepNs;
    b.average_pct[i] = pct;
  };
  set(StepCategory::kKernel, kernel);
  set(StepCategory::kRuntime, runtime);
  set(StepCategory::kDataLoader, dataloader);
  set(StepCategory::kCpuExec, cpu_exec);
  set(StepCategory::kOther, other);
  b.steps.push_back(s);
  b.average_duration_ns = kStepNs;
  return b;
}

DeviceMetrics device(const char* name, int major, double utilization_pct) {
  DeviceMetrics d;
  d.device = 0;
  d.name = name;
  d.compute_major = major;
  d.compute_minor = 0;
  d.window_ns = static_cast<std::int64_t>(kStepNs);
  d.kernel_busy_ns = static_cast<std::int64_t>(utilization_pct / 100 * kStepNs);
  d.kernel_ns = d.kernel_busy_ns;
  d.compute_kernel_ns = d.kernel_ns;
  d.utilization_pct = utilization_pct;
  d.kernels = 1000;
  return d;
}

std::vector<Finding> run_rules(const TraceAnalysis& a) {
  std::vector<Finding> out;
  rules_step_time(a, out);
  rules_data_pipeline(a, out);
  rules_gpu_efficiency(a, out);
  return out;
}

// A copy: callers pass the temporary result of run_rules.
std::optional<Finding> find(const std::vector<Finding>& findings, const std::string& id) {
  auto it = std::find_if(findings.begin(), findings.end(), [&](const Finding& f) { return f.id == id; });
  if (it == findings.end()) return std::nullopt;
  return *it;
}

bool any_fix_contains(const Finding& f, const std::string& text) {
  return std::ranges::any_of(fix_texts(f), [&](const std::string& fix) { return fix.find(text) != std::string::npos; });
}

// Every finding carries what the report needs, and its gain is the Amdahl bound of its share.
void expect_well_formed(const Finding& f) {
  EXPECT_FALSE(f.title.empty()) << f.id;
  EXPECT_FALSE(f.detail.empty()) << f.id;
  EXPECT_FALSE(f.evidence.empty()) << f.id;
  EXPECT_FALSE(f.fixes.empty()) << f.id;
  EXPECT_FALSE(f.threshold.empty()) << f.id;
  EXPECT_GE(f.time_share, 0.0) << f.id;
  EXPECT_LE(f.time_share, 1.0) << f.id;
  EXPECT_DOUBLE_EQ(f.max_speedup, amdahl_speedup(f.time_share)) << f.id;
}

// --- input-bound: >= 5% moderate, >= 20% high (XProf; plugin > 5%) --------------------------------

TEST(InputBound, HighFromTwentyPercent) {
  TraceAnalysis a;
  a.breakdown = breakdown(55, 2, 33, 8, 2);
  a.data_pipeline.single_process_loader = true;
  a.data_pipeline.dataloader_pct = 39;
  const std::vector<Finding> findings = run_rules(a);
  const std::optional<Finding> f = find(findings, "input-bound");
  ASSERT_TRUE(f.has_value());
  expect_well_formed(*f);
  EXPECT_EQ(f->severity, Severity::kHigh);
  EXPECT_EQ(f->dimension, Dimension::kDataPipeline);
  EXPECT_NE(f->title.find("33%"), std::string::npos) << f->title;
  EXPECT_NEAR(f->time_share, 0.33, 1e-9);
  EXPECT_NEAR(f->max_speedup, 1 / 0.67, 1e-9);  // Amdahl: 1 / (1 - 0.33)
  EXPECT_TRUE(any_fix_contains(*f, "num_workers="));
  EXPECT_TRUE(any_fix_contains(*f, "pin_memory=True"));
  EXPECT_TRUE(any_fix_contains(*f, "persistent_workers=True"));
  EXPECT_TRUE(any_fix_contains(*f, "prefetch_factor=4"));
  EXPECT_NE(f->detail.find("num_workers=0"), std::string::npos);  // the iterator name said so
}

// The DataLoaders `ferret run` read from the running script are quoted, as the settings file
// gives them (parse_dataloader_settings), and the first one's num_workers joins the evidence.
TEST(InputBound, QuotesTheDataLoadersRecordedAtRunTime) {
  TraceAnalysis a;
  a.breakdown = breakdown(55, 2, 33, 8, 2);
  a.data_pipeline.single_process_loader = true;
  a.context.options.dataloaders = parse_dataloader_settings(
      R"([{"batch_size": 8, "num_workers": 0, "pin_memory": false, "prefetch_factor": null,
           "persistent_workers": false},
          {"batch_size": 64, "num_workers": 4, "pin_memory": true, "prefetch_factor": 2}])",
      "settings.json");
  const std::optional<Finding> f = find(run_rules(a), "input-bound");
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->detail.find("The script built DataLoader(batch_size=8, num_workers=0, pin_memory=False, "
                           "persistent_workers=False) and DataLoader(batch_size=64, num_workers=4, pin_memory=True, "
                           "prefetch_factor=2)."),
            std::string::npos)
      << f->detail;
  const auto workers =
      std::find_if(f->evidence.begin(), f->evidence.end(), [](const Evidence& e) { return e.name == "num_workers"; });
  ASSERT_NE(workers, f->evidence.end());
  EXPECT_EQ(workers->value, 0.0);
}

// The fixes fit how the loader is built: workers where there are none, more headroom where there
// are; shared memory only for workers; the pinned copy only where batches copy from pageable memory.
TEST(InputBound, FixesFitTheLoaderAndTheCopies) {
  TraceAnalysis a;
  a.breakdown = breakdown(55, 2, 33, 8, 2);
  a.data_pipeline.single_process_loader = true;
  a.host_blockers.copies.pageable_by_name = {{"Memcpy HtoD (Pageable -> Device)", 12, 3'000'000}};
  std::optional<Finding> f = find(run_rules(a), "input-bound");
  ASSERT_TRUE(f.has_value());
  EXPECT_TRUE(contains(f->fixes[0].text, "Load batches in worker processes"));
  EXPECT_EQ(f->fixes[0].because,
            std::vector<std::string>{"the DataLoader spans are _SingleProcessDataLoaderIter: num_workers=0"});
  EXPECT_TRUE(contains(f->fixes[1].text, "non_blocking=True"));
  EXPECT_EQ(f->fixes[1].because, std::vector<std::string>{"12 host-to-device copies come from pageable memory"});
  EXPECT_FALSE(any_fix_contains(*f, "--shm-size"));
  ASSERT_EQ(f->fixes_left_out.size(), 1u);
  EXPECT_EQ(f->fixes_left_out[0].because, "with num_workers=0 no worker passes batches through shared memory");

  // Worker processes that do not keep up, copies already pinned.
  a.data_pipeline.single_process_loader = false;
  a.data_pipeline.multi_process_loader = true;
  a.host_blockers.copies.pageable_by_name.clear();
  KernelStat pinned;
  pinned.name = "Memcpy HtoD (Pinned -> Device)";
  pinned.calls = 30;
  a.hot_spots.kernels = {pinned};
  f = find(run_rules(a), "input-bound");
  ASSERT_TRUE(f.has_value());
  EXPECT_TRUE(contains(f->fixes[0].text, "The workers do not keep up")) << f->fixes[0].text;
  EXPECT_FALSE(any_fix_contains(*f, "non_blocking=True"));
  EXPECT_TRUE(any_fix_contains(*f, "--shm-size"));
  ASSERT_EQ(f->fixes_left_out.size(), 1u);
  EXPECT_EQ(f->fixes_left_out[0].because, "the host-to-device copies already come from pinned memory (30 copies)");
}

TEST(InputBound, DataLoaderSettingsThatAreNotAListAreAnErrorNamingTheFile) {
  for (const char* bad : {"{}", "[1]", R"([{"num_workers": -1}])", R"([{"pin_memory": 1}])", "[{"}) {
    try {
      parse_dataloader_settings(bad, "run/rank-0.ferret-run.jsonl");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("run/rank-0.ferret-run.jsonl"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(parse_dataloader_settings("[]", "x").empty());
  EXPECT_EQ(parse_dataloader_settings(R"([{}])", "x").at(0).describe(), "DataLoader()");
}

TEST(InputBound, ModerateBetweenFiveAndTwentyPercent) {
  TraceAnalysis a;
  a.breakdown = breakdown(80, 2, 10, 6, 2);
  const std::optional<Finding> f = find(run_rules(a), "input-bound");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->severity, Severity::kMedium);
}

TEST(InputBound, SilentBelowFivePercent) {
  TraceAnalysis a;
  a.breakdown = breakdown(90, 2, 4, 3, 1);
  EXPECT_FALSE(find(run_rules(a), "input-bound").has_value());
  TraceAnalysis empty;
  EXPECT_TRUE(run_rules(empty).empty());
}

// --- low-gpu-utilization: < 50% (plugin), < 25% high ------------------------------------------------

TEST(LowGpuUtilization, BelowHalfIsMediumAndTheGainIsTheIdleShare) {
  TraceAnalysis a;
  a.breakdown = breakdown(40, 5, 40, 10, 5);
  a.gpu_metrics.devices.push_back(device("NVIDIA A100-SXM4-80GB", 8, 40));
  const std::optional<Finding> f = find(run_rules(a), "low-gpu-utilization");
  ASSERT_TRUE(f.has_value());
  expect_well_formed(*f);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_EQ(f->layer, Layer::kMacro);
  EXPECT_NEAR(f->time_share, 0.60, 1e-9);
  EXPECT_NE(f->title.find("40%"), std::string::npos) << f->title;
  EXPECT_TRUE(any_fix_contains(*f, "num_workers"));  // DataLoader is the largest idle cause here
}

TEST(LowGpuUtilization, BelowAQuarterIsHigh) {
  TraceAnalysis a;
  a.gpu_metrics.devices.push_back(device("NVIDIA H100 80GB HBM3", 9, 20));
  const std::optional<Finding> f = find(run_rules(a), "low-gpu-utilization");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->severity, Severity::kHigh);
}

TEST(LowGpuUtilization, SilentFromHalf) {
  TraceAnalysis a;
  a.gpu_metrics.devices.push_back(device("NVIDIA H100 80GB HBM3", 9, 55.5));
  EXPECT_FALSE(find(run_rules(a), "low-gpu-utilization").has_value());
}

// --- cpu-bound: Runtime + CPU Exec + Other >= 20% and > DataLoader; >= 40% high ---------------------

TEST(CpuBound, HostTimeWithTheGpuIdle) {
  TraceAnalysis a;
  a.breakdown = breakdown(40, 10, 10, 30, 10);  // host 10 + 30 + 10 = 50%
  a.gpu_metrics.devices.push_back(device("NVIDIA H100 80GB HBM3", 9, 40));
  const std::optional<Finding> f = find(run_rules(a), "cpu-bound");
  ASSERT_TRUE(f.has_value());
  expect_well_formed(*f);
  EXPECT_EQ(f->severity, Severity::kHigh);
  EXPECT_NEAR(f->time_share, 0.50, 1e-9);
  EXPECT_NE(f->title.find("50%"), std::string::npos) << f->title;
  EXPECT_TRUE(any_fix_contains(*f, "torch.compile"));
  EXPECT_TRUE(any_fix_contains(*f, "CUDAGraph"));
}

TEST(CpuBound, ModerateFromTwentyPercent) {
  TraceAnalysis a;
  a.breakdown = breakdown(70, 5, 5, 15, 5);  // host 25%
  a.gpu_metrics.devices.push_back(device("NVIDIA H100 80GB HBM3", 9, 70));
  const std::optional<Finding> f = find(run_rules(a), "cpu-bound");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->severity, Severity::kMedium);
}

TEST(CpuBound, SilentWhenTheInputPipelineIsTheLargerWait) {
  TraceAnalysis a;
  a.breakdown = breakdown(35, 5, 40, 15, 5);  // host 25% < DataLoader 40%
  a.gpu_metrics.devices.push_back(device("NVIDIA H100 80GB HBM3", 9, 35));
  EXPECT_FALSE(find(run_rules(a), "cpu-bound").has_value());
}

TEST(CpuBound, SilentOnATraceFragment) {
  // The same host-heavy breakdown, but the device ran 4 kernels: a fragment, not a workload.
  TraceAnalysis a;
  a.breakdown = breakdown(40, 10, 10, 30, 10);
  DeviceMetrics d = device("NVIDIA A100-SXM4-80GB", 8, 40);
  d.kernels = 4;
  a.gpu_metrics.devices.push_back(d);
  const std::vector<Finding> findings = run_rules(a);
  EXPECT_FALSE(find(findings, "cpu-bound").has_value());
  EXPECT_FALSE(find(findings, "low-gpu-utilization").has_value());
}

TEST(CpuBound, SilentOnACpuOnlyTrace) {
  TraceAnalysis a;
  a.breakdown = breakdown(0, 0, 0, 80, 20);  // no GPU work at all: nothing waits on the host
  EXPECT_FALSE(find(run_rules(a), "cpu-bound").has_value());
}

// --- no-tensor-cores ------------------------------------------------------------------------------

DeviceMetrics fp32_convnet(const char* name, int major) {
  // 50% utilization; eligible operators launch 70% of kernel time, 68% in non-Tensor-Core kernels.
  DeviceMetrics d = device(name, major, 50);
  d.tc_eligible_ns = d.kernel_ns * 70 / 100;
  d.tc_eligible_pct = 70;
  d.tc_eligible_without_tc_ns = d.kernel_ns * 68 / 100;
  d.tc_eligible_without_tc_pct = 68;
  d.tensor_core_ns = d.kernel_ns * 2 / 100;
  d.tensor_core_pct = 2;
  return d;
}

TEST(NoTensorCores, VoltaGetsFp16AutocastWithLossScalingAndNoTf32) {
  TraceAnalysis a;
  a.gpu_metrics.devices.push_back(fp32_convnet("Tesla V100-SXM2-32GB", 7));
  const std::optional<Finding> f = find(run_rules(a), "no-tensor-cores");
  ASSERT_TRUE(f.has_value());
  expect_well_formed(*f);
  EXPECT_EQ(f->severity, Severity::kHigh);  // 68% >= 50%
  EXPECT_EQ(f->layer, Layer::kOperator);
  EXPECT_NE(f->title.find("68%"), std::string::npos) << f->title;
  // Wall share: 68% of kernel time on a device busy half the window = 0.34, of which Tensor Cores
  // can remove at most 1 - 1/8 (V100: 125 FP16 Tensor TFLOP/s vs 15.7 FP32, the vendor datasheets).
  EXPECT_NEAR(f->time_share, 0.34 * (1.0 - 1.0 / 8.0), 1e-9);
  EXPECT_TRUE(any_fix_contains(*f, "torch.autocast(\"cuda\", dtype=torch.float16)"));
  EXPECT_TRUE(any_fix_contains(*f, "GradScaler"));
  EXPECT_FALSE(any_fix_contains(*f, "allow_tf32"));  // Volta has no TF32
}

TEST(NoTensorCores, AmpereGetsBf16AndTf32) {
  TraceAnalysis a;
  a.gpu_metrics.devices.push_back(fp32_convnet("NVIDIA A100-SXM4-80GB", 8));
  const std::optional<Finding> f = find(run_rules(a), "no-tensor-cores");
  ASSERT_TRUE(f.has_value());
  EXPECT_TRUE(any_fix_contains(*f, "torch.autocast(\"cuda\", dtype=torch.bfloat16)"));
  EXPECT_TRUE(any_fix_contains(*f, "torch.backends.cuda.matmul.allow_tf32 = True"));
  EXPECT_TRUE(any_fix_contains(*f, "torch.set_float32_matmul_precision(\"high\")"));
}

// channels-last names the convolution the trace runs and the layout transposes cuDNN runs around
// it; a trace whose operators hold no convolution (a transformer) does not get it.
TEST(NoTensorCores, ChannelsLastForTheConvolutionsTheTraceRuns) {
  TraceAnalysis a;
  a.gpu_metrics.devices.push_back(fp32_convnet("NVIDIA A100-SXM4-80GB", 8));
  OpStat conv;
  conv.name = "aten::cudnn_convolution";
  conv.calls = 53;
  conv.device_total_ns = 9'000'000;
  OpStat linear;
  linear.name = "aten::addmm";
  linear.device_total_ns = 20'000'000;
  a.hot_spots.ops_by_host = {linear, conv};
  KernelStat t1, t2;
  t1.name = "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)0>(...)";
  t1.calls = 20, t1.total_ns = 1'500'000;
  t2.name = "void cudnn::ops::nhwcToNchwKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>(...)";
  t2.calls = 15, t2.total_ns = 1'000'000;
  a.hot_spots.kernels = {t1, t2};
  std::optional<Finding> f = find(run_rules(a), "no-tensor-cores");
  ASSERT_TRUE(f.has_value());
  const Fix* cl = nullptr;
  for (const Fix& fix : f->fixes)
    if (fix.text.find("channels_last") != std::string::npos) cl = &fix;
  ASSERT_NE(cl, nullptr);
  EXPECT_EQ(cl->because,
            (std::vector<std::string>{"the trace runs aten::cudnn_convolution (53 calls)",
                                      "cuDNN transposes NCHW <-> NHWC around them (35 kernels, 2.50 ms)"}));
  a.hot_spots.ops_by_host = {linear};
  f = find(run_rules(a), "no-tensor-cores");
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(any_fix_contains(*f, "channels_last"));
  ASSERT_EQ(f->fixes_left_out.size(), 1u);
  EXPECT_EQ(f->fixes_left_out[0].because, "the trace runs no convolution");
}

TEST(NoTensorCores, SilentWithoutTensorCoresOrWhenTheyAreUsed) {
  TraceAnalysis pascal;  // CC 6.0: no Tensor Cores, so no Tensor Core kernels either
  DeviceMetrics p100 = fp32_convnet("Tesla P100-PCIE-16GB", 6);
  p100.tensor_core_ns = 0;
  p100.tensor_core_pct = 0;
  pascal.gpu_metrics.devices.push_back(p100);
  EXPECT_FALSE(find(run_rules(pascal), "no-tensor-cores").has_value());

  // bf16 network: eligible 70%, only 5% of kernel time outside Tensor Cores (layout transforms).
  TraceAnalysis bf16;
  DeviceMetrics d = fp32_convnet("NVIDIA H100 80GB HBM3", 9);
  d.tc_eligible_without_tc_ns = d.kernel_ns * 5 / 100;
  d.tensor_core_ns = d.kernel_ns * 65 / 100;
  bf16.gpu_metrics.devices.push_back(d);
  EXPECT_FALSE(find(run_rules(bf16), "no-tensor-cores").has_value());

  // 8% of kernel time: below the 10% floor.
  TraceAnalysis small;
  DeviceMetrics s = fp32_convnet("NVIDIA A100-SXM4-80GB", 8);
  s.tc_eligible_ns = s.kernel_ns * 8 / 100;
  s.tc_eligible_without_tc_ns = s.kernel_ns * 8 / 100;
  small.gpu_metrics.devices.push_back(s);
  EXPECT_FALSE(find(run_rules(small), "no-tensor-cores").has_value());
}

// --- low-occupancy: non-GEMM kernels < 25% (< 10% medium), >= 20% of kernel time --------------------

TEST(LowOccupancy, ElementwiseKernelsWithFewWarps) {
  TraceAnalysis a;
  DeviceMetrics d = device("NVIDIA A100-SXM4-80GB", 8, 80);
  d.achieved_occupancy_pct = 20;
  d.non_matmul_occupancy_pct = 8;
  d.non_matmul_occupancy_ns = d.kernel_ns * 40 / 100;
  a.gpu_metrics.devices.push_back(d);
  const std::optional<Finding> f = find(run_rules(a), "low-occupancy");
  ASSERT_TRUE(f.has_value());
  expect_well_formed(*f);
  EXPECT_EQ(f->severity, Severity::kMedium);
  // 40% of kernel time x 80% busy = 32% of the wall time; at 8% occupancy they keep at least 8/50
  // of it once 50% occupancy hides the latency: 0.32 x (1 - 0.16) = 0.2688.
  EXPECT_NEAR(f->time_share, 0.2688, 1e-9);
}

TEST(LowOccupancy, SilentWhenOccupancyIsFineOrUnknown) {
  TraceAnalysis fine;
  DeviceMetrics d = device("NVIDIA A100-SXM4-80GB", 8, 80);
  d.non_matmul_occupancy_pct = 30;
  d.non_matmul_occupancy_ns = d.kernel_ns / 2;
  fine.gpu_metrics.devices.push_back(d);
  EXPECT_FALSE(find(run_rules(fine), "low-occupancy").has_value());

  TraceAnalysis amd;  // ROCm traces carry no occupancy estimate
  amd.gpu_metrics.devices.push_back(device("AMD Instinct MI300X", 9, 80));
  EXPECT_FALSE(find(run_rules(amd), "low-occupancy").has_value());
}

// --- matmul-dominated: > 50% of compute kernel time -------------------------------------------------

TEST(MatmulDominated, MediumWithoutTensorCoresLowWithThem) {
  TraceAnalysis fp32;
  DeviceMetrics d = device("NVIDIA H100 80GB HBM3", 9, 90);
  d.matmul_conv_ns = d.compute_kernel_ns * 68 / 100;
  d.matmul_conv_pct = 68;
  fp32.gpu_metrics.devices.push_back(d);
  const std::optional<Finding> f = find(run_rules(fp32), "matmul-dominated");
  ASSERT_TRUE(f.has_value());
  expect_well_formed(*f);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_NE(f->title.find("68%"), std::string::npos) << f->title;
  EXPECT_TRUE(any_fix_contains(*f, "torch.autocast"));
  EXPECT_TRUE(any_fix_contains(*f, "torch.compile"));
  EXPECT_TRUE(any_fix_contains(*f, "torch_tensorrt"));
  EXPECT_TRUE(any_fix_contains(*f, "fp8_autocast"));  // Hopper

  TraceAnalysis bf16;
  d.tensor_core_ns = d.matmul_conv_ns * 9 / 10;
  bf16.gpu_metrics.devices.push_back(d);
  const std::optional<Finding> g = find(run_rules(bf16), "matmul-dominated");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->severity, Severity::kLow);
  EXPECT_FALSE(any_fix_contains(*g, "torch.autocast"));  // precision is already reduced
}

// The fix list fits the trace: the shape fix names the GEMM whose N or K is off a multiple of 8 (the
// vocabulary here) and is left out, with why, where the shapes are aligned or not recorded; the
// attention fix names the unfused pattern the trace computes and is left out where attention runs
// fused or the operators hold no attention pattern.
TEST(MatmulDominated, FixesNameTheShapeAndThePatternOrAreLeftOutWithWhy) {
  DeviceMetrics d = device("NVIDIA H100 80GB HBM3", 9, 90);
  d.matmul_conv_ns = d.compute_kernel_ns * 68 / 100;
  d.matmul_conv_pct = 68;
  TraceAnalysis a;
  a.gpu_metrics.devices.push_back(d);
  a.roofline.device = d.device;
  RooflineGroup lm_head;  // [8 x 1024, 768] x [768, 50257]: N = 50,257, 40% of the GEMM time
  lm_head.op = "aten::mm";
  lm_head.input_dims = "[[8192, 768], [768, 50257]]";
  lm_head.gemm_m = 8192, lm_head.gemm_n = 50257, lm_head.gemm_k = 768;
  lm_head.kernel_ns = d.matmul_conv_ns * 40 / 100;
  RooflineGroup rows = lm_head;  // M = 8,190 rows: a row count, never judged
  rows.input_dims = "[[8190, 768], [768, 768]]";
  rows.gemm_m = 8190, rows.gemm_n = 768;
  rows.kernel_ns = d.matmul_conv_ns * 50 / 100;
  a.roofline.groups = {rows, lm_head};
  a.hot_spots.ops_by_host.push_back(OpStat{});
  UnfusedAttentionGroup att;
  att.score_op = "aten::bmm";
  att.softmax_op = "aten::_softmax";
  att.calls = 12, att.batch = 96, att.query_len = 1024, att.key_len = 1024;
  a.attention.groups.push_back(att);
  std::optional<Finding> f = find(run_rules(a), "matmul-dominated");
  ASSERT_TRUE(f.has_value());
  const auto fix_with = [](const Finding& x, std::string_view text) -> const Fix* {
    for (const Fix& fix : x.fixes)
      if (fix.text.find(text) != std::string::npos) return &fix;
    return nullptr;
  };
  const Fix* pad = fix_with(*f, "Pad aten::mm");
  ASSERT_NE(pad, nullptr);
  EXPECT_NE(pad->text.find("N = 50257"), std::string::npos) << pad->text;
  EXPECT_EQ(pad->text.find("M = "), std::string::npos) << pad->text;
  EXPECT_EQ(pad->because,
            std::vector<std::string>{"aten::mm takes 40% of the GEMM time with N = 50257 off the alignment"});
  const Fix* sdpa = fix_with(*f, "scaled_dot_product_attention");
  ASSERT_NE(sdpa, nullptr);
  EXPECT_NE(sdpa->text.find("aten::bmm -> aten::_softmax -> matmul"), std::string::npos) << sdpa->text;
  EXPECT_EQ(sdpa->because,
            std::vector<std::string>{"the trace computes attention op by op (12 calls, scores [96 x 1024 x 1024])"});
  EXPECT_TRUE(f->fixes_left_out.empty());

  // Aligned shapes and fused attention: both fixes go, each with its reason.
  a.roofline.groups = {rows};
  a.attention.groups.clear();
  a.attention.fused_calls = 24;
  f = find(run_rules(a), "matmul-dominated");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(fix_with(*f, "Pad "), nullptr);
  EXPECT_EQ(fix_with(*f, "scaled_dot_product_attention"), nullptr);
  std::vector<std::string> reasons;
  for (const Finding::LeftOut& l : f->fixes_left_out) reasons.push_back(l.because);
  EXPECT_EQ(reasons, (std::vector<std::string>{"the trace shows fused attention (scaled_dot_product_attention) in use",
                                               "the trace's GEMMs have N and K in multiples of 8 already"}));
  // No shapes and no operators at all (kernels only): the shape fix goes for want of shapes, the
  // attention fix stays (nothing says it does not apply).
  TraceAnalysis bare;
  bare.gpu_metrics.devices.push_back(d);
  f = find(run_rules(bare), "matmul-dominated");
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(fix_with(*f, "scaled_dot_product_attention"), nullptr);
  ASSERT_EQ(f->fixes_left_out.size(), 1u);
  EXPECT_EQ(f->fixes_left_out[0].because,
            "the trace records no GEMM shapes to check (profile with record_shapes=True)");
}

// --- words that fit the device ------------------------------------------------------------------

// fp32 matmuls at 68% of an 80%-busy device: NVIDIA says Tensor Cores, AMD CDNA says Matrix Cores,
// an accelerator ferret knows no matrix units of (MTIA) says neither and bounds no precision gain;
// a device with no name reads "unknown device".
TEST(DeviceWords, MatrixUnitsAreNamedAsTheirVendorNamesThem) {
  auto matmuls = [](const char* name, int major) {
    DeviceMetrics d = device(name, major, 80);
    d.matmul_conv_ns = d.compute_kernel_ns * 68 / 100;
    d.matmul_conv_pct = 68;
    d.tc_eligible_ns = d.matmul_conv_ns;
    d.tc_eligible_without_tc_ns = d.matmul_conv_ns;
    d.tc_eligible_pct = 68;
    TraceAnalysis a;
    a.gpu_metrics.devices.push_back(d);
    return run_rules(a);
  };
  const std::vector<Finding> nvidia = matmuls("NVIDIA A100-SXM4-80GB", 8);
  ASSERT_TRUE(find(nvidia, "no-tensor-cores").has_value());
  EXPECT_NE(find(nvidia, "no-tensor-cores")->title.find("without Tensor Cores"), std::string::npos);
  EXPECT_NE(find(nvidia, "matmul-dominated")->title.find("on Tensor Cores"), std::string::npos);

  const std::vector<Finding> amd = matmuls("AMD Instinct MI300X", 9);
  ASSERT_TRUE(find(amd, "no-tensor-cores").has_value());
  EXPECT_NE(find(amd, "no-tensor-cores")->title.find("without Matrix Cores"), std::string::npos)
      << find(amd, "no-tensor-cores")->title;
  EXPECT_EQ(find(amd, "no-tensor-cores")->detail.find("Tensor Core"), std::string::npos);
  EXPECT_EQ(find(amd, "matmul-dominated")->title.find("Tensor Cores"), std::string::npos);

  for (const char* name : {"MTIA v2", ""}) {
    const std::vector<Finding> other = matmuls(name, -1);
    EXPECT_FALSE(find(other, "no-tensor-cores").has_value()) << name;
    const std::optional<Finding> m = find(other, "matmul-dominated");
    ASSERT_TRUE(m.has_value()) << name;
    EXPECT_EQ(m->title.find("Tensor Cores"), std::string::npos) << m->title;
    EXPECT_EQ(m->title.find("Matrix Cores"), std::string::npos) << m->title;
    EXPECT_DOUBLE_EQ(m->max_speedup, 1.0) << name;  // no known precision step to bound
    for (const Finding& f : other) EXPECT_FALSE(any_fix_contains(f, "autocast(\"cuda\"")) << f.id;
  }
  const std::optional<Finding> unnamed = find(matmuls("", -1), "matmul-dominated");
  EXPECT_NE(unnamed->title.find("GPU 0 (unknown device)"), std::string::npos) << unnamed->title;
}

// A CPU-only trace waiting 33% of each step for its DataLoader: CPU advice, no pinned memory, no
// GPU decode, no idle GPU.
TEST(DeviceWords, CpuOnlyInputBoundGetsCpuAdvice) {
  TraceAnalysis a;
  a.breakdown = breakdown(0, 0, 33, 60, 7);
  a.data_pipeline.single_process_loader = true;
  const std::optional<Finding> f = find(run_rules(a), "input-bound");
  ASSERT_TRUE(f.has_value());
  expect_well_formed(*f);
  EXPECT_TRUE(any_fix_contains(*f, "num_workers="));
  EXPECT_TRUE(any_fix_contains(*f, "torch.set_num_threads"));
  EXPECT_FALSE(any_fix_contains(*f, "pin_memory"));
  EXPECT_FALSE(any_fix_contains(*f, "DALI"));
  EXPECT_FALSE(any_fix_contains(*f, "cuda"));
  EXPECT_EQ(f->detail.find("GPU"), std::string::npos) << f->detail;
}

TEST(GpuEfficiency, SilentBelowFivePercentOfWallTime) {
  // 68% of kernel time in fp32 matmuls, but the device is busy 5% of the window: the kernels take
  // 3.4% of the wall time, below the 5% floor, so neither precision rule speaks.
  TraceAnalysis a;
  DeviceMetrics d = fp32_convnet("NVIDIA A100-SXM4-80GB", 8);
  d.kernel_busy_ns = d.window_ns * 5 / 100;
  d.kernel_ns = d.compute_kernel_ns = d.kernel_busy_ns;
  d.tc_eligible_ns = d.kernel_ns * 70 / 100;
  d.tc_eligible_without_tc_ns = d.kernel_ns * 68 / 100;
  d.tensor_core_ns = 0;
  d.matmul_conv_ns = d.tc_eligible_ns;
  d.matmul_conv_pct = 70;
  a.gpu_metrics.devices.push_back(d);
  const std::vector<Finding> findings = run_rules(a);
  EXPECT_FALSE(find(findings, "no-tensor-cores").has_value());
  EXPECT_FALSE(find(findings, "matmul-dominated").has_value());
}

TEST(MatmulDominated, SilentAtHalfOrBelow) {
  TraceAnalysis a;
  DeviceMetrics d = device("NVIDIA H100 80GB HBM3", 9, 90);
  d.matmul_conv_ns = d.compute_kernel_ns / 2;
  d.matmul_conv_pct = 50;
  a.gpu_metrics.devices.push_back(d);
  EXPECT_FALSE(find(run_rules(a), "matmul-dominated").has_value());
}

// --- real traces ----------------------------------------------------------------------------------

TraceAnalysis analyze(const TraceModel& m) {
  TraceAnalysis a;
  a.model = &m;
  a.context = make_analysis_context(m, {});
  a.breakdown = analyze_step_breakdown(m, a.context);
  a.gpu_metrics = analyze_gpu_metrics(m, a.context);
  a.data_pipeline = analyze_data_pipeline(m, a.context);
  return a;
}

// MANIFEST.md: the plugin recommended data loading (33.4% of step in DataLoader -> num_workers) and
// mixed precision (68% of kernel time launched by Tensor-Core-eligible operators, 0% Tensor Cores)
// on this trace; its GPU utilization is 55.51% (not below 50%) and host time is ~10% of the step.
TEST(CorpusResNet50, InputBoundAndMixedPrecisionFire) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const TraceModel m = load_trace(path);
  const std::vector<Finding> findings = run_rules(analyze(m));
  for (const Finding& f : findings) expect_well_formed(f);

  const std::optional<Finding> input = find(findings, "input-bound");
  ASSERT_TRUE(input.has_value());
  EXPECT_EQ(input->severity, Severity::kHigh);
  EXPECT_NEAR(input->time_share, 0.3337, 0.005);
  EXPECT_NE(input->title.find("33%"), std::string::npos) << input->title;

  const std::optional<Finding> precision = find(findings, "no-tensor-cores");
  ASSERT_TRUE(precision.has_value());
  EXPECT_EQ(precision->severity, Severity::kHigh);
  EXPECT_NE(precision->title.find("68%"), std::string::npos) << precision->title;
  EXPECT_TRUE(any_fix_contains(*precision, "GradScaler"));  // a V100: fp16, not bf16

  EXPECT_TRUE(find(findings, "matmul-dominated").has_value());
  EXPECT_FALSE(find(findings, "low-gpu-utilization").has_value());
  EXPECT_FALSE(find(findings, "cpu-bound").has_value());
}

// Hopper image-classifier inference in bf16 (MANIFEST.md): one 7.9 ms step with 1.2 ms of kernels.
// The GPU idles for the host (low utilization, CPU-bound); its convolutions and GEMMs already run on
// Tensor Cores, so mixed precision must not be advised.
TEST(CorpusH100, HostBoundInferenceAlreadyOnTensorCores) {
  FERRET_REQUIRE_CORPUS(path, "h100-image-classifier-inference.json.gz");
  const TraceModel m = load_trace(path);
  const std::vector<Finding> findings = run_rules(analyze(m));
  for (const Finding& f : findings) expect_well_formed(f);
  EXPECT_TRUE(find(findings, "low-gpu-utilization").has_value());
  EXPECT_TRUE(find(findings, "cpu-bound").has_value());
  EXPECT_FALSE(find(findings, "no-tensor-cores").has_value());
  EXPECT_FALSE(find(findings, "input-bound").has_value());
}

}  // namespace rules_compute_test
}  // namespace
}  // namespace ferret
