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
  for (const char* name :
       {"query-two-gpus.csv", "dmon-dt.txt", "dcgmi-dmon.txt", "dcgm-exporter.prom", "rocm-smi.csv", "amd-smi.csv",
        "pmon.txt", "table-535-slurm.log", "table-418-unused-gpu.log", "table-550-mig.log"}) {
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

// nvidia-smi's default table in a Slurm log: the means computed by hand in
// tests/diagnosis/smi_rules_test.cpp (GPU 0: 90, 100, 80 % -> 90; GPU 1: 40, 50, 60 % -> 50).
TEST(SmiCli, TableLogJsonNumbers) {
  const json doc = smi_json("'" + data("table-535-slurm.log") + "'");
  EXPECT_EQ(doc["sources"][0]["format"], "nvidia-smi table");
  EXPECT_EQ(doc["sources"][0]["skipped_lines"], 10);  // the job's own lines
  ASSERT_EQ(doc["gpus"].size(), 2u);
  const json& g0 = doc["gpus"][0];
  EXPECT_EQ(g0["name"], "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g0["bus_id"], "00000000:07:00.0");
  EXPECT_EQ(g0["busy"]["mean_pct"], 90.0);
  EXPECT_EQ(doc["gpus"][1]["busy"]["mean_pct"], 50.0);
  EXPECT_EQ(g0["memory"]["peak_used_mib"], 40534.0);
  EXPECT_EQ(g0["memory"]["headroom_mib"], 81920.0 - 40534.0);
  EXPECT_EQ(g0["power"]["mean_w"], 318.333);  // 955 / 3
  EXPECT_EQ(g0["span_s"], 15.0);
  EXPECT_TRUE(g0["absolute_time"].get<bool>());
  EXPECT_TRUE(doc["findings"].empty());  // 3 samples a GPU: fewer than a rule judges on
  // The older layout's never-used GPU: gpu-unused alone, naming GPU 1.
  const json unused = smi_json("'" + data("table-418-unused-gpu.log") + "'");
  ASSERT_EQ(unused["findings"].size(), 1u) << unused["findings"].dump();
  EXPECT_EQ(unused["findings"][0]["id"], "gpu-unused");
  EXPECT_EQ(unused["findings"][0]["title"], "GPU 1 never used: busy at most 0% in all 6 samples");
  const test::CommandResult text = test::run_ferret("smi '" + data("table-418-unused-gpu.log") + "'");
  EXPECT_NE(test::unwrapped(text.out).find("GPU 1 never used"), std::string::npos) << text.out;
}

// A log of `nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,memory.used,memory.total,
// power.draw,temperature.gpu --format=csv -l 1` (units in the cells): its memory is in the text and
// Markdown tables, and memory.used alone is shown too (before: `-` unless both were logged).
TEST(SmiCli, CsvMemoryColumnsAreShown) {
  const std::string path = test::temp_path("smi-memory.csv");
  std::string csv =
      "timestamp, index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W], "
      "temperature.gpu\n";
  for (int i = 0; i < 3; ++i)
    csv += fmt::format("2024/01/31 12:00:0{}.000, 0, NVIDIA A100-SXM4-80GB, 87 %, {} MiB, 81920 MiB, 245.31 W, 65\n", i,
                       40536 + i);
  test::write_file(path, csv);
  const json doc = smi_json("'" + path + "'");
  EXPECT_EQ(doc["gpus"][0]["memory"]["peak_used_mib"], 40538.0);
  EXPECT_EQ(doc["gpus"][0]["memory"]["total_mib"], 81920.0);
  for (const char* width : {"200", "80"}) {
    const test::CommandResult text = test::run_ferret(std::string("smi --width ") + width + " '" + path + "'");
    EXPECT_NE(text.out.find("40538/81920"), std::string::npos) << width << "\n" << text.out;
  }
  const test::CommandResult md = test::run_ferret("smi --md '" + path + "'");
  EXPECT_NE(md.out.find("| 40538/81920 |"), std::string::npos) << md.out;
  // memory.used without memory.total: the peak alone, not `-`.
  const std::string used_only = test::temp_path("smi-memory-used.csv");
  test::write_file(used_only,
                   "timestamp, index, utilization.gpu [%], memory.used [MiB]\n"
                   "2024/01/31 12:00:00.000, 0, 87 %, 40536 MiB\n2024/01/31 12:00:01.000, 0, 88 %, 40600 MiB\n");
  const test::CommandResult used = test::run_ferret("smi --md '" + used_only + "'");
  EXPECT_NE(used.out.find("| 40600/? |"), std::string::npos) << used.out;
  std::remove(path.c_str());
  std::remove(used_only.c_str());
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
  // A file that is no GPU log: the message names it, says what was wrong and which command writes
  // a log ferret reads.
  const std::string garbage = test::temp_path("smi-garbage.log");
  test::write_file(garbage, "epoch 1 step 100 loss 2.31\nepoch 1 step 200 loss 2.10\n");
  r = test::run_ferret("smi '" + garbage + "'");
  EXPECT_EQ(r.exit_code, 2);
  const std::string message = test::unwrapped(r.err);
  EXPECT_NE(message.find(garbage + ": not a GPU utilisation log ferret reads"), std::string::npos) << r.err;
  EXPECT_NE(message.find("line 1 (`epoch 1 step 100 loss 2.31`)"), std::string::npos) << r.err;
  EXPECT_NE(message.find("nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,memory.used,memory.total,"
                         "power.draw,temperature.gpu --format=csv -l 1"),
            std::string::npos)
      << r.err;
  std::remove(garbage.c_str());
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
