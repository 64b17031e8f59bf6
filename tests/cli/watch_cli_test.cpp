// `ferret watch` as a user runs it: the command's output byte for byte, its exit status and
// signals, SIGTERM passed on, the report on stderr or in --out, JSON and CSV, NVML absent.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace watch_cli_test {

using nlohmann::json;

TEST(WatchCli, TheCommandsStdoutPassesThroughByteForByte) {
  // Bytes a terminal or a pipe must get untouched: NUL, ESC, 0xff, no final newline.
  const std::string report = test::temp_path("watch-bytes.txt");
  const test::CommandResult r =
      test::run_ferret("watch --interval 50 --out '" + report + "' -- printf 'a\\000b\\033[1m\\377z'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("a\0b\033[1m\377z", 9));
  EXPECT_EQ(r.err, "");  // the report went to --out
  const std::string text = test::read_file(report);
  EXPECT_NE(text.find("ferret watch printf"), std::string::npos) << text;
  EXPECT_NE(text.find("exit status 0"), std::string::npos) << text;
}

TEST(WatchCli, ExitStatusAndSignalsPassThrough) {
  test::CommandResult r = test::run_ferret("watch -- sh -c 'echo out; echo err >&2; exit 7'");
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err.rfind("err\n", 0), 0u) << r.err;            // the command's stderr first,
  EXPECT_NE(r.err.find("exit status 7"), std::string::npos);  // then the report
  r = test::run_ferret("watch -- sh -c 'kill -KILL $$'");
  EXPECT_EQ(r.exit_code, 128 + 9);
  EXPECT_NE(r.err.find("ended by signal 9"), std::string::npos) << r.err;
  r = test::run_ferret("watch -- /nonexistent/command");
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("cannot run /nonexistent/command"), std::string::npos) << r.err;
  r = test::run_ferret("watch -- /");  // found, but a directory: the shell's 126
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_NE(r.err.find("cannot run /: Permission denied"), std::string::npos) << r.err;
}

TEST(WatchCli, SigtermToFerretReachesTheCommand) {
  // ferret gets SIGTERM 0.5 s into a 10 s sleep: the sleep ends by it (143) in well under 10 s.
  const std::string report = test::temp_path("watch-term.json");
  const test::CommandResult r = test::run_shell(
      "start=$(date +%s); {ferret} watch --json --out '" + report +
      "' -- sleep 10 & pid=$!; sleep 0.5; kill -TERM $pid; wait $pid; code=$?; echo $code $(( $(date +%s) - start ))");
  int code = 0, seconds = 99;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "%d %d", &code, &seconds), 2) << r.out << r.err;
  EXPECT_EQ(code, 128 + 15);
  EXPECT_LT(seconds, 5);
  const json doc = json::parse(test::read_file(report));
  EXPECT_EQ(doc["signal"], 15);
  EXPECT_EQ(doc["forwarded_signal"], 15);
  EXPECT_EQ(doc["exit_status"], 143);
}

// SIGHUP too (before, watch passed on TERM only): the sleep ends by it (129).
TEST(WatchCli, SighupToFerretReachesTheCommand) {
  const std::string report = test::temp_path("watch-hup.json");
  const test::CommandResult r = test::run_shell(
      "start=$(date +%s); {ferret} watch --json --out '" + report +
      "' -- sleep 10 & pid=$!; sleep 0.5; kill -HUP $pid; wait $pid; code=$?; echo $code $(( $(date +%s) - start ))");
  int code = 0, seconds = 99;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "%d %d", &code, &seconds), 2) << r.out << r.err;
  EXPECT_EQ(code, 128 + 1);
  EXPECT_LT(seconds, 5);
  const json doc = json::parse(test::read_file(report));
  EXPECT_EQ(doc["signal"], 1);
  EXPECT_EQ(doc["forwarded_signal"], 1);
}

