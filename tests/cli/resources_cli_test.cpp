// Hostile shapes of input that must cost memory and time in proportion to the input: one kernel on
// each of many devices; more parser threads than the machine can start.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace ferret::test {
namespace {

using nlohmann::json;

// One 10 us kernel on each of `devices` devices (pid d), starting at 1000 + d % 7 us, with a
// 1 us memcpy and deviceProperties for each: the window is 1000..1016 us, so each device is busy
// 10 of 16 us (62.5%).
std::string many_devices_trace(int devices) {
  std::vector<std::string> events;
  events.reserve(2 * static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d) {
    events.push_back(span("kernel", "k", d, 7, 1000.0 + d % 7, 10.0, "\"device\":" + std::to_string(d)));
    events.push_back(span("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", d, 8, 1011.0, 1.0,
                          "\"device\":" + std::to_string(d) + ",\"bytes\":1024"));
  }
  std::string doc = trace(events);
  doc.pop_back();  // the closing brace: deviceProperties follow
  doc += ",\"deviceProperties\":[";
  for (int d = 0; d < devices; ++d) {
    if (d > 0) doc += ',';
    doc += "{\"id\":" + std::to_string(d);
    doc += ",\"name\":\"Test GPU\",\"totalGlobalMem\":1024,\"computeMajor\":9,\"computeMinor\":0,\"numSms\":132}";
  }
  return doc + "]}";
}

TEST(ResourcesCli, TenThousandDevicesStayWithinMemoryAndTime) {
  constexpr int kDevices = 10000;
  const std::string path = temp_path("many-devices.json");
  write_file(path, many_devices_trace(kDevices));
  // 400 MB of address space for a ~2 MB trace: reserving room for every GPU event on every device
  // needed 2.4 GB of RSS for this trace and fails here with std::bad_alloc.
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult r = run_shell("ulimit -v 400000 && {ferret} analyze --json " + path);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(seconds, 5.0) << "per-device work should not cost devices x events";
  json doc;
  ASSERT_NO_THROW(doc = json::parse(r.out)) << r.out.substr(0, 2000);
  const json& gpus = doc.at("traces")[0].at("gpus");
  ASSERT_EQ(gpus.size(), static_cast<std::size_t>(kDevices));
  for (int d = 0; d < kDevices; ++d) {
    const json& g = gpus[static_cast<std::size_t>(d)];
    ASSERT_EQ(g.at("device").get<int>(), d);
    ASSERT_EQ(g.at("kernels").get<int>(), 1) << "device " << d;
    ASSERT_DOUBLE_EQ(g.at("kernel_us").get<double>(), 10.0) << "device " << d;
    ASSERT_DOUBLE_EQ(g.at("utilization_pct").get<double>(), 62.5) << "device " << d;
    ASSERT_EQ(g.at("name").get<std::string>(), "Test GPU") << "device " << d;
  }
}

}  // namespace
}  // namespace ferret::test
