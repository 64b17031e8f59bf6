// `ferret info --json` and `ferret analyze --json` show the leniencies of a trace (missing comma,
// comment, unknown phase) with their counts and first places; the expected numbers come from the
// document text below.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace lenient_cli_test {

using nlohmann::json;

const json* find_reason(const json& list, const std::string& part) {
  for (const json& item : list)
    if (item.value("reason", "").find(part) != std::string::npos) return &item;
  return nullptr;
}

TEST(LenientCli, InfoAndAnalyzeShowLeniencyCounts) {
  const std::string e0 = R"({"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":10,"dur":5})";
  const std::string e1 = R"({"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":20,"dur":5})";
  const std::string e2 = R"({"ph":"Q","name":"q","pid":1,"tid":1,"ts":30})";
  const std::string text = R"({"traceEvents":[)" + e0 + " " + e1 + ",\n// note\n" + e2 + "]}";
  const std::string path = test::temp_path("lenient-cli.json");
  test::write_file(path, text);
  const std::string missing_at = "byte " + std::to_string(text.find(e1)) + " (event #1)";
  const std::string comment_at = "byte " + std::to_string(text.find("// note"));
  const std::string phase_at = "byte " + std::to_string(text.find(e2)) + " (event #2)";

  auto check = [&](const json& repairs, const std::string& label) {
    const json* missing = find_reason(repairs, "missing comma between events");
    ASSERT_NE(missing, nullptr) << label << repairs.dump();
    EXPECT_EQ((*missing)["count"], 1) << label;
    EXPECT_EQ((*missing)["first"], missing_at) << label;
    const json* comment = find_reason(repairs, "comment");
    ASSERT_NE(comment, nullptr) << label << repairs.dump();
    EXPECT_EQ((*comment)["count"], 1) << label;
    EXPECT_EQ((*comment)["first"], comment_at) << label;
    const json* phase = find_reason(repairs, "unknown \"ph\" 'Q'");
    ASSERT_NE(phase, nullptr) << label << repairs.dump();
    EXPECT_EQ((*phase)["count"], 1) << label;
    EXPECT_EQ((*phase)["first"], phase_at) << label;
  };

  const auto info = test::run_ferret("info --json " + path);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const json info_json = json::parse(info.out);
  EXPECT_EQ(info_json["traces"][0]["events"], 3);
  check(info_json["traces"][0]["repairs"], "info: ");

  const auto analyze = test::run_ferret("analyze --json " + path);
  ASSERT_EQ(analyze.exit_code, 0) << analyze.err;
  check(json::parse(analyze.out)["traces"][0]["input"]["repairs"], "analyze: ");

  const auto text_info = test::run_ferret("info " + path);
  EXPECT_NE(text_info.out.find("missing comma between events (accepted)"), std::string::npos) << text_info.out;
  std::remove(path.c_str());
}

}  // namespace lenient_cli_test
}  // namespace
}  // namespace ferret
