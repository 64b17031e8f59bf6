// Fixes the device can run: one check over every rule's fixes (diagnosis/device_fixes.h).
#include "diagnosis/device_fixes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/trace_analysis.h"
#include "base/text.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace device_fixes_test {

TraceModel with_device(const std::string& name, int major, int minor) {
  return load_trace_text(fmt::format(
      R"({{"deviceProperties": [{{"id": 0, "name": "{}", "computeMajor": {}, "computeMinor": {}, "numSms": 80}}],
          "traceEvents": [{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 1}}]}})",
      name, major, minor));
}

TEST(DeviceFixes, FeaturesByComputeCapabilityAndVendor) {
  const DeviceFeatures v100 = device_features(with_device("Tesla V100-SXM2-32GB", 7, 0));
  EXPECT_TRUE(v100.known);
  EXPECT_FALSE(v100.bf16);
  EXPECT_FALSE(v100.tf32);
  EXPECT_FALSE(v100.fp8);
  EXPECT_FALSE(v100.flash_attention);
  EXPECT_TRUE(v100.fp16_matrix);
  const DeviceFeatures t4 = device_features(with_device("Tesla T4", 7, 5));
  EXPECT_FALSE(t4.bf16);
  EXPECT_TRUE(t4.fp16_matrix);
  const DeviceFeatures a100 = device_features(with_device("NVIDIA A100-SXM4-80GB", 8, 0));
  EXPECT_TRUE(a100.bf16 && a100.tf32 && a100.flash_attention);
  EXPECT_FALSE(a100.fp8);
  const DeviceFeatures l4 = device_features(with_device("NVIDIA L4", 8, 9));
  EXPECT_TRUE(l4.fp8);
  const DeviceFeatures h100 = device_features(with_device("NVIDIA H100 80GB HBM3", 9, 0));
  EXPECT_TRUE(h100.fp8);
  const DeviceFeatures mi300 = device_features(with_device("AMD Instinct MI300X", 9, 4));
  EXPECT_TRUE(mi300.bf16 && mi300.fp8);
  EXPECT_FALSE(mi300.tf32);
  const DeviceFeatures mi250 = device_features(with_device("AMD Instinct MI250X", 9, 0));
  EXPECT_TRUE(mi250.bf16);
  EXPECT_FALSE(mi250.fp8);
  EXPECT_FALSE(device_features(load_trace_text(R"({"traceEvents": []})")).known);
}

// On a V100: bf16, TF32, FP8 and flash-attn fixes go; a fix offering fp16 or bf16 stays; the fp16
// loss-scaling fix takes the precision fixes' place, first; the detail counts what went.
TEST(DeviceFixes, VoltaGetsFp16NotBf16Tf32OrFp8) {
  Finding f;
  f.id = "hot-operator";
  f.fixes = {"Run it in bf16: `with torch.autocast(\"cuda\", dtype=torch.bfloat16): out = model(x)`",
             "For fp32, allow TF32: `torch.backends.cuda.matmul.allow_tf32 = True`",
             "FP8 with Transformer Engine: `import transformer_engine.pytorch as te`",
             "attn_implementation=\"flash_attention_2\" with the flash-attn package",
             "Use fp16/bf16 inputs for the fused attention kernels",
             "Compile: `model = torch.compile(model)`"};
  std::vector<Finding> findings = {f};
  fit_fixes_to_device(findings, device_features(with_device("Tesla V100-SXM2-32GB", 7, 0)));
  const std::vector<std::string>& fixes = findings[0].fixes;
  ASSERT_EQ(fixes.size(), 3u);
  EXPECT_TRUE(contains(fixes[0], "GradScaler")) << fixes[0];
  EXPECT_EQ(fixes[1], "Use fp16/bf16 inputs for the fused attention kernels");
  EXPECT_EQ(fixes[2], "Compile: `model = torch.compile(model)`");
  EXPECT_TRUE(contains(findings[0].detail, "4 fixes left out")) << findings[0].detail;
  // On an H100 every one of them stays, and nothing is added.
  std::vector<Finding> hopper = {f};
  fit_fixes_to_device(hopper, device_features(with_device("NVIDIA H100 80GB HBM3", 9, 0)));
  EXPECT_EQ(hopper[0].fixes, f.fixes);
}

