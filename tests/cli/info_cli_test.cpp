// The ferret command line: help, version, usage errors, `ferret info` in text and JSON, stdin,
// several inputs, exit codes. Expected values for tests/data/tiny-kineto2.json are worked out by
// hand below (see the fixture itself).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace info_cli_test {

using nlohmann::json;
using test::run_ferret;

const std::string kTiny = std::string(FERRET_SOURCE_DIR) + "/tests/data/tiny-kineto2.json";

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// --- Help, version, usage errors -----------------------------------------------------------------

TEST(Cli, HelpExitsZeroAndListsCommands) {
  const auto r = run_ferret("--help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "info")) << r.out;
  EXPECT_TRUE(contains(r.out, "--version")) << r.out;
  EXPECT_TRUE(contains(r.out, "--help")) << r.out;
}

TEST(Cli, VersionExitsZero) {
  const auto r = run_ferret("--version");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(ferret [0-9]+\.[0-9]+\.[0-9]+)"))) << r.out;
}

TEST(Cli, InfoHelpExitsZeroAndListsItsOptions) {
  const auto r = run_ferret("info --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "--json")) << r.out;
  EXPECT_TRUE(contains(r.out, "--threads")) << r.out;
  EXPECT_TRUE(contains(r.out, "traces")) << r.out;
}

TEST(Cli, NoArgumentsIsAUsageError) {
  const auto r = run_ferret("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(r.err.empty());
  EXPECT_TRUE(r.out.empty() || contains(r.out + r.err, "Usage") || contains(r.out + r.err, "subcommand"))
      << r.out << r.err;
}

TEST(Cli, UnknownOptionIsAUsageError) {
  EXPECT_EQ(run_ferret("--no-such-option").exit_code, 2);
  const auto r = run_ferret("info --no-such-option " + kTiny);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--no-such-option")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;  // nothing is loaded or printed
  EXPECT_EQ(run_ferret("no-such-command").exit_code, 2);
  EXPECT_EQ(run_ferret("info").exit_code, 2);  // no trace given
  EXPECT_EQ(run_ferret("info --threads abc " + kTiny).exit_code, 2);
}

TEST(Cli, UnknownTopLevelOptionIsNamedInTheMessage) {
  // The user's mistake is the unknown option; "A subcommand is required" alone hides it.
  const auto r = run_ferret("--no-such-option info " + kTiny);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--no-such-option")) << r.err;
  const auto alone = run_ferret("--no-such-option");
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_TRUE(contains(alone.err, "--no-such-option")) << alone.err;
}

// --- info --json ---------------------------------------------------------------------------------

TEST(CliInfoJson, DocumentHasTheSchemaAndEveryKey) {
  const auto r = run_ferret("info --json " + kTiny);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc;
  ASSERT_NO_THROW(doc = json::parse(r.out)) << r.out;
  EXPECT_EQ(doc.at("schema"), "ferret.info/1");
  ASSERT_EQ(doc.at("traces").size(), 1u);
  const json& t = doc.at("traces")[0];
  for (const char* key :
       {"source",       "compression", "compressed_bytes", "json_bytes", "format",  "platform",    "schema_version",
        "base_time_ns", "trace_name",  "versions",         "settings",   "devices", "distributed", "span",
        "steps",        "events",      "events_by_kind",   "streams",    "threads", "relations",   "repairs",
        "skips",        "notes",       "truncated"})
    EXPECT_TRUE(t.contains(key)) << key;
  EXPECT_TRUE(t.contains("recorded"));
}

TEST(CliInfoJson, ValuesForTheTinyFixture) {
  const auto r = run_ferret("info --json " + kTiny);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json t = json::parse(r.out).at("traces")[0];
  const std::string content = test::read_file(kTiny);

  EXPECT_EQ(t.at("source"), kTiny);
  EXPECT_EQ(t.at("compression"), "none");
  EXPECT_EQ(t.at("json_bytes").get<std::uint64_t>(), content.size());
  EXPECT_EQ(t.at("compressed_bytes").get<std::uint64_t>(), content.size());
  EXPECT_EQ(t.at("format"), "kineto-2");  // baseTimeNanoseconds + decimal ts
  EXPECT_EQ(t.at("platform"), "cuda");
  EXPECT_EQ(t.at("schema_version"), 1);
  EXPECT_EQ(t.at("base_time_ns").get<std::int64_t>(), 1700000000000000000LL);
  EXPECT_EQ(t.at("trace_name"), "tiny-kineto2");
  EXPECT_EQ(t.at("versions"), json({{"cuda_runtime_version", "12040"}}));
  EXPECT_EQ(t.at("settings"), json({{"record_shapes", "1"}}));

  ASSERT_EQ(t.at("devices").size(), 1u);
  const json& d = t.at("devices")[0];
  EXPECT_EQ(d.at("id"), 0);
  EXPECT_EQ(d.at("name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.at("total_global_mem").get<std::int64_t>(), 85029158912LL);
  EXPECT_EQ(d.at("compute_capability"), "9.0");
  EXPECT_EQ(d.at("num_sms"), 132);
  EXPECT_EQ(t.at("distributed"),
            json({{"backend", "nccl"}, {"rank", 1}, {"world_size", 2}, {"nccl_version", "2.21.5"}}));

  // Span: first ts 0; last end = ProfilerStep#2's 1000 + 1000 = 2000 us (the first kernel ends at
  // 50 + 1100 = 1150, the second at 1300).
  EXPECT_EQ(t.at("span").at("first_ns"), 0);
  EXPECT_EQ(t.at("span").at("last_ns"), 2000000);
  EXPECT_EQ(t.at("span").at("duration_ns"), 2000000);

  // Steps: #1 [0,1000) extended to its kernel's end 1150; #2 [1000,2000) starts at 1150 (clamped);
  // one kernel each, 1 >= 0.8 * 1: both kept.
  const json& steps = t.at("steps");
  EXPECT_EQ(steps.at("count"), 2);
  ASSERT_EQ(steps.at("list").size(), 2u);
  EXPECT_EQ(steps.at("list")[0], json({{"number", 1},
                                       {"start_ns", 0},
                                       {"cpu_end_ns", 1000000},
                                       {"end_ns", 1150000},
                                       {"duration_ns", 1150000},
                                       {"kernels", 1}}));
  EXPECT_EQ(steps.at("list")[1], json({{"number", 2},
                                       {"start_ns", 1150000},
                                       {"cpu_end_ns", 2000000},
                                       {"end_ns", 2000000},
                                       {"duration_ns", 850000},
                                       {"kernels", 1}}));
  EXPECT_TRUE(steps.at("dropped_incomplete").is_null());

  // 12 events in the file, the one without ts skipped: 11. By kind: 2 steps (user_annotation),
  // 3 cpu_op, 2 cuda_runtime, 2 kernel, 2 metadata (thread_name, process_name).
  EXPECT_EQ(t.at("events"), 11);
  const json& kinds = t.at("events_by_kind");
  EXPECT_EQ(kinds.size(), 19u);  // every kind, zeros included
  EXPECT_EQ(kinds.at("user_annotation"), 2);
  EXPECT_EQ(kinds.at("cpu_op"), 3);
  EXPECT_EQ(kinds.at("cuda_runtime"), 2);
  EXPECT_EQ(kinds.at("kernel"), 2);
  EXPECT_EQ(kinds.at("metadata"), 2);
  std::uint64_t total = 0;
  for (const auto& [k, v] : kinds.items()) total += v.get<std::uint64_t>();
  EXPECT_EQ(total, 11u);

  // One stream: device 0 stream 7, 2 kernels, busy 1100 + 100 = 1200 us.
  EXPECT_EQ(
      t.at("streams"),
      json::parse(
          R"([{"device": 0, "stream": 7, "kernels": 2, "memcpys": 0, "memsets": 0, "other": 0, "busy_ns": 1200000}])"));
  // One thread: 2 steps + 3 ops + 2 launches = 7 events; named by the two metadata events.
  EXPECT_EQ(
      t.at("threads"),
      json::parse(R"J([{"pid": 100, "tid": 100, "process": "python3", "name": "thread 100 (python)", "events": 7}])J"));
  EXPECT_EQ(t.at("relations"), json::parse(R"({"nesting_repairs": 0, "gpu_without_launch": 0,
                                               "launches_without_gpu": 0, "python_frames_without_caller": 0})"));
  EXPECT_EQ(t.at("recorded"),
            json::parse(R"({"python_frames": 0, "inductor_kernels": 0, "hardware_counter_series": 0})"));

  // aten::relu (event #8) had dur -1; aten::no_ts (event #9) had no ts.
  const std::size_t relu_at = content.find(R"({"ph": "X", "cat": "cpu_op", "name": "aten::relu")");
  const std::size_t no_ts_at = content.find(R"({"ph": "X", "cat": "cpu_op", "name": "aten::no_ts")");
  ASSERT_NE(relu_at, std::string::npos);
  ASSERT_NE(no_ts_at, std::string::npos);
  ASSERT_EQ(t.at("repairs").size(), 1u);
  EXPECT_EQ(t.at("repairs")[0].at("reason"), "negative duration set to 0");
  EXPECT_EQ(t.at("repairs")[0].at("count"), 1);
  EXPECT_EQ(t.at("repairs")[0].at("first"), "byte " + std::to_string(relu_at) + " (event #8)");
  ASSERT_EQ(t.at("skips").size(), 1u);
  EXPECT_EQ(t.at("skips")[0].at("count"), 1);
  EXPECT_EQ(t.at("skips")[0].at("first"), "byte " + std::to_string(no_ts_at) + " (event #9)");
  EXPECT_TRUE(contains(t.at("skips")[0].at("reason").get<std::string>(), "ts"));
  EXPECT_EQ(t.at("notes"), json::array());
  EXPECT_EQ(t.at("truncated"), false);
}

TEST(CliInfoJson, SameInputGivesByteIdenticalOutput) {
  const auto a = run_ferret("info --json " + kTiny);
  const auto b = run_ferret("info --json " + kTiny);
  const auto one_thread = run_ferret("info --json --threads 1 " + kTiny);
  ASSERT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out, one_thread.out);
}

TEST(CliInfoJson, SameCorpusInputGivesByteIdenticalOutput) {
  FERRET_REQUIRE_CORPUS(path, "cnn-ddp-a100-rank0of2-nccl.json.gz");
  const auto a = run_ferret("info --json --threads 2 " + path);
  const auto b = run_ferret("info --json --threads 1 " + path);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(json::parse(a.out).at("traces")[0].at("steps").at("count"), 3);  // MANIFEST: steps 4-6
}

TEST(CliInfoJson, CorpusResNet50Steps) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const auto r = run_ferret("info --json " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json t = json::parse(r.out).at("traces")[0];
  EXPECT_EQ(t.at("format"), "kineto-1.8");
  EXPECT_EQ(t.at("events"), 75718);  // MANIFEST: 75.7k events; tests/data/corpus_counts.json: 75718
  EXPECT_EQ(t.at("steps").at("count"), 6);
  EXPECT_EQ(t.at("steps").at("list")[0].at("duration_ns"), 187948000);  // MANIFEST: step 5 = 187,948 us
}

// --- Exit codes, several inputs, stdin ------------------------------------------------------------

TEST(CliInfo, TextReportOfAGoodTrace) {
  const auto r = run_ferret("info " + kTiny);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, kTiny));
  EXPECT_TRUE(contains(r.out, "kineto-2")) << r.out;
  EXPECT_TRUE(contains(r.out, "NVIDIA H100 80GB HBM3")) << r.out;
  EXPECT_TRUE(contains(r.out, "rank 1 of 2")) << r.out;
  EXPECT_TRUE(contains(r.out, "ProfilerStep#1..#2")) << r.out;
  EXPECT_TRUE(contains(r.out, "negative duration set to 0")) << r.out;
}

TEST(CliInfo, SeveralFilesAreAllReported) {
  const std::string second = test::temp_path("second.json");
  test::write_file(
      second, R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "x", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})");
  const auto r = run_ferret("info " + kTiny + " " + second);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, kTiny));
  EXPECT_TRUE(contains(r.out, second));
  EXPECT_LT(r.out.find(kTiny), r.out.find(second));  // in command-line order
  const auto j = run_ferret("info --json " + kTiny + " " + second);
  ASSERT_EQ(j.exit_code, 0);
  const json doc = json::parse(j.out);
  ASSERT_EQ(doc.at("traces").size(), 2u);
  EXPECT_EQ(doc.at("traces")[0].at("source"), kTiny);
  EXPECT_EQ(doc.at("traces")[1].at("source"), second);
  EXPECT_EQ(doc.at("traces")[1].at("events"), 1);
  std::remove(second.c_str());
}