TEST(WatchCli, JsonCsvAndTheGpuLine) {
  const std::string report = test::temp_path("watch.json"), csv = test::temp_path("watch.csv");
  const test::CommandResult r =
      test::run_ferret("watch --interval 100 --json --out '" + report + "' --samples-out '" + csv + "' -- sleep 0.5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(test::read_file(report));
  EXPECT_EQ(doc["schema"], "ferret.watch/1");
  EXPECT_EQ(doc["command"], json::array({"sleep", "0.5"}));
  const int samples = doc["samples"]["count"];
  EXPECT_GE(samples, 3);  // 0.5 s at 100 ms: 5 or 6 unless the machine stalls
  const std::string rows = test::read_file(csv);
  EXPECT_EQ(static_cast<int>(std::count(rows.begin(), rows.end(), '\n')), samples + 1);
  EXPECT_LT(doc["cpu"]["total"]["mean_cores"].get<double>(), 0.1);
  EXPECT_EQ(doc["findings"][0]["id"], "watch-waiting");
  if (!doc["gpu"]["watched"].get<bool>()) {
    // No NVIDIA driver here: said once, in the report, and not an error.
    const std::string note = doc["gpu"]["note"];
    EXPECT_NE(note.find("libnvidia-ml.so.1"), std::string::npos) << note;
    const test::CommandResult t = test::run_ferret("watch -- sleep 0.2");
    EXPECT_EQ(t.exit_code, 0);
    std::size_t count = 0;
    for (std::size_t at = t.err.find("libnvidia-ml"); at != std::string::npos; at = t.err.find("libnvidia-ml", at + 1))
      ++count;
    EXPECT_EQ(count, 1u) << t.err;
    EXPECT_NE(t.err.find("GPU: not watched"), std::string::npos) << t.err;
  } else {
    EXPECT_GE(doc["gpu"]["devices"].size(), 1u);
  }
}

// The GPU side end to end, through a stand-in NVML library (tests/tools/fake_nvml.cpp) on the
// loader's path: GPU 0 runs the command at 20% busy, GPU 1 another job at 90%. The verdict reads
// only the command's GPU (named by NVML's process list): starved, with idle workers (sleep).
TEST(WatchCli, GpuSideThroughNvml) {
  const std::string report = test::temp_path("watch-gpu.json");
  const test::CommandResult r = test::run_shell(std::string("LD_LIBRARY_PATH='") + FERRET_FAKE_NVML_DIR +
                                                "/fake_nvml' FAKE_NVML_GPUS=2 FAKE_NVML_UTIL=20,90 {ferret} watch "
                                                "--interval 50 --json --out '" +
                                                report + "' -- sleep 0.6");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(test::read_file(report));
  ASSERT_TRUE(doc["gpu"]["watched"].get<bool>()) << doc["gpu"].dump();
  ASSERT_EQ(doc["gpu"]["devices"].size(), 2u);
  const json& gpu0 = doc["gpu"]["devices"][0];
  const json& gpu1 = doc["gpu"]["devices"][1];
  EXPECT_EQ(gpu0["name"], "Fake GPU 0");
  EXPECT_DOUBLE_EQ(gpu0["util_mean_pct"].get<double>(), 20.0) << gpu0.dump();
  EXPECT_DOUBLE_EQ(gpu1["util_mean_pct"].get<double>(), 90.0) << gpu1.dump();
  EXPECT_EQ(gpu0["judged_by"], "tree");
  EXPECT_TRUE(gpu1["judged_by"].is_null()) << gpu1.dump();  // another job's GPU: not judged
  ASSERT_FALSE(doc["findings"].empty());
  EXPECT_EQ(doc["findings"][0]["id"], "watch-gpu-starved") << doc["findings"].dump();
}

TEST(WatchCli, UsageErrors) {
  EXPECT_EQ(test::run_ferret("watch --interval 5 -- true").exit_code, 2);
  EXPECT_EQ(test::run_ferret("watch --json --md -- true").exit_code, 2);
  EXPECT_EQ(test::run_ferret("watch --out /nonexistent/dir/x -- true").exit_code, 2);
  EXPECT_EQ(test::run_ferret("watch").exit_code, 2);
}

}  // namespace watch_cli_test
}  // namespace
}  // namespace ferret
