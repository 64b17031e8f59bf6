// Fixes the device can run: one check over every rule's fixes (diagnosis/device_fixes.h).
#include "diagnosis/device_fixes.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/trace_analysis.h"
#include "base/text.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "report/format.h"
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
  // FP8 by the architecture where the name is one ferret has no row for (gfx950: CDNA 4).
  EXPECT_TRUE(device_features(with_device("AMD Instinct MI355X", 9, 5)).fp8);
  EXPECT_TRUE(device_features(with_device("AMD Radeon Graphics", 9, 5)).fp8);
  EXPECT_TRUE(device_features(with_device("NVIDIA B300 SXM6 AC", 10, 3)).fp8);
  EXPECT_FALSE(device_features(load_trace_text(R"({"traceEvents": []})")).known);
}

void expect_left_out(const Finding& f, const std::vector<Finding::LeftOut>& expected) {
  ASSERT_EQ(f.fixes_left_out.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(f.fixes_left_out[i].fix, expected[i].fix) << i;
    EXPECT_EQ(f.fixes_left_out[i].because, expected[i].because) << i;
  }
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
  const std::vector<Fix>& fixes = findings[0].fixes;
  ASSERT_EQ(fixes.size(), 3u);
  EXPECT_TRUE(contains(fixes[0].text, "GradScaler")) << fixes[0].text;
  EXPECT_EQ(fixes[1].text, "Use fp16/bf16 inputs for the fused attention kernels");
  EXPECT_EQ(fixes[2].text, "Compile: `model = torch.compile(model)`");
  say_fixes_left_out(findings);
  EXPECT_TRUE(contains(findings[0].detail,
                       "4 fixes left out: Tesla V100-SXM2-32GB cannot run bf16; Tesla V100-SXM2-32GB cannot run TF32; "
                       "Tesla V100-SXM2-32GB cannot run FP8; Tesla V100-SXM2-32GB cannot run FlashAttention."))
      << findings[0].detail;
  // Each one kept with why, for the JSON (fixes_left_out), in the order written.
  expect_left_out(findings[0], {{f.fixes[0].text, "Tesla V100-SXM2-32GB cannot run bf16"},
                                {f.fixes[1].text, "Tesla V100-SXM2-32GB cannot run TF32"},
                                {f.fixes[2].text, "Tesla V100-SXM2-32GB cannot run FP8"},
                                {f.fixes[3].text, "Tesla V100-SXM2-32GB cannot run FlashAttention"}});
  // On an H100 every one of them stays, and nothing is added.
  std::vector<Finding> hopper = {f};
  fit_fixes_to_device(hopper, device_features(with_device("NVIDIA H100 80GB HBM3", 9, 0)));
  EXPECT_EQ(hopper[0].fixes, f.fixes);
  // ... each saying that the device runs it, after the finding's title; the V100's fp16 fix says why
  // it took bf16's place. A fix the device check has no word for carries the title alone.
  f.title = "Matmul-dominated";
  hopper[0].title = f.title;
  EXPECT_EQ(applies_because(hopper[0], hopper[0].fixes[0]),
            "Matmul-dominated; NVIDIA H100 80GB HBM3 runs bf16 on its Tensor Cores");
  EXPECT_EQ(applies_because(hopper[0], hopper[0].fixes[2]),
            "Matmul-dominated; NVIDIA H100 80GB HBM3 runs FP8 on its Tensor Cores");
  EXPECT_TRUE(hopper[0].fixes[4].because.empty());
  EXPECT_EQ(applies_because(hopper[0], hopper[0].fixes[4]), "Matmul-dominated");
  ASSERT_EQ(fixes[0].because.size(), 1u);
  EXPECT_EQ(fixes[0].because[0], "Tesla V100-SXM2-32GB runs fp16, not bf16, on its Tensor Cores");
  std::vector<Finding> mi300 = {f};
  fit_fixes_to_device(mi300, device_features(with_device("AMD Instinct MI300X", 9, 4)));
  EXPECT_EQ(mi300[0].fixes[0].because, std::vector<std::string>{"AMD Instinct MI300X runs bf16 on its Matrix Cores"});
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
  EXPECT_TRUE(contains(a[0].fixes[0].text, "reduce-overhead"));
  EXPECT_TRUE(contains(a[0].fixes[4].text, "graph_breaks,recompiles")) << a[0].fixes[4].text;
  say_fixes_left_out(a);
  EXPECT_TRUE(contains(a[0].detail, "1 fix left out: the trace shows torch.compile already in place.")) << a[0].detail;
  WorkDone all;
  all.compiled = all.graphs = all.fused_optimizer = true;
  std::vector<Finding> b = {f};
  fit_fixes_to_work_done(b, all);
  ASSERT_EQ(b[0].fixes.size(), 2u);
  EXPECT_EQ(b[0].fixes[0].text, "Raise the batch size");
  say_fixes_left_out(b);
  EXPECT_TRUE(contains(b[0].detail,
                       "4 fixes left out: the trace shows torch.compile already in place; the trace shows graph "
                       "replay already in place (2); the trace shows a fused optimizer already in place."))
      << b[0].detail;
  expect_left_out(b[0], {{f.fixes[0].text, "the trace shows torch.compile already in place"},
                         {f.fixes[1].text, "the trace shows graph replay already in place"},
                         {f.fixes[2].text, "the trace shows graph replay already in place"},
                         {f.fixes[3].text, "the trace shows a fused optimizer already in place"}});
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

// FP4 running (an e2m1 / MXFP4 kernel) makes an FP8 step a step back; a Python frame that merely
// names the format ("_can_support_mxfp4") is not evidence of it.
TEST(WorkDone, Fp4AlreadyInUseLeavesFp8Out) {
  const TraceModel frames_only = load_trace_text(test::trace({
      test::span("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000),
      test::span("python_function", "vllm/quantization/utils/mxfp4_utils.py(82): _can_support_mxfp4", 1, 1, 10, 5),
  }));
  EXPECT_FALSE(work_done(analyze_trace(frames_only, {})).fp4);
  const TraceModel m = load_trace_text(test::trace({
      test::span("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000),
      test::span("cpu_op", "vllm::moe_forward", 1, 1, 10, 100),
      test::span("kernel", "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_sm100f", 0, 7, 20, 80),
  }));
  const WorkDone done = work_done(analyze_trace(m, {}));
  EXPECT_TRUE(done.fp4);
  EXPECT_EQ(done.fp4_by, "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_sm100f");
  EXPECT_NE(done.what().find("FP4"), std::string::npos);
  Finding f;
  f.id = "matmul-dominated";
  f.fixes = {"FP8 on Hopper and later with Transformer Engine: `import transformer_engine.pytorch as te`",
             "Autotune GEMM kernels: `torch.compile(model, mode=\"max-autotune\")`"};
  std::vector<Finding> fs = {f};
  WorkDone fp4_only;
  fp4_only.fp4 = true;
  fp4_only.fp4_by = done.fp4_by;
  fit_fixes_to_work_done(fs, fp4_only);
  ASSERT_EQ(fs[0].fixes.size(), 1u);
  expect_left_out(fs[0],
                  {{f.fixes[0].text, "the trace shows FP4 already in use (" + done.fp4_by + "): FP8 would widen it"}});
}

// A channels-last fix is left out where the convolutions already take channels-last inputs, and
// says why it is kept where they are NCHW.
TEST(WorkDone, ChannelsLastAlreadyInUse) {
  const std::string args =
      R"("Input Dims": [[8, 64, 56, 56], [64, 64, 3, 3]], "Input Strides": [[200704, 1, 3584, 64], [576, 9, 3, 1]],
         "Input type": ["float", "float"])";
  const TraceModel m = load_trace_text(test::trace({test::span("user_annotation", "ProfilerStep#1", 1, 1, 0, 100),
                                                    test::span("cpu_op", "aten::conv2d", 1, 1, 10, 20, args)}));
  const WorkDone done = work_done(analyze_trace(m, {}));
  EXPECT_TRUE(done.channels_last);
  EXPECT_NE(done.what().find("channels-last"), std::string::npos);
  Finding f;
  f.id = "no-tensor-cores";
  f.fixes = {"Convolution networks: channels-last memory format: `model = model.to(memory_format=torch.channels_last)`",
             "Run it in bf16"};
  std::vector<Finding> fs = {f};
  fit_fixes_to_work_done(fs, done);
  ASSERT_EQ(fs[0].fixes.size(), 1u);
  expect_left_out(fs[0], {{f.fixes[0].text,
                           "the model already runs channels-last: 1 of 1 convolution calls take channels-last inputs "
                           "(aten::conv2d input [8, 64, 56, 56], strides [200704, 1, 3584, 64])"}});
  WorkDone nchw;
  nchw.layout_by = "1 of 1 convolution calls take NCHW inputs (...)";
  fs = {f};
  fit_fixes_to_work_done(fs, nchw);
  ASSERT_EQ(fs[0].fixes.size(), 2u);
  EXPECT_EQ(fs[0].fixes[0].because, std::vector<std::string>{nchw.layout_by});
}

// Matrix work already in bf16 is not asked to autocast to bf16 again (FP8, a further step, stays).
TEST(WorkDone, ReducedPrecisionAlreadyInUse) {
  TraceAnalysis a;
  RooflineGroup bf16;
  bf16.kind = OpKind::kGemm;
  bf16.dtype = Dtype::kBf16;
  bf16.kernel_ns = 900;
  RooflineGroup fp32 = bf16;
  fp32.dtype = Dtype::kFp32;
  fp32.kernel_ns = 100;
  RooflineGroup copy = bf16;  // not matrix work: does not count
  copy.kind = OpKind::kElementwise;
  copy.dtype = Dtype::kFp32;
  copy.kernel_ns = 5000;
  a.roofline.groups = {bf16, fp32, copy};
  const WorkDone done = work_done(a);
  EXPECT_TRUE(done.reduced_precision);
  EXPECT_EQ(done.reduced_precision_by,
            "90% of the GEMM, convolution and attention GPU time runs in reduced precision (bf16, fp16, fp8 or "
            "narrower)");
  Finding f;
  f.id = "memory-near-capacity";
  f.fixes = {"bf16 activations and weights: `with torch.autocast(\"cuda\", dtype=torch.bfloat16):`",
             "FP8 on Hopper and later with Transformer Engine: `import transformer_engine.pytorch as te`"};
  std::vector<Finding> fs = {f};
  fit_fixes_to_work_done(fs, done);
  ASSERT_EQ(fs[0].fixes.size(), 1u);
  EXPECT_TRUE(contains(fs[0].fixes[0].text, "FP8"));
  expect_left_out(fs[0], {{f.fixes[0].text, "the trace shows it done: " + done.reduced_precision_by}});
  // Half of it in fp32: not done.
  a.roofline.groups[1].kernel_ns = 900;
  EXPECT_FALSE(work_done(a).reduced_precision);
}

// Memory fixes for the workload: no activation checkpointing or gradient accumulation on
// inference, and the serving engine's memory fraction only where an engine serves.
TEST(WorkloadFixes, MemoryFixesFitTheWorkload) {
  Finding f;
  f.id = "memory-near-capacity";
  f.fixes = {"Activation checkpointing: `from torch.utils.checkpoint import checkpoint; y = checkpoint(block, x)`",
             "Serving engine with a preallocated KV cache: e.g. vLLM `--gpu-memory-utilization 0.85`"};
  std::vector<Finding> inference = {f};
  fit_fixes_to_workload(inference, Workload::kInference);
  EXPECT_TRUE(inference[0].fixes.empty());
  ASSERT_EQ(inference[0].fixes_left_out.size(), 2u);
  EXPECT_EQ(inference[0].fixes_left_out[1].because, "it applies to a serving engine, and this window runs inference");
  std::vector<Finding> serving = {f};
  fit_fixes_to_workload(serving, Workload::kServing);
  ASSERT_EQ(serving[0].fixes.size(), 1u);
  EXPECT_TRUE(contains(serving[0].fixes[0].text, "--gpu-memory-utilization"));
  std::vector<Finding> training = {f};
  fit_fixes_to_workload(training, Workload::kTraining);
  ASSERT_EQ(training[0].fixes.size(), 1u);
  EXPECT_TRUE(contains(training[0].fixes[0].text, "checkpoint("));
}

// A real V100 trace: no finding offers bf16 (without fp16), TF32 or FP8.
TEST(DeviceFixesCorpus, VoltaTraceOffersNoFixItCannotRun) {
  FERRET_REQUIRE_CORPUS(path, "resnet-ddp-v100-2024-ns.pt.trace.json.gz");
  const TraceModel m = load_trace(path);
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  for (const Finding& f : d.findings)
    for (const std::string& fix : fix_texts(f)) {
      const bool bf16_only =
          (contains(fix, "bf16") || contains(fix, "bfloat16")) && !contains(fix, "fp16") && !contains(fix, "float16");
      EXPECT_FALSE(bf16_only) << f.id << ": " << fix;
      EXPECT_FALSE(contains(fix, "TF32") || contains(fix, "allow_tf32")) << f.id << ": " << fix;
      EXPECT_FALSE(contains(fix, "FP8") || contains(fix, "transformer_engine")) << f.id << ": " << fix;
    }
}

// The JSON's fixes_left_out and the detail's sentence are one list: on corpus traces where
// findings fold into others (an H100 inference server, a B200 rank, a deep-queue recommender), each
// finding's detail counts exactly its fixes_left_out, and none of them is also offered.
TEST(FixesLeftOutCorpus, JsonListAndDetailAgree) {
  int seen = 0, with_left_out = 0;
  for (const char* name : {"h100-image-classifier-inference.json.gz", "b200-eager-rank0of8.json.gz",
                           "a100-recsys-rank0-deep-queue.json.gz", "resnet-ddp-v100-2024-ns.pt.trace.json.gz"}) {
    const std::string path = test::corpus_path(name);
    if (path.empty()) {
      std::fprintf(stderr, "SKIPPED (corpus trace %s absent)\n", name);
      continue;
    }
    ++seen;
    const test::CommandResult r = test::run_ferret("analyze --json " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json doc = nlohmann::json::parse(r.out);
    for (const nlohmann::json& f : doc["traces"][0]["findings"]) {
      const std::string detail = f["detail"];
      std::size_t counted = 0;
      const std::regex sentence("(\\d+) fix(es)? left out");
      for (auto it = std::sregex_iterator(detail.begin(), detail.end(), sentence); it != std::sregex_iterator(); ++it)
        counted += std::stoul((*it)[1]);
      EXPECT_EQ(counted, f["fixes_left_out"].size()) << name << " " << f["id"];
      for (const nlohmann::json& l : f["fixes_left_out"]) {
        EXPECT_FALSE(l["because"].get<std::string>().empty());
        for (const nlohmann::json& fix : f["fixes"]) EXPECT_NE(fix, l["fix"]) << name << " " << f["id"];
      }
      if (!f["fixes_left_out"].empty()) ++with_left_out;
    }
  }
  if (seen == 0) GTEST_SKIP() << "corpus absent";
  EXPECT_GE(with_left_out, 1);
}

// FP8 already running (a kernel of e4m3 type, aten::_scaled_mm, an engine's FP8 quantization op) is
// not asked for again; on a serving engine that does not run it yet, the FP8 step is the engine's
// own option, not Transformer Engine's layers.
TEST(WorkDone, Fp8AlreadyInUseAndFp8ForServingEngines) {
  const TraceModel m = load_trace_text(
      test::trace({test::span("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000),
                   test::span("cpu_op", "aten::_scaled_mm", 1, 1, 10, 100),
                   test::span("kernel", "sm90_xmma_gemm_e4m3f32_e4m3f32_f32_tn_n_tilesize128x128x64", 0, 7, 20, 80)}));
  const TraceAnalysis a = analyze_trace(m, {});
  const WorkDone done = work_done(a);
  EXPECT_TRUE(done.fp8);
  EXPECT_TRUE(done.fp8_by == "aten::_scaled_mm" || contains(done.fp8_by, "e4m3")) << done.fp8_by;
  Finding f;
  f.id = "matmul-dominated";
  f.fixes = {"FP8 on Hopper and later with Transformer Engine: `import transformer_engine.pytorch as te`",
             "Autotune GEMM kernels: `torch.compile(model, mode=\"max-autotune\")`"};
  std::vector<Finding> fp8 = {f};
  WorkDone fp8_done;
  fp8_done.fp8 = true;
  fp8_done.fp8_by = "aten::_scaled_mm";
  fit_fixes_to_work_done(fp8, fp8_done);
  ASSERT_EQ(fp8[0].fixes.size(), 1u);
  expect_left_out(fp8[0], {{f.fixes[0].text, "the trace shows FP8 already in use (aten::_scaled_mm)"}});
  std::vector<Finding> serving = {f};
  fit_fixes_to_workload(serving, Workload::kServing, "vLLM by name");
  ASSERT_EQ(serving[0].fixes.size(), 2u);
  EXPECT_TRUE(contains(serving[0].fixes[0].text, "--quantization fp8")) << serving[0].fixes[0].text;
  EXPECT_EQ(serving[0].fixes[0].because, std::vector<std::string>{"the trace runs serving (vLLM by name)"});
  expect_left_out(serving[0], {{f.fixes[0].text, "a serving engine quantizes by its own options"}});
}

// NVIDIA's decoders are NVIDIA's: on ROCm (and MTIA) the GPU-decoding fix goes, with why, and
// decoding in the workers takes its place once; on CUDA nothing changes.
TEST(PlatformFixes, NoNvidiaDecodersOnRocm) {
  Finding f;
  f.id = "input-bound";
  f.fixes = {"Load batches in worker processes: `DataLoader(ds, num_workers=8)`",
             "Make each sample cheaper: decode and augment on the GPU (NVIDIA DALI, `torchvision.io.decode_jpeg(data, "
             "device=\"cuda\")`) or store samples pre-decoded and pre-resized"};
  std::vector<Finding> rocm = {f};
  fit_fixes_to_platform(rocm, Platform::kRocm);
  ASSERT_EQ(rocm[0].fixes.size(), 2u);
  EXPECT_EQ(rocm[0].fixes[0].text, f.fixes[0].text);
  EXPECT_TRUE(contains(rocm[0].fixes[1].text, "libjpeg-turbo")) << rocm[0].fixes[1].text;
  EXPECT_EQ(rocm[0].fixes[1].because, std::vector<std::string>{"NVIDIA's GPU decoders do not run on ROCm"});
  expect_left_out(rocm[0], {{f.fixes[1].text, "NVIDIA's decoders (DALI, nvJPEG, NVDEC) do not run on ROCm"}});
  std::vector<Finding> cuda = {f};
  fit_fixes_to_platform(cuda, Platform::kCuda);
  EXPECT_EQ(cuda[0].fixes, f.fixes);
  EXPECT_TRUE(cuda[0].fixes_left_out.empty());
}

// Every fix says why it fits, in JSON and in Markdown alike: the JSON's applies_because holds one
// line per fix that leads with its finding's title, and the fix's own facts after it are what the
// Markdown prints after the fix, "(because ...)". A fix naming bf16 or FP8 on a GPU trace says the
// device runs it, in the device's words (Tensor Cores on NVIDIA, Matrix Cores on AMD). On the
// repository's samples (always there) and the corpus traces of both vendors (when present).
TEST(AppliesBecause, JsonAndMarkdownAgreeAndSpeakTheDevicesWords) {
  std::vector<std::pair<std::string, std::string>> traces;  // path, vendor
  for (const char* s : {"synthetic-input-bound.json.gz", "synthetic-launch-bound.json.gz",
                        "synthetic-communication-heavy.json.gz", "cpu-compute-bound.json.gz"})
    traces.emplace_back(std::string(FERRET_SOURCE_DIR) + "/examples/traces/" + s, "NVIDIA");
  for (const char* name : {"mi300-resnet-actckpt-rank0of8.json.gz", "b200-eager-rank0of8.json.gz",
                           "resnet-ddp-v100-2024-ns.pt.trace.json.gz", "cnn-ddp-a100-rank0of2-nccl.json.gz"}) {
    const std::string path = test::corpus_path(name);
    if (path.empty()) {
      std::fprintf(stderr, "SKIPPED (corpus trace %s absent)\n", name);
      continue;
    }
    traces.emplace_back(path, std::string(name).starts_with("mi300") ? "AMD" : "NVIDIA");
  }
  std::size_t own_facts = 0, device_facts = 0;
  for (const auto& [path, vendor] : traces) {
    SCOPED_TRACE(path);
    const test::CommandResult json = test::run_ferret("analyze --json " + path);
    const test::CommandResult md = test::run_ferret("analyze --md " + path);
    ASSERT_EQ(json.exit_code, 0) << json.err;
    ASSERT_EQ(md.exit_code, 0) << md.err;
    const nlohmann::json doc = nlohmann::json::parse(json.out);
    for (const nlohmann::json& f : doc["traces"][0]["findings"]) {
      const std::string title = f["title"];
      ASSERT_EQ(f["applies_because"].size(), f["fixes"].size()) << f["id"];
      for (std::size_t i = 0; i < f["fixes"].size(); ++i) {
        const std::string fix = f["fixes"][i], why = f["applies_because"][i];
        ASSERT_EQ(why.rfind(title, 0), 0u) << why;
        if (why.size() == title.size()) continue;
        ASSERT_EQ(why.compare(title.size(), 2, "; "), 0) << why;
        const std::string own = why.substr(title.size() + 2);
        ++own_facts;
        EXPECT_TRUE(contains(md.out, escape_markdown("(because " + own + ")", /*in_table=*/false))) << own;
        const bool names_bf16 = (contains(fix, "bf16") || contains(fix, "bfloat16")) && !contains(fix, "fp16");
        if (names_bf16 && vendor != "" && !contains(path, "cpu-")) {
          EXPECT_TRUE(contains(own, "runs bf16") || contains(own, "runs FP8")) << fix << " / " << own;
          ++device_facts;
        }
        EXPECT_FALSE(contains(own, vendor == "AMD" ? "Tensor Cores" : "Matrix Cores")) << own;
      }
    }
  }
  EXPECT_GT(own_facts, 0u);
  if (traces.size() > 4) {
    EXPECT_GT(device_facts, 0u);
  }
}

}  // namespace device_fixes_test
}  // namespace
}  // namespace ferret