TEST(CliInfo, OneUnusableInputExitsTwoAndTheGoodOneIsStillReported) {
  const std::string missing = test::temp_path("missing.json");
  const auto r = run_ferret("info " + kTiny + " " + missing);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.out, "kineto-2")) << r.out;
  EXPECT_TRUE(contains(r.err, missing)) << r.err;

  const auto j = run_ferret("info --json " + missing + " " + kTiny);
  EXPECT_EQ(j.exit_code, 2);
  json doc;
  ASSERT_NO_THROW(doc = json::parse(j.out)) << j.out;
  ASSERT_EQ(doc.at("traces").size(), 2u);
  EXPECT_EQ(doc.at("traces")[0].at("source"), missing);
  EXPECT_TRUE(contains(doc.at("traces")[0].at("error").get<std::string>(), missing));
  EXPECT_EQ(doc.at("traces")[1].at("events"), 11);
}

TEST(CliInfo, StdinIsReadForDash) {
  const auto r = run_ferret("info --json -", kTiny);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json t = json::parse(r.out).at("traces")[0];
  EXPECT_EQ(t.at("source"), "<stdin>");
  EXPECT_EQ(t.at("events"), 11);
  EXPECT_EQ(t.at("steps").at("count"), 2);
}

TEST(CliInfo, GzipOnStdin) {
  const std::string gz = test::temp_path("stdin.json.gz");
  ASSERT_EQ(std::system(("gzip -c " + kTiny + " > " + gz).c_str()), 0);
  const auto r = run_ferret("info --json -", gz);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json t = json::parse(r.out).at("traces")[0];
  EXPECT_EQ(t.at("compression"), "gzip");
  EXPECT_EQ(t.at("events"), 11);
  std::remove(gz.c_str());
}

