#include "analysis/device/device_peaks.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "base/input_error.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace device_peaks_test {

DeviceProperties device(const std::string& name, int major, int minor, int sms, std::int64_t mem = -1) {
  DeviceProperties d;
  d.id = 0;
  d.name = name;
  d.compute_major = major;
  d.compute_minor = minor;
  d.num_sms = sms;
  d.total_global_mem = mem;
  return d;
}

TEST(DevicePeaks, H100SxmFromTheDatasheet) {
  const DevicePeaks p = device_peaks(device("NVIDIA H100 80GB HBM3", 9, 0, 132, 85'018'279'936), nullptr);
  EXPECT_EQ(p.model, "H100 SXM5");
  EXPECT_DOUBLE_EQ(*p.matrix(Dtype::kBf16), 989.5);
  EXPECT_DOUBLE_EQ(*p.matrix(Dtype::kTf32), 494.5);
  EXPECT_DOUBLE_EQ(*p.matrix(Dtype::kFp8), 1979);
  EXPECT_DOUBLE_EQ(*p.vector(Dtype::kFp32), 67);
  EXPECT_DOUBLE_EQ(*p.hbm_tb_per_s, 3.35);
  EXPECT_FALSE(p.matrix(Dtype::kFp32).has_value());  // FP32 has no matrix figure: unknown, not borrowed
  EXPECT_FALSE(p.vector(Dtype::kBf16).has_value());
  EXPECT_NE(p.source.find("nvidia"), std::string::npos);
}

TEST(DevicePeaks, OtherParts) {
  const DevicePeaks mi300 = device_peaks(device("AMD Instinct MI300X", 9, 4, 304, 206'141'652'992), nullptr);
  EXPECT_EQ(mi300.model, "MI300X");
  EXPECT_DOUBLE_EQ(*mi300.matrix(Dtype::kBf16), 1307.4);
  EXPECT_DOUBLE_EQ(*mi300.vector(Dtype::kFp64), 81.7);
  EXPECT_DOUBLE_EQ(*mi300.hbm_tb_per_s, 5.3);
  const DevicePeaks a100 = device_peaks(device("NVIDIA A100-SXM4-80GB", 8, 0, 108, 85'100'000'000), nullptr);
  EXPECT_EQ(a100.model, "A100 SXM 80GB");
  EXPECT_DOUBLE_EQ(*a100.matrix(Dtype::kInt8), 624);
  EXPECT_DOUBLE_EQ(*a100.hbm_tb_per_s, 2.039);
  const DevicePeaks nvl = device_peaks(device("NVIDIA H100 NVL", 9, 0, 132), nullptr);
  EXPECT_EQ(nvl.model, "H100 NVL");
  EXPECT_DOUBLE_EQ(*nvl.matrix(Dtype::kBf16), 835);
  EXPECT_FALSE(nvl.vector(Dtype::kFp32).has_value());  // blank in the table: unknown
  const DevicePeaks v100 = device_peaks(device("Tesla V100-SXM2-32GB", 7, 0, 80), nullptr);
  EXPECT_DOUBLE_EQ(*v100.matrix(Dtype::kFp16), 125);
  EXPECT_FALSE(v100.matrix(Dtype::kBf16).has_value());  // V100 has no BF16
  // Parts the corpus lacks, identified from properties alone: a GH200's GPU (an H100's compute, its
  // own memory) and the MI300A (the MI300X's per-CU figures at 228 CUs: 1307.4 x 228 / 304).
  const DevicePeaks gh = device_peaks(device("NVIDIA GH200 480GB", 9, 0, 132, 102'005'473'280), nullptr);
  EXPECT_EQ(gh.model, "GH200 96GB");
  EXPECT_DOUBLE_EQ(*gh.matrix(Dtype::kBf16), 989.5);
  EXPECT_DOUBLE_EQ(*gh.matrix(Dtype::kFp8), 1979);
  EXPECT_DOUBLE_EQ(*gh.hbm_tb_per_s, 4.0);
  const DevicePeaks apu = device_peaks(device("AMD Instinct MI300A", 9, 4, 228, 137'438'953'472), nullptr);
  EXPECT_EQ(apu.model, "MI300A");
  EXPECT_NEAR(*apu.matrix(Dtype::kBf16), 1307.4 * 228 / 304, 0.1);
  EXPECT_NEAR(*apu.matrix(Dtype::kFp8), 2614.9 * 228 / 304, 0.1);
  EXPECT_NEAR(*apu.vector(Dtype::kFp64), 81.7 * 228 / 304, 0.1);
  EXPECT_DOUBLE_EQ(*apu.hbm_tb_per_s, 5.3);
  // CDNA 4 by its per-CU rates: 256 CUs x 2.4 GHz x 8,192 FP8 FLOP per clock (4,096 bf16, 256
  // fp32 and 128 fp64 vector); the MI350X the same at 2.2 GHz. CDNA 4 has no TF32.
  const DevicePeaks mi355 = device_peaks(device("AMD Instinct MI355X", 9, 5, 256, 309'237'645'312), nullptr);
  EXPECT_EQ(mi355.model, "MI355X");
  EXPECT_NEAR(*mi355.matrix(Dtype::kFp8), 256 * 2.4 * 8192 / 1e3, 0.1);
  EXPECT_NEAR(*mi355.matrix(Dtype::kBf16), 256 * 2.4 * 4096 / 1e3, 0.1);
  EXPECT_NEAR(*mi355.vector(Dtype::kFp32), 256 * 2.4 * 256 / 1e3, 0.1);
  EXPECT_NEAR(*mi355.vector(Dtype::kFp64), 256 * 2.4 * 128 / 1e3, 0.1);
  EXPECT_FALSE(mi355.matrix(Dtype::kTf32).has_value());
  const DevicePeaks mi350 = device_peaks(device("AMD Instinct MI350X", 9, 5, 256), nullptr);
  EXPECT_NEAR(*mi350.matrix(Dtype::kFp8), 256 * 2.2 * 8192 / 1e3, 0.1);
  // B300: HGX B300's 8-GPU dense figures / 8 (bf16 18 PFLOP/s, FP8 36, FP64 10 TFLOP/s).
  const DevicePeaks b300 = device_peaks(device("NVIDIA B300 SXM6 AC", 10, 3, 148, 287'000'000'000), nullptr);
  EXPECT_EQ(b300.model, "B300");
  EXPECT_DOUBLE_EQ(*b300.matrix(Dtype::kBf16), 18000.0 / 8);
  EXPECT_DOUBLE_EQ(*b300.matrix(Dtype::kFp8), 36000.0 / 8);
  EXPECT_DOUBLE_EQ(*b300.matrix(Dtype::kFp64), 10.0 / 8);
  EXPECT_DOUBLE_EQ(*b300.hbm_tb_per_s, 8.0);
}

TEST(DevicePeaks, Fp6AndFp4WhereTheDeviceHasMatrixUnitsForThem) {
  // Blackwell runs fp6 at its fp8 rate and fp4 at twice it: DGX B200 per GPU 72 / 8 / 2 = 4.5 PFLOP/s
  // fp8 and fp6, 144 / 8 / 2 = 9 fp4 (dense: half the "with sparsity" figures); GB200 NVL72 per GPU
  // 720 / 72 / 2 = 5 and 1,440 / 72 / 2 = 10; HGX B300 fp4 108 / 8 = 13.5 dense.
  const DevicePeaks b200 = device_peaks(device("NVIDIA B200", 10, 0, 148, 191'000'000'000), nullptr);
  EXPECT_DOUBLE_EQ(*b200.matrix(Dtype::kFp6), 72000.0 / 8 / 2);
  EXPECT_DOUBLE_EQ(*b200.matrix(Dtype::kFp4), 144000.0 / 8 / 2);
  const DevicePeaks gb200 = device_peaks(device("NVIDIA GB200", 10, 0, 152, 197'000'000'000), nullptr);
  EXPECT_DOUBLE_EQ(*gb200.matrix(Dtype::kFp6), 720000.0 / 72 / 2);
  EXPECT_DOUBLE_EQ(*gb200.matrix(Dtype::kFp4), 1440000.0 / 72 / 2);
  const DevicePeaks b300 = device_peaks(device("NVIDIA B300 SXM6 AC", 10, 3, 148, 287'000'000'000), nullptr);
  EXPECT_DOUBLE_EQ(*b300.matrix(Dtype::kFp4), 108000.0 / 8);
  // CDNA 4 runs fp6 and fp4 alike: 256 CUs x 2.4 GHz x 16,384 FLOP per clock (2.2 GHz on the MI350X).
  const DevicePeaks mi355 = device_peaks(device("AMD Instinct MI355X", 9, 5, 256, 309'237'645'312), nullptr);
  EXPECT_NEAR(*mi355.matrix(Dtype::kFp4), 256 * 2.4 * 16384 / 1e3, 0.1);
  EXPECT_NEAR(*mi355.matrix(Dtype::kFp6), 256 * 2.4 * 16384 / 1e3, 0.1);
  const DevicePeaks mi350 = device_peaks(device("AMD Instinct MI350X", 9, 5, 256), nullptr);
  EXPECT_NEAR(*mi350.matrix(Dtype::kFp4), 256 * 2.2 * 16384 / 1e3, 0.1);
  // Hopper and CDNA 3 have no fp6/fp4 units: blank, not borrowed.
  const DevicePeaks h100 = device_peaks(device("NVIDIA H100 80GB HBM3", 9, 0, 132, 85'018'279'936), nullptr);
  EXPECT_FALSE(h100.matrix(Dtype::kFp4).has_value());
  EXPECT_FALSE(h100.matrix(Dtype::kFp6).has_value());
  const DevicePeaks mi300 = device_peaks(device("AMD Instinct MI300X", 9, 4, 304, 206'141'652'992), nullptr);
  EXPECT_FALSE(mi300.matrix(Dtype::kFp4).has_value());
  // A measured fp4 ceiling from --peaks.
  const PeakOverrides file = parse_peaks_json(R"({"matrix_tflop_per_s": {"fp4": 7000, "fp6": 3000}})", "m.json");
  const DevicePeaks measured = device_peaks(device("NVIDIA B200", 10, 0, 148, 191'000'000'000), &file);
  EXPECT_DOUBLE_EQ(*measured.matrix(Dtype::kFp4), 7000);
  EXPECT_DOUBLE_EQ(*measured.matrix(Dtype::kFp6), 3000);
  EXPECT_STREQ(dtype_name(Dtype::kFp4), "fp4");
  EXPECT_EQ(dtype_from_name("fp6"), Dtype::kFp6);
}

TEST(DevicePeaks, UnknownDeviceHasNoCeilings) {
  const DevicePeaks p = device_peaks(device("NVIDIA GeForce RTX 4090", 8, 9, 128), nullptr);
  EXPECT_TRUE(p.model.empty());
  EXPECT_FALSE(p.hbm_tb_per_s.has_value());
  for (std::size_t i = 0; i < kDtypeCount; ++i) {
    EXPECT_FALSE(p.matrix_tflops[i].has_value());
    EXPECT_FALSE(p.vector_tflops[i].has_value());
  }
  EXPECT_FALSE(p.note.empty());
}

TEST(DevicePeaks, FewerSmsScaleComputeAndLeaveBandwidthUnknown) {
  // An H100 SXM5 showing 66 of its 132 SMs (a partition): compute x 0.5, bandwidth unknown.
  const DevicePeaks p = device_peaks(device("NVIDIA H100 80GB HBM3", 9, 0, 66), nullptr);
  EXPECT_EQ(p.model, "H100 SXM5");
  EXPECT_DOUBLE_EQ(p.sm_scale, 0.5);
  EXPECT_DOUBLE_EQ(*p.matrix(Dtype::kBf16), 494.75);
  EXPECT_FALSE(p.hbm_tb_per_s.has_value());
  EXPECT_NE(p.note.find("scaled"), std::string::npos);
  // A different compute capability is not the same part: nothing scaled, all unknown.
  EXPECT_TRUE(device_peaks(device("NVIDIA H100 80GB HBM3", 8, 0, 66), nullptr).model.empty());
}

TEST(DevicePeaks, PeaksFileOverridesCells) {
  const PeakOverrides o = parse_peaks_json(
      R"({"device": "NVIDIA H100 80GB HBM3", "hbm_tb_per_s": 2.9, "matrix_tflop_per_s": {"bf16": 700},
          "vector_tflop_per_s": {"fp32": 50}})",
      "h100.json");
  const DevicePeaks p = device_peaks(device("NVIDIA H100 80GB HBM3", 9, 0, 132), &o);
  EXPECT_DOUBLE_EQ(*p.matrix(Dtype::kBf16), 700);
  EXPECT_TRUE(p.matrix_from_file[static_cast<std::size_t>(Dtype::kBf16)]);
  EXPECT_DOUBLE_EQ(*p.matrix(Dtype::kFp8), 1979);  // not in the file: the datasheet's
  EXPECT_FALSE(p.matrix_from_file[static_cast<std::size_t>(Dtype::kFp8)]);
  EXPECT_DOUBLE_EQ(*p.vector(Dtype::kFp32), 50);
  EXPECT_DOUBLE_EQ(*p.hbm_tb_per_s, 2.9);
  EXPECT_TRUE(p.hbm_from_file);
  EXPECT_EQ(p.peaks_file, "h100.json");
  // An unknown device gets the file's figures only.
  const DevicePeaks u = device_peaks(device("Mystery GPU", 1, 0, 10), &o);
  EXPECT_DOUBLE_EQ(*u.matrix(Dtype::kBf16), 700);
  EXPECT_FALSE(u.matrix(Dtype::kFp8).has_value());
  EXPECT_NE(u.note.find("measured on"), std::string::npos);
}

void expect_error(const std::string& text, const std::string& needle) {
  try {
    parse_peaks_json(text, "peaks.json");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("peaks.json"), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
  }
}

TEST(DevicePeaks, PeaksFileErrorsNameTheFileAndTheKey) {
  expect_error("{", "not valid JSON");
  expect_error("[1]", "object");
  expect_error(R"({"hbm": 3})", "\"hbm\"");
  expect_error(R"({"hbm_tb_per_s": -1})", "hbm_tb_per_s");
  expect_error(R"({"hbm_tb_per_s": "3"})", "hbm_tb_per_s");
  expect_error(R"({"matrix_tflop_per_s": {"bf17": 3}})", "matrix_tflop_per_s.bf17");
  expect_error(R"({"vector_tflop_per_s": {"fp32": 0}})", "vector_tflop_per_s.fp32");
  expect_error(R"({"matrix_tflop_per_s": 5})", "matrix_tflop_per_s");
  expect_error(R"({"device": 5})", "device");
  EXPECT_THROW(read_peaks_file(test::temp_path("no-such-peaks.json")), InputError);
}

// Every device family of the corpus, as its raw deviceProperties name it: the device that ran the
// kernels is identified and its ceilings found, or the reason they are not is given. The sglang
// rank's kernels run on device 9 with only device 0 listed; ROCm 6.2 names the MI250 "AMD Radeon
// Graphics" (CC 9.0, 104 CUs, 64 GiB); the vLLM MI300X trace's names are empty.
TEST(DevicePeaksCorpus, EveryFamilyIdentifiedOrSaidWhyNot) {
  struct Case {
    const char* trace;
    const char* model;  // "" for none
    const char* clue;   // in identified_by
  };
  const std::vector<Case> cases = {
      {"resnet-ddp-v100-2024-ns.pt.trace.json.gz", "V100 SXM2", "by name"},
      {"a100-rank3of8-2022.json.gz", "A100 SXM 40GB", "(properties of device 3)"},
      {"h100-image-classifier-inference.json.gz", "H100 SXM5", "by name"},
      {"b200-eager-rank0of8.json.gz", "B200", "by name"},
      {"mi250-rocm62-toy.json.gz", "MI210 / MI250 (per GCD)", "the generic name \"AMD Radeon Graphics\""},
      {"mi300-sglang-prefill-edge-wait.json.gz", "MI300X",
       "properties of device 0, the one model listed, for device 9"},
      {"mi300-vllm-decode-graph-capture.pt.trace.json.gz", "MI300X", "an empty name"},
      {"mtia-inference-backlog.json.gz", "", "\"ARTEMIS\" is not in the GPU table"},
  };
  int seen = 0;
  for (const Case& c : cases) {
    const std::string path = test::corpus_path(c.trace);
    if (path.empty()) {
      std::fprintf(stderr, "SKIPPED (corpus trace %s absent)\n", c.trace);
      continue;
    }
    ++seen;
    SCOPED_TRACE(c.trace);
    const TraceModel m = load_trace(path);
    const TraceAnalysis a = analyze_trace(m, {});
    ASSERT_FALSE(a.gpu_metrics.devices.empty());
    const std::string& how = a.gpu_metrics.devices.front().identified_by;
    EXPECT_NE(how.find(c.clue), std::string::npos) << how;
    EXPECT_EQ(a.roofline.peaks.model, c.model);
    if (*c.model != '\0') {
      EXPECT_EQ(how.rfind(c.model, 0), 0u) << how;
      EXPECT_TRUE(a.roofline.peaks.hbm_tb_per_s.has_value());
      EXPECT_TRUE(a.roofline.peaks.matrix(Dtype::kBf16).has_value() ||
                  a.roofline.peaks.matrix(Dtype::kFp16).has_value());
    } else {
      EXPECT_EQ(how.rfind("not identified", 0), 0u) << how;
      EXPECT_FALSE(a.roofline.peaks.note.empty());
    }
  }
  if (seen == 0) GTEST_SKIP() << "corpus absent";
}

}  // namespace device_peaks_test
}  // namespace
}  // namespace ferret
