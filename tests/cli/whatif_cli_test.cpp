// `ferret whatif`: arguments, text and the ferret.whatif/1 document, on a hand-made CPU trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace whatif_cli_test {

using test::run_ferret;
using test::span;
using test::trace;

// Two steps (us): ProfilerStep#1 [0,50) with a DataLoader wait [2,22) and aten::mm [25,45);
// ProfilerStep#2 [50,110) with a wait [51,91) and aten::mm [92,105). Without the waits the steps
// take 30 and 20 us: medians (of two: their mean) 55 -> 25 us (-54.55%). aten::mm x2: 40 and 53.5 us.
std::string write_trace() {
  const std::string loader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  const std::string path = test::temp_path("whatif-cli.json");
  test::write_file(path, trace({
                             span("user_annotation", "ProfilerStep#1", 1, 1, 0, 50),
                             span("user_annotation", loader, 1, 1, 2, 20),
                             span("cpu_op", "aten::mm", 1, 1, 25, 20),
                             span("user_annotation", "ProfilerStep#2", 1, 1, 50, 60),
                             span("user_annotation", loader, 1, 1, 51, 40),
                             span("cpu_op", "aten::mm", 1, 1, 92, 13),
                         }));
  return path;
}

TEST(WhatIfCli, JsonDocument) {
  const std::string path = write_trace();
  const auto r = run_ferret("whatif --json --remove dataloader " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "ferret.whatif/1");
  EXPECT_DOUBLE_EQ(j["baseline_step_us"].get<double>(), 55.0);
  EXPECT_DOUBLE_EQ(j["predicted_step_us"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(j["change_pct"].get<double>(), -54.55);
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["steps"][1]["step"], 2);
  EXPECT_DOUBLE_EQ(j["steps"][1]["predicted_us"].get<double>(), 20.0);
  EXPECT_EQ(j["changes"]["remove"][0], "dataloader");
  EXPECT_EQ(j["changes"]["touched"]["dataloader_spans"], 2);
}

TEST(WhatIfCli, TextSaysWhatChangedAndHowManyEvents) {
  const std::string path = write_trace();
  const auto r = run_ferret("whatif " + path + " --speedup aten::mm=2 --speedup nothing_matches=3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("speedup 'aten::mm' x2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(2 events)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(0 events)"), std::string::npos) << r.out;
  // Medians of (50, 60) and (40, 53.5): 55 -> 46.75 us.
  EXPECT_NE(r.out.find("0.055 ms -> 0.047 ms (-15.0%)"), std::string::npos) << r.out;
}

TEST(WhatIfCli, BadArgumentsAreUsageErrors) {
  const std::string path = write_trace();
  for (const char* bad :
       {"--remove gpu", "--speedup aten::mm", "--speedup aten::mm=0", "--speedup =2", "--speedup aten::mm=fast"}) {
    const auto r = run_ferret(std::string("whatif ") + bad + " " + path);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("ferret: --"), std::string::npos) << bad << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << bad;
  }
  EXPECT_EQ(run_ferret("whatif").exit_code, 2);  // no trace
  EXPECT_EQ(run_ferret("whatif /nonexistent/trace.json").exit_code, 2);
}

TEST(WhatIfCli, ListedInHelp) {
  const auto r = run_ferret("--help");
  EXPECT_NE(r.out.find("whatif"), std::string::npos);
}

// Nothing to re-time is exit 2, as for analyze and diff (before: 0); a long table is capped as the
// other tables are (100,000 steps printed 100,006 lines), the JSON keeps every step.
TEST(WhatIfCli, NoWorkIsExit2AndALongTableIsCapped) {
  const std::string empty = test::temp_path("whatif-empty.json");
  test::write_file(empty, R"({"traceEvents": []})");
  const auto none = run_ferret("whatif " + empty);
  EXPECT_EQ(none.exit_code, 2) << none.out;
  EXPECT_NE(none.err.find("no step to re-time"), std::string::npos) << none.err;
  std::vector<std::string> events;
  for (int i = 0; i < 100; ++i) {
    events.push_back(span("user_annotation", "ProfilerStep#" + std::to_string(i), 1, 1, i * 100.0, 100));
    events.push_back(span("cpu_op", "aten::mm", 1, 1, i * 100.0 + 10, 50));
  }
  const std::string many = test::temp_path("whatif-many.json");
  test::write_file(many, trace(events));
  const auto text = run_ferret("whatif --speedup aten::mm=2 " + many);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("... 60 more steps (--json lists every one)"), std::string::npos) << text.out;
  EXPECT_LT(std::count(text.out.begin(), text.out.end(), '\n'), 60);
  const auto doc = nlohmann::json::parse(run_ferret("whatif --json --speedup aten::mm=2 " + many).out);
  EXPECT_EQ(doc["steps"].size(), 100u);
}

// The lower bound in the document and the text: with nothing removed it never binds.
TEST(WhatIfCli, TheDevicesOwnWorkIsSaidAsTheLowerBound) {
  const std::string path = write_trace();
  const auto doc = nlohmann::json::parse(run_ferret("whatif --json --remove dataloader " + path).out);
  ASSERT_TRUE(doc.contains("lower_bound"));
  EXPECT_EQ(doc["lower_bound"]["device"], nullptr);  // a CPU trace: no device work to bound by
  EXPECT_EQ(doc["lower_bound"]["binds"], false);
}

}  // namespace whatif_cli_test
}  // namespace
}  // namespace ferret