// --- Unusable inputs --------------------------------------------------------------------------------

TEST(CliInfo, EmptyFileExitsTwoNamingTheFile) {
  const std::string path = test::temp_path("empty.json");
  test::write_file(path, "");
  const auto r = run_ferret("info " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, path)) << r.err;
  std::remove(path.c_str());
}

TEST(CliInfo, NotJsonExitsTwoNamingByteZero) {
  const std::string path = test::temp_path("hello.json");
  test::write_file(path, "hello");
  const auto r = run_ferret("info " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, path)) << r.err;
  EXPECT_TRUE(contains(r.err, "byte 0")) << r.err;
  std::remove(path.c_str());
}

TEST(CliInfo, DirectoryExitsTwoWithAClearMessage) {
  const std::string dir = test::temp_path("dir-input");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const auto r = run_ferret("info " + dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, dir)) << r.err;
  EXPECT_TRUE(contains(r.err, "directory")) << r.err;
  ::rmdir(dir.c_str());
}

TEST(CliInfo, MissingFileExitsTwo) {
  const std::string path = test::temp_path("nope.json");
  const auto r = run_ferret("info " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, path)) << r.err;
}

TEST(CliInfo, TruncatedTraceStillExitsZeroAndSaysSo) {
  const std::string content = test::read_file(kTiny);
  const std::size_t cut = content.find(R"({"ph": "X", "cat": "cpu_op", "name": "aten::relu")") + 20;
  const std::string path = test::temp_path("cut.json");
  test::write_file(path, content.substr(0, cut));
  const auto r = run_ferret("info --json " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json t = json::parse(r.out).at("traces")[0];
  EXPECT_EQ(t.at("truncated"), true);
  EXPECT_EQ(t.at("events"), 8);  // the 8 events before aten::relu
  std::remove(path.c_str());
}

}  // namespace info_cli_test
}  // namespace
}  // namespace ferret
