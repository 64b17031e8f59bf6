// Issue 19, item 4, on a real recording: one of the 8,772 kernels of a V100 ResNet50 trace moved
// 115 days later must not change the verdict or the step time, and `info` must count it.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace time_outliers_cli_test {

using nlohmann::json;

json analyze_json(const std::string& path) {
  const test::CommandResult r = test::run_ferret("analyze --json '" + path + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out)["traces"][0];
}

TEST(TimeOutliersCorpus, OneKernelMovedDaysLaterChangesNothing) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const test::CommandResult unzipped = test::run_shell("gzip -dc '" + path + "'");
  ASSERT_EQ(unzipped.exit_code, 0) << unzipped.err;
  json doc = json::parse(unzipped.out);
  // The middle kernel of the trace (torch 1.9 names the category "Kernel"), 115 days later.
  json& events = doc["traceEvents"];
  std::vector<std::size_t> kernels;
  for (std::size_t i = 0; i < events.size(); ++i)
    if (events[i].value("cat", "") == "Kernel") kernels.push_back(i);
  ASSERT_EQ(kernels.size(), 8772u);
  json& moved = events[kernels[kernels.size() / 2]];
  const std::string moved_name = moved["name"];
  moved["ts"] = moved["ts"].get<std::int64_t>() + std::int64_t{115} * 86400 * 1000000;
  const std::string damaged = test::temp_path("v100-moved-kernel.json");
  test::write_file(damaged, doc.dump());

  const json want = analyze_json(path);
  const json got = analyze_json(damaged);
  ASSERT_FALSE(want["findings"].empty());
  ASSERT_FALSE(got["findings"].empty());
  EXPECT_EQ(got["findings"][0]["id"], want["findings"][0]["id"]);
  EXPECT_EQ(got["verdict"]["finding_id"], want["verdict"]["finding_id"]);
  const double want_step = want["steps"]["avg_us"], got_step = got["steps"]["avg_us"];
  EXPECT_NEAR(got_step, want_step, want_step * 0.001);
  EXPECT_EQ(got["steps"]["count"], want["steps"]["count"]);
  // Said in analyze's input notes too.
  bool noted = false;
  for (const json& skip : got["input"]["skips"])
    noted |= skip["first"].get<std::string>().find(moved_name) != std::string::npos;
  EXPECT_TRUE(noted) << got["input"].dump();

  const test::CommandResult info = test::run_ferret("info --json '" + damaged + "'");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const json trace = json::parse(info.out)["traces"][0];
  const json clean = json::parse(test::run_ferret("info --json '" + path + "'").out)["traces"][0];
  std::uint64_t counted = 0, counted_clean = 0;
  for (const json& skip : trace["skips"]) counted += skip["count"].get<std::uint64_t>();
  for (const json& skip : clean["skips"]) counted_clean += skip["count"].get<std::uint64_t>();
  EXPECT_EQ(counted, counted_clean + 1) << trace["skips"].dump();
  EXPECT_EQ(trace["events"].get<std::uint64_t>(), clean["events"].get<std::uint64_t>() - 1);
  EXPECT_EQ(trace["span"]["duration_ns"], clean["span"]["duration_ns"]);
  std::remove(damaged.c_str());
}

// A ProfilerStep whose duration is corrupt (25 days: below the parser's cap, set to 0 as a time
// outlier) was kept as a 0 us step, moving the mean by 15%. It ends at the next step's start, and
// the step times are the recording's (the repository's own torch 1.13 CPU sample).
TEST(TimeOutliersCli, AStepWithACorruptDurationEndsAtTheNextStep) {
  const test::CommandResult unzipped =
      test::run_shell("gzip -dc '" + std::string(FERRET_SOURCE_DIR) + "/examples/traces/cpu-input-bound.json.gz'");
  ASSERT_EQ(unzipped.exit_code, 0) << unzipped.err;
  json doc = json::parse(unzipped.out);
  const std::string sound = test::temp_path("steps-sound.json");
  test::write_file(sound, doc.dump());
  for (json& e : doc)
    if (e.value("name", "") == "ProfilerStep#2") e["dur"] = 25.0 * 86400 * 1e6;
  const std::string damaged = test::temp_path("steps-corrupt.json");
  test::write_file(damaged, doc.dump());
  const json before = analyze_json(sound), after = analyze_json(damaged);
  ASSERT_EQ(after["steps"]["count"], 5);
  for (int k = 0; k < 5; ++k) {
    const double a = before["steps"]["list"][k]["duration_us"], b = after["steps"]["list"][k]["duration_us"];
    EXPECT_GT(b, 0) << "step " << k;
    EXPECT_NEAR(b, a, 0.01 * a) << "step " << k;  // step 2 ends where step 3 starts: 61 us later
  }
  EXPECT_NEAR(after["steps"]["avg_us"].get<double>(), before["steps"]["avg_us"].get<double>(), 0.005 * 39441);
  EXPECT_NE(after.dump().find("ProfilerStep span without a duration (a broken one, repaired to 0) ended at the next "
                              "step's start"),
            std::string::npos);
  std::remove(sound.c_str());
  std::remove(damaged.c_str());
}

}  // namespace time_outliers_cli_test
}  // namespace
}  // namespace ferret