// What the trace shows done is not asked for again: a compiled model gets the next step (graph
// breaks) instead of "compile"; replayed graphs drop graph capture; a fused optimizer drops
// `fused=True`. A "reduce-overhead" compile stays while no graph replays (it adds them).
TEST(WorkDone, FixesTheTraceShowsDoneAreLeftOut) {
  Finding f;
  f.id = "launch-bound";
  f.fixes = {"Fuse small ops: `model = torch.compile(model)`",
             "Replay the step as a CUDA graph: `model = torch.compile(model, mode=\"reduce-overhead\")`",
             "Or capture by hand: `g = torch.cuda.CUDAGraph()`",
             "Fused optimizer step: `torch.optim.AdamW(model.parameters(), lr=lr, fused=True)`",
             "Raise the batch size"};
  WorkDone compiled;
  compiled.compiled = true;
  std::vector<Finding> a = {f};
  fit_fixes_to_work_done(a, compiled);
  ASSERT_EQ(a[0].fixes.size(), 5u);
  EXPECT_TRUE(contains(a[0].fixes[0], "reduce-overhead"));
  EXPECT_TRUE(contains(a[0].fixes[4], "graph_breaks,recompiles")) << a[0].fixes[4];
  EXPECT_TRUE(contains(a[0].detail, "1 fix left out: the trace shows torch.compile already in place")) << a[0].detail;
  WorkDone all;
  all.compiled = all.graphs = all.fused_optimizer = true;
  std::vector<Finding> b = {f};
  fit_fixes_to_work_done(b, all);
  ASSERT_EQ(b[0].fixes.size(), 2u);
  EXPECT_EQ(b[0].fixes[0], "Raise the batch size");
  EXPECT_TRUE(contains(b[0].detail, "4 fixes left out")) << b[0].detail;
  EXPECT_TRUE(contains(b[0].detail, "torch.compile, graph replay, a fused optimizer")) << b[0].detail;
  std::vector<Finding> c = {f};
  fit_fixes_to_work_done(c, WorkDone{});
  EXPECT_EQ(c[0].fixes, f.fixes);
}

// From a trace: Inductor's Triton kernels and aten::_fused_adamw_ are seen; nothing else is.
TEST(WorkDone, ReadFromTheTrace) {
  const TraceModel m = load_trace_text(test::trace({
      test::span("user_annotation", "ProfilerStep#1", 1, 1, 0, 100),
      test::span("cpu_op", "aten::_fused_adamw_", 1, 1, 10, 20),
      test::span("cuda_runtime", "cuLaunchKernel", 1, 1, 40, 5, test::corr(1)),
      test::span("kernel", "triton_poi_fused_add_0", 0, 7, 50, 5, test::corr(1)),
  }));
  const WorkDone d = work_done(analyze_trace(m, {}));
  EXPECT_TRUE(d.compiled);
  EXPECT_TRUE(d.fused_optimizer);
  EXPECT_FALSE(d.graphs);
  const WorkDone none = work_done(analyze_trace(with_device("NVIDIA H100 80GB HBM3", 9, 0), {}));
  EXPECT_FALSE(none.compiled || none.graphs || none.fused_optimizer);
}

// A real V100 trace: no finding offers bf16 (without fp16), TF32 or FP8.
TEST(DeviceFixesCorpus, VoltaTraceOffersNoFixItCannotRun) {
  FERRET_REQUIRE_CORPUS(path, "resnet-ddp-v100-2024-ns.pt.trace.json.gz");
  const TraceModel m = load_trace(path);
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  for (const Finding& f : d.findings)
    for (const std::string& fix : f.fixes) {
      const bool bf16_only =
          (contains(fix, "bf16") || contains(fix, "bfloat16")) && !contains(fix, "fp16") && !contains(fix, "float16");
      EXPECT_FALSE(bf16_only) << f.id << ": " << fix;
      EXPECT_FALSE(contains(fix, "TF32") || contains(fix, "allow_tf32")) << f.id << ": " << fix;
      EXPECT_FALSE(contains(fix, "FP8") || contains(fix, "transformer_engine")) << f.id << ": " << fix;
    }
}

}  // namespace device_fixes_test
}  // namespace
}  // namespace ferret
