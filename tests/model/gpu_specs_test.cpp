#include "model/gpu_specs.h"

#include <gtest/gtest.h>

namespace ferret {
namespace {
namespace gpu_specs_test {

DeviceProperties device(std::string name, int major, int minor, int sms, std::int64_t memory = -1) {
  DeviceProperties d;
  d.id = 0;
  d.name = std::move(name);
  d.compute_major = major;
  d.compute_minor = minor;
  d.num_sms = sms;
  d.total_global_mem = memory;
  return d;
}

std::string model_of(const DeviceProperties& d) {
  const GpuMatch m = match_gpu(d);
  return m.spec ? std::string(m.spec->model) : std::string("none");
}

// Device names and properties as real traces write them (the vendor datasheets, "Recognising the device";
// the corpus's deviceProperties for the A100-PG509, H100, V100, B200 and MI300X entries).
TEST(GpuSpecs, MatchesNamesSeenInRealTraces) {
  EXPECT_EQ(model_of(device("NVIDIA H100 80GB HBM3", 9, 0, 132, 85018279936)), "H100 SXM5");
  EXPECT_EQ(model_of(device("NVIDIA H100 PCIe", 9, 0, 114)), "H100 PCIe");
  EXPECT_EQ(model_of(device("NVIDIA H100 NVL", 9, 0, 132)), "H100 NVL");  // SM count unknown in the table
  EXPECT_EQ(model_of(device("NVIDIA H200", 9, 0, 132)), "H200 SXM");
  EXPECT_EQ(model_of(device("NVIDIA A100-PG509-200", 8, 0, 108, 42297524224)), "A100 SXM 40GB");
  EXPECT_EQ(model_of(device("NVIDIA A100-SXM4-80GB", 8, 0, 108, 85899345920)), "A100 SXM 80GB");
  EXPECT_EQ(model_of(device("NVIDIA A100 80GB PCIe", 8, 0, 108, 85899345920)), "A100 PCIe 80GB");
  EXPECT_EQ(model_of(device("Tesla V100-SXM2-32GB", 7, 0, 80, 34079637504)), "V100 SXM2");
  EXPECT_EQ(model_of(device("Tesla V100-DGXS-32GB", 7, 0, 80, 34084028416)), "V100 SXM2");
  EXPECT_EQ(model_of(device("NVIDIA B200", 10, 0, 148, 191503138816)), "B200");
  EXPECT_EQ(model_of(device("NVIDIA GB200", 10, 0, 152)), "GB200");
  EXPECT_EQ(model_of(device("NVIDIA L4", 8, 9, 58)), "L4");
  EXPECT_EQ(model_of(device("NVIDIA L40S", 8, 9, 142)), "L40S");
  EXPECT_EQ(model_of(device("NVIDIA A10", 8, 6, 72)), "A10");
  EXPECT_EQ(model_of(device("AMD Instinct MI300X", 9, 4, 304, 206141652992)), "MI300X");
  EXPECT_EQ(model_of(device("AMD Instinct MI300X VF", 9, 4, 304)), "MI300X");
  EXPECT_EQ(model_of(device("AMD Instinct MI325X", 9, 4, 304)), "MI325X");
  // Devices the corpus lacks, by the names and properties their drivers report: the GH200's two
  // memory sizes (96 GB HBM3: 4.0 TB/s; 144 GB HBM3e: 4.9 TB/s), told apart by memory; the MI300A.
  const GpuMatch gh96 = match_gpu(device("NVIDIA GH200 480GB", 9, 0, 132, 102005473280));
  ASSERT_NE(gh96.spec, nullptr);
  EXPECT_EQ(gh96.spec->model, "GH200 96GB");
  EXPECT_EQ(gh96.spec->hbm_tbps, 4.0);
  const GpuMatch gh144 = match_gpu(device("NVIDIA GH200 144G HBM3e", 9, 0, 132, 152250000000));
  ASSERT_NE(gh144.spec, nullptr);
  EXPECT_EQ(gh144.spec->model, "GH200 144GB");
  EXPECT_EQ(gh144.spec->hbm_tbps, 4.9);
  EXPECT_EQ(model_of(device("AMD Instinct MI300A", 9, 4, 228, 137438953472)), "MI300A");
  // CDNA 4 (gfx950, CC 9.5, 256 CUs, 288 GB) and Blackwell Ultra (CC 10.3), the GB300 left out.
  EXPECT_EQ(model_of(device("AMD Instinct MI355X", 9, 5, 256, 309'237'645'312)), "MI355X");
  EXPECT_EQ(model_of(device("AMD Instinct MI350X", 9, 5, 256)), "MI350X");
  EXPECT_EQ(model_of(device("NVIDIA B300 SXM6 AC", 10, 3, 148, 287'000'000'000)), "B300");
  EXPECT_EQ(model_of(device("NVIDIA GB300", 10, 3, 152)), "none");
  EXPECT_EQ(model_of(device("NVIDIA B200", 10, 0, 148)), "B200");
  EXPECT_EQ(model_of(device("AMD Instinct MI250X/MI250", 9, 0, 110)), "MI250X (per GCD)");
  // An MI250 GCD (104 CUs) and an MI210 share one row; ROCm 6.2's generic name for an MI250 is
  // matched by its properties (CC 9.0, 104 CUs, 64 GB), as an empty name is.
  EXPECT_EQ(model_of(device("AMD Instinct MI250X/MI250", 9, 0, 104)), "MI210 / MI250 (per GCD)");
  EXPECT_EQ(model_of(device("AMD Instinct MI210", 9, 0, 104)), "MI210 / MI250 (per GCD)");
  EXPECT_EQ(model_of(device("AMD Radeon Graphics", 9, 0, 104, 68702699520)), "MI210 / MI250 (per GCD)");
}

TEST(GpuSpecs, UnknownDevicesGetNoFigures) {
  // Not in the vendor datasheets: the PCIe V100, the A10G, consumer parts (ROCm's generic name for
  // an RDNA3 card: CC 11.0, 48 CUs, matched by properties to no row).
  EXPECT_EQ(model_of(device("Tesla V100-PCIE-32GB", 7, 0, 80)), "none");
  EXPECT_EQ(model_of(device("NVIDIA A10G", 8, 6, 80)), "none");
  EXPECT_EQ(model_of(device("AMD Radeon Graphics", 11, 0, 48, 17163091968)), "none");
  EXPECT_EQ(model_of(device("NVIDIA GeForce RTX 4090", 8, 9, 128)), "none");
  // A name that says H100 with properties that do not: no figures, and the note says why.
  const GpuMatch m = match_gpu(device("NVIDIA H100 80GB HBM3", 8, 0, 108));
  EXPECT_EQ(m.spec, nullptr);
  EXPECT_NE(m.note.find("disagree"), std::string::npos);
}

TEST(GpuSpecs, EmptyNameMatchesByPropertiesOnlyWhenUnique) {
  // The MI300X vLLM trace in the corpus: empty name, CC 9.4, 304 CUs, 192 GiB.
  const GpuMatch m = match_gpu(device("", 9, 4, 304, 206141652992));
  ASSERT_NE(m.spec, nullptr);
  EXPECT_EQ(m.spec->model, "MI300X");
  EXPECT_TRUE(m.by_properties);
  // CC 9.0 with 132 SMs and 80 GB: H100 SXM5 only (H200 has 141 GB).
  EXPECT_EQ(model_of(device("", 9, 0, 132, 85018279936)), "H100 SXM5");
  // Without memory the two cannot be told apart.
  EXPECT_EQ(model_of(device("", 9, 0, 132)), "none");
}

TEST(GpuSpecs, A100SxmNeedsMemoryToTellVariantsApart) {
  const GpuMatch m = match_gpu(device("NVIDIA A100-SXM4", 8, 0, 108));
  EXPECT_EQ(m.spec, nullptr);
  EXPECT_NE(m.note.find("memory"), std::string::npos);
}

TEST(GpuSpecs, FiguresAreGpusMdsAndBlanksStayUnknown) {
  const GpuSpec* h100 = match_gpu(device("NVIDIA H100 80GB HBM3", 9, 0, 132, 85018279936)).spec;
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(*h100->bf16_tflops, 989.5);  // dense, not the 1979 "with sparsity"
  EXPECT_EQ(*h100->fp8_tflops, 1979);
  EXPECT_EQ(*h100->tf32_tflops, 494.5);
  EXPECT_EQ(*h100->fp32_tflops, 67);
  EXPECT_EQ(*h100->hbm_tbps, 3.35);
  EXPECT_EQ(*h100->host_link_gbps, 64);
  EXPECT_EQ(*h100->scale_up_gbps, 450);
  EXPECT_EQ(h100->scale_up_link, "NVLink4");

  const GpuSpec* v100 = match_gpu(device("Tesla V100-SXM2-32GB", 7, 0, 80)).spec;
  ASSERT_NE(v100, nullptr);
  EXPECT_EQ(*v100->fp16_tflops, 125);
  EXPECT_FALSE(v100->bf16_tflops.has_value());  // no BF16 on Volta
  EXPECT_FALSE(v100->tf32_tflops.has_value());
  EXPECT_EQ(*v100->host_link_gbps, 16);

  const GpuSpec* nvl = match_gpu(device("NVIDIA H100 NVL", 9, 0, 132)).spec;
  ASSERT_NE(nvl, nullptr);
  EXPECT_EQ(*nvl->bf16_tflops, 835);
  EXPECT_FALSE(nvl->fp32_tflops.has_value());  // blank in the vendor datasheets: never the SXM5's 67
  EXPECT_FALSE(nvl->host_link_gbps.has_value());
  EXPECT_FALSE(nvl->scale_up_gbps.has_value());
  EXPECT_EQ(nvl->sms, -1);

  const GpuSpec* gb200 = match_gpu(device("NVIDIA GB200", 10, 0, 152)).spec;
  ASSERT_NE(gb200, nullptr);
  EXPECT_FALSE(gb200->host_link_gbps.has_value());  // NVLink-C2C: no figure in the vendor datasheets
  const GpuSpec* mi325 = match_gpu(device("AMD Instinct MI325X", 9, 4, 304)).spec;
  ASSERT_NE(mi325, nullptr);
  EXPECT_FALSE(mi325->host_link_gbps.has_value());  // "PCIe5" with no width
  EXPECT_EQ(*mi325->scale_up_gbps, 448);            // "as MI300X"
}

// the vendor datasheets's ridge points (peak FLOP/s / bandwidth): H100 SXM BF16 ~295, H200 ~206, A100 80GB ~153,
// MI300X ~247. Checks the table's BF16 and HBM columns against each other.
TEST(GpuSpecs, RidgePointsMatchGpusMd) {
  auto ridge = [](const char* name, int major, int minor, int sms, std::int64_t memory) {
    const GpuSpec* s = match_gpu(device(name, major, minor, sms, memory)).spec;
    EXPECT_NE(s, nullptr) << name;
    return s ? *s->bf16_tflops / *s->hbm_tbps : 0.0;
  };
  EXPECT_NEAR(ridge("NVIDIA H100 80GB HBM3", 9, 0, 132, 85018279936), 295, 1);
  EXPECT_NEAR(ridge("NVIDIA H200", 9, 0, 132, 150754820096), 206, 1);
  EXPECT_NEAR(ridge("NVIDIA A100-SXM4-80GB", 8, 0, 108, 85899345920), 153, 1);
  EXPECT_NEAR(ridge("AMD Instinct MI300X", 9, 4, 304, 206141652992), 247, 1);
}

TEST(GpuSpecs, FindDeviceById) {
  TraceInfo info;
  info.devices.push_back(device("a", 9, 0, 132));
  info.devices.back().id = 3;
  EXPECT_EQ(find_device(info, 3), &info.devices[0]);
  // Device 0 is not listed, but every listed device is one model: its properties (ROCm lists
  // devices from 0 while a rank's kernels run on device 2 or 9).
  EXPECT_EQ(find_device(info, 0), &info.devices[0]);
  EXPECT_EQ(DeviceIndex(info).find(0), &info.devices[0]);
  // Two models listed: an unlisted device is not guessed.
  info.devices.push_back(device("b", 8, 0, 108));
  info.devices.back().id = 4;
  EXPECT_EQ(find_device(info, 0), nullptr);
  EXPECT_EQ(DeviceIndex(info).find(0), nullptr);
  EXPECT_EQ(DeviceIndex(info).find(4), &info.devices[1]);
}

// How each device was identified, said in words (JSON gpus[].identified_by).
TEST(GpuSpecs, IdentifiedBySaysWhichPropertiesAndWhichClue) {
  TraceInfo info;
  EXPECT_EQ(identified_by(info, 0), "not identified: the trace lists no device properties");
  info.devices.push_back(device("AMD Instinct MI300X", 9, 4, 304, 206141652992));
  info.devices.back().id = 0;
  EXPECT_EQ(identified_by(info, 0), "MI300X by name \"AMD Instinct MI300X\" (properties of device 0)");
  EXPECT_EQ(identified_by(info, 9),
            "MI300X by name \"AMD Instinct MI300X\" (properties of device 0, the one model listed, for device 9)");
  TraceInfo unnamed;
  unnamed.devices.push_back(device("", 9, 4, 304, 206141652992));
  unnamed.devices.back().id = 2;
  EXPECT_EQ(identified_by(unnamed, 2), "MI300X by CC 9.4, 304 CUs and memory (an empty name; properties of device 2)");
  TraceInfo mtia;
  mtia.devices.push_back(device("ARTEMIS", -1, -1, -1));
  mtia.devices.back().id = 17;
  EXPECT_EQ(identified_by(mtia, 17).rfind("not identified (properties of device 17): ", 0), 0u)
      << identified_by(mtia, 17);
}

}  // namespace gpu_specs_test
}  // namespace
}  // namespace ferret
