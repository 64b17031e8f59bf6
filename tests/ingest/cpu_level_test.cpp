// The parser's CPU check against a second reader: the flags the kernel reports in /proc/cpuinfo.
#include "ingest/kineto/cpu_level.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace ferret {
namespace {
namespace cpu_level_test {

std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

TEST(CpuLevel, AgreesWithProcCpuinfo) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 only";
#else
  const std::set<std::string> flags = cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  const std::string level = parser_cpu_level();
  std::string expected;
  auto need = [&](const char* cpuinfo_name, const char* shown) {
    if (!flags.count(cpuinfo_name)) expected += std::string(" ") + shown;
  };
  if (level != "baseline") {
    need("sse4_2", "SSE4.2");
    need("pclmulqdq", "PCLMUL");
    need("popcnt", "POPCNT");
  }
  if (level == "v3 (AVX2)") {
    need("avx2", "AVX2");
    need("bmi2", "BMI2");
  }
  const std::string missing = missing_cpu_features();
  if (expected.empty()) {
    EXPECT_EQ(missing, "");
    EXPECT_NO_THROW(require_parser_cpu());
  } else {
    EXPECT_NE(missing.find("lacks" + expected + ":"), std::string::npos) << missing;
    EXPECT_THROW(require_parser_cpu(), std::runtime_error);
  }
#endif
}

}  // namespace cpu_level_test
}  // namespace
}  // namespace ferret
