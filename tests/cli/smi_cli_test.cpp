// `ferret smi` end to end on the fixtures of tests/data/smi/: the JSON numbers (computed by hand
// in tests/diagnosis/smi_rules_test.cpp), text and Markdown against the JSON, --trace alignment,
// and the exits of unusable input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace smi_cli_test {

using nlohmann::json;

std::string data(const std::string& name) { return std::string(FERRET_SOURCE_DIR) + "/tests/data/smi/" + name; }

json smi_json(const std::string& args) {
  const test::CommandResult r = test::run_ferret("smi --json " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

TEST(SmiCli, QueryCsvJsonNumbers) {
  const json doc = smi_json("'" + data("query-two-gpus.csv") + "'");
  EXPECT_EQ(doc["schema"], "ferret.smi/1");
  ASSERT_EQ(doc["gpus"].size(), 2u);
  const json& g0 = doc["gpus"][0];
  EXPECT_EQ(g0["gpu"], "0");
  EXPECT_EQ(g0["busy_metric"], "utilization");
  EXPECT_EQ(g0["busy"]["mean_pct"], 90.0);
  EXPECT_EQ(g0["busy"]["p5_pct"], 74.5);
  EXPECT_EQ(g0["busy"]["p95_pct"], 100.0);
  EXPECT_EQ(g0["memory"]["headroom_mib"], 81559.0 - 41000.0);
  EXPECT_EQ(g0["power"]["headroom_w"], 5.0);  // 700 - p95 695
  EXPECT_EQ(g0["throttle"]["throttled_pct"], 70.0);
  EXPECT_EQ(g0["span_s"], 10.0);
  EXPECT_EQ(doc["gpus"][1]["busy"]["p95_pct"], 55.5);
  EXPECT_EQ(doc["sources"][0]["skipped_lines"], 1);
  EXPECT_EQ(doc["sources"][0]["format"], "nvidia-smi --query-gpu csv");
  std::set<std::string> ids;
  for (const json& f : doc["findings"]) ids.insert(f["id"]);
  EXPECT_EQ(ids, (std::set<std::string>{"gpu-starved", "gpu-imbalance", "gpu-throttling"}));
}

// The text table and the Markdown table show the JSON's numbers (rounded to whole percents), and
// both name the same findings.
TEST(SmiCli, TextAndMarkdownAgreeWithJson) {
  for (const char* name : {"query-two-gpus.csv", "dmon-dt.txt", "dcgmi-dmon.txt", "dcgm-exporter.prom", "rocm-smi.csv",
                           "amd-smi.csv", "pmon.txt"}) {
    const std::string path = "'" + data(name) + "'";
    const json doc = smi_json(path);
    const test::CommandResult text = test::run_ferret("smi --width 200 " + path);
    const test::CommandResult md = test::run_ferret("smi --md " + path);
    ASSERT_EQ(text.exit_code, 0) << name << text.err;
    ASSERT_EQ(md.exit_code, 0) << name << md.err;
    for (const json& g : doc["gpus"]) {
      const std::string label = g["label"];
      // The table row: the label after the indent, then a space (the idle list has "label:").
      const std::size_t at = text.out.find("\n  " + label + " ");
      const std::string row =
          at == std::string::npos ? std::string() : text.out.substr(at + 1, text.out.find('\n', at + 1) - at - 1);
      ASSERT_FALSE(row.empty()) << name << ": no row for " << label;
      // After the label and the metric ("util" or "smact"): samples, mean, p5, p50, p95.
      std::istringstream cells(row.substr(label.size() + 2));
      std::vector<std::string> tokens;
      for (std::string t; cells >> t;) tokens.push_back(t);
      const std::size_t first = 1;
      ASSERT_GE(tokens.size(), first + 5) << row;
      const std::string by = g["busy_metric"].is_null() ? "-" : g["busy_metric"] == "sm_active" ? "smact" : "util";
      EXPECT_EQ(tokens[0], by) << row;
      EXPECT_EQ(tokens[first], std::to_string(g["samples"].get<int>())) << row;
      // Whole percents: the text rounds the exact value, the JSON keeps 3 decimals, so a cell is
      // within half a point of the JSON's number (55.5 in JSON may be 55.4999... shown as 55).
      const char* keys[] = {"mean_pct", "p5_pct", "p50_pct", "p95_pct"};
      std::string md_cells;
      for (std::size_t k = 0; k < 4; ++k) {
        const json& v = g["busy"][keys[k]];
        const std::string& cell = tokens[first + 1 + k];
        md_cells += " " + cell + " |";
        if (v.is_null()) {
          EXPECT_EQ(cell, "-") << name << " " << label << " " << keys[k] << ": " << row;
          continue;
        }
        EXPECT_LE(std::fabs(std::stod(cell) - v.get<double>()), 0.5 + 1e-6)
            << name << " " << label << " " << keys[k] << ": " << row;
      }
      // The Markdown row holds the same cells in the same order.
      EXPECT_NE(md.out.find("| " + by + " | " + tokens[first] + " |" + md_cells), std::string::npos)
          << name << " " << label << ": " << md_cells;
    }
    for (const json& f : doc["findings"]) {
      const std::string title = f["title"];
      EXPECT_NE(test::unwrapped(text.out).find(title.substr(0, 30)), std::string::npos) << name << ": " << title;
      EXPECT_NE(md.out.find(title.substr(0, 20)), std::string::npos) << name << ": " << title;
    }
  }
}

TEST(SmiCli, TraceWindowAgainstTheRun) {
  const std::string log = "'" + data("query-two-gpus.csv") + "'";
  const json doc = smi_json(log + " --trace '" + data("trace-aligned.json") + "'");
  ASSERT_EQ(doc["traces"].size(), 1u);
  const json& t = doc["traces"][0];
  ASSERT_TRUE(t["aligned"].get<bool>()) << t["reason"];
  // baseTimeNanoseconds = 12:00:00.5; events from ts 0 to 1 s: the window is one second.
  EXPECT_EQ(t["window_s"], 1.0);
  EXPECT_EQ(t["run_s"], 10.0);
  EXPECT_EQ(t["gpus"][0]["window_busy_mean_pct"], 95.0);
  EXPECT_EQ(t["gpus"][1]["window_busy_mean_pct"], 45.0);
  EXPECT_EQ(t["gpus"][1]["run_busy_mean_pct"], 40.0);
  const test::CommandResult text = test::run_ferret("smi " + log + " --trace '" + data("trace-aligned.json") + "'");
  EXPECT_NE(test::unwrapped(text.out).find("the trace covered 1.000 s of a 10.000 s run"), std::string::npos)
      << text.out;
  EXPECT_NE(test::unwrapped(text.out).find("GPU 0 was 95% busy in that window and 90% over the run"), std::string::npos)
      << text.out;
  // Without baseTimeNanoseconds and with relative timestamps, nothing can be placed.
  const json rel = smi_json(log + " --trace '" + data("trace-relative.json") + "'");
  EXPECT_FALSE(rel["traces"][0]["aligned"].get<bool>());
  EXPECT_NE(rel["traces"][0]["reason"].get<std::string>().find("no absolute time"), std::string::npos);
  // The log written at UTC+2 (12:00 local = 10:00 UTC) no longer holds the window.
  const json shifted = smi_json(log + " --utc-offset +02:00 --trace '" + data("trace-aligned.json") + "'");
  EXPECT_FALSE(shifted["traces"][0]["aligned"].get<bool>());
}

TEST(SmiCli, UnusableInputExitsTwoNamingTheFile) {
  const std::string empty = test::temp_path("smi-empty.csv");
  test::write_file(empty, "");
  test::CommandResult r = test::run_ferret("smi '" + empty + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(empty), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;
  r = test::run_ferret("smi '" + data("query-noheader.csv") + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--columns"), std::string::npos) << r.err;
  r = test::run_ferret("smi --columns timestamp,index,utilization.gpu,memory.used '" + data("query-noheader.csv") +
                       "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // One readable log among unreadable ones: the report, exit 0, the other named.
  const json doc = smi_json("'" + empty + "' '" + data("rocm-smi.csv") + "'");
  EXPECT_EQ(doc["errors"].size(), 1u);
  EXPECT_EQ(doc["gpus"].size(), 2u);
  r = test::run_ferret("smi --utc-offset 25:00 '" + data("rocm-smi.csv") + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--utc-offset"), std::string::npos) << r.err;
  std::remove(empty.c_str());
}

TEST(SmiCli, TextFitsTheWidth) {
  for (std::size_t width : {60u, 80u, 120u}) {
    const test::CommandResult r =
        test::run_ferret(fmt::format("smi --width {} '{}'", width, data("query-two-gpus.csv")));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LE(test::longest_line(r.out), width) << r.out;
  }
}

// A log with no readable sample is nothing usable: exit 2, as for analyze and diff (before: 0).
TEST(SmiCli, NoReadableSampleIsExit2) {
  const std::string path = test::temp_path("smi-no-sample.csv");
  test::write_file(path, "timestamp, index, utilization.gpu [%]\n2024/01/31 12:00:00.000, 0, 3000000 %\n");
  const test::CommandResult r = test::run_ferret("smi " + path);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("no readable sample"), std::string::npos) << r.err;
}

}  // namespace smi_cli_test
}  // namespace
}  // namespace ferret
