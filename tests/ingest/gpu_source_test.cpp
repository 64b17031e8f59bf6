// The NVML source against a stand-in library with NVML's C ABI (tests/tools/fake_nvml.cpp): the
// dlopen path, every function ferret resolves, the struct layouts, the retry when a device lists
// more processes than the buffer holds, and each way of not watching the GPU said in one line.
#include "ingest/proc/gpu_source.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

namespace ferret {
namespace {
namespace gpu_source_test {

const std::string kFake = std::string(FERRET_FAKE_NVML_DIR) + "/fake_nvml/libnvidia-ml.so.1";
const std::string kIncomplete = std::string(FERRET_FAKE_NVML_DIR) + "/fake_nvml_incomplete/libnvidia-ml.so.1";

// The stand-in reads its script at nvmlInit_v2; each test sets it and clears it.
class ScriptedNvml : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* v : {"FAKE_NVML_INIT_RC", "FAKE_NVML_GPUS", "FAKE_NVML_UTIL", "FAKE_NVML_EXTRA"}) ::unsetenv(v);
  }
};

TEST_F(ScriptedNvml, DevicesReadingsAndProcessesCrossTheAbi) {
  ::setenv("FAKE_NVML_GPUS", "2", 1);
  ::setenv("FAKE_NVML_UTIL", "37,91", 1);
  ::setenv("FAKE_NVML_EXTRA", "100", 1);  // past the 64-entry first buffer: the retry must grow it
  std::string why_not;
  const std::unique_ptr<GpuSource> source = open_nvml_gpu_source(why_not, kFake.c_str());
  ASSERT_NE(source, nullptr) << why_not;
  EXPECT_EQ(why_not, "");
  EXPECT_EQ(source->description(), "NVML (driver 999.1.2)");
  const std::vector<GpuDeviceInfo> devices = source->devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].name, "Fake GPU 0");
  EXPECT_EQ(devices[1].name, "Fake GPU 1");
  EXPECT_EQ(devices[0].memory_total, 80ULL << 30);
  const std::vector<GpuReading> r = source->read();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].ok);
  EXPECT_DOUBLE_EQ(r[0].util_pct, 37);
  EXPECT_DOUBLE_EQ(r[0].mem_util_pct, 18);  // the stand-in reports half of utilization.gpu (integer)
  EXPECT_DOUBLE_EQ(r[1].util_pct, 91);
  EXPECT_EQ(r[0].memory_used, 10ULL << 30);
  EXPECT_EQ(r[1].memory_used, 11ULL << 30);
  ASSERT_TRUE(r[1].has_processes);
  ASSERT_EQ(r[1].processes.size(), 100u);
  EXPECT_EQ(r[1].processes[0].first, 4000000u);
  EXPECT_EQ(r[1].processes[99].first, 4000099u);
  EXPECT_EQ(r[1].processes[0].second, ~0ULL);  // NVML_VALUE_NOT_AVAILABLE passes through
}

TEST_F(ScriptedNvml, EachWayOfNotWatchingIsOneLine) {
  std::string why_not;
  EXPECT_EQ(open_nvml_gpu_source(why_not, "/nonexistent/libnvidia-ml.so.1"), nullptr);
  EXPECT_EQ(why_not,
            "no NVIDIA driver library (/nonexistent/libnvidia-ml.so.1 not found): GPU side not watched, CPU side only");
  EXPECT_EQ(open_nvml_gpu_source(why_not, kIncomplete.c_str()), nullptr);
  EXPECT_EQ(why_not, kIncomplete + " lacks nvmlDeviceGetMemoryInfo: GPU side not watched, CPU side only");
  ::setenv("FAKE_NVML_INIT_RC", "9", 1);  // NVML_ERROR_DRIVER_NOT_LOADED
  EXPECT_EQ(open_nvml_gpu_source(why_not, kFake.c_str()), nullptr);
  EXPECT_EQ(why_not, "NVML did not start (nvmlInit_v2 returned 9): GPU side not watched, CPU side only");
  ::unsetenv("FAKE_NVML_INIT_RC");
  ::setenv("FAKE_NVML_GPUS", "0", 1);
  EXPECT_EQ(open_nvml_gpu_source(why_not, kFake.c_str()), nullptr);
  EXPECT_EQ(why_not, "NVML sees no GPU: GPU side not watched, CPU side only");
}

}  // namespace gpu_source_test
}  // namespace
}  // namespace ferret
