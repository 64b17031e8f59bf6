// Terminal and line injection (issue 19, item 5): names from a trace, NCCL log host names and
// NCCL_* values, history labels and file names that hold ESC sequences (erase screen, OSC 52
// clipboard write, OSC 8 hyperlink), BEL, BS, CR, NUL, DEL, the C1 CSI U+009B, a raw 0x9b byte
// and "\nFORGED: ..." must reach text and Markdown output and stderr as visible escapes: no raw
// control byte, and the forged report line never starts a line. JSON keeps the exact text.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "benchmark/history_store.h"
#include "terminal_hazard.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace terminal_safety_cli_test {

using nlohmann::json;
using test::run_ferret;

// Every hostile class in one string, as JSON string text (escaped) and as the bytes it decodes to.
// `tag` tells the fields apart.
std::string hostile_json(const std::string& tag) {
  return tag + R"(\u001b[2J\u001b]52;c;ZXZpbA==\u0007\u001b]8;;http://evil.example/\u001b\\link\u001b]8;;\u001b\\)"
               R"( bel\u0007 bs\b cr\r nul\u0000 del\u007f csi\u009b2J\nFORGED: all good)";
}
std::string hostile_bytes(const std::string& tag) {
  return tag + std::string("\x1b[2J\x1b]52;c;ZXZpbA==\x07\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\") +
         " bel\x07 bs\b cr\r nul" + std::string(1, '\0') +
         " del\x7f csi\xc2\x9b"
         "2J\nFORGED: all good";
}

// An op launching a kernel, thread and process names, and header fields, each hostile.
std::string hostile_trace(double kernel_us) {
  const std::string op = "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" + hostile_json("op") +
                         "\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":100}";
  const std::string launch = test::span("cuda_runtime", "cudaLaunchKernel", 1, 1, 10, 5, test::corr(1));
  const std::string kernel = "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + hostile_json("kernel") +
                             "\",\"pid\":0,\"tid\":7,\"ts\":20,\"dur\":" + std::to_string(kernel_us) +
                             ",\"args\":{\"correlation\":1,\"device\":0,\"stream\":7}}";
  const std::string thread = "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"" +
                             hostile_json("thread") + "\"}}";
  const std::string process = "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"" +
                              hostile_json("process") + "\"}}";
  std::string doc = test::trace({op, launch, kernel, thread, process});
  doc.pop_back();  // the closing brace: header fields follow
  doc += ",\"traceName\":\"" + hostile_json("traceName") + "\"";
  doc += ",\"cuda_runtime_version\":\"" + hostile_json("version") + "\"";
  doc += ",\"record_shapes\":\"" + hostile_json("setting") + "\"";
  doc += ",\"distributedInfo\":{\"backend\":\"" + hostile_json("backend") +
         "\",\"rank\":0,\"world_size\":1,\"nccl_version\":\"" + hostile_json("nccl") + "\"}";
  doc += ",\"deviceProperties\":[{\"id\":0,\"name\":\"" + hostile_json("device") +
         "\",\"totalGlobalMem\":85520809984,\"computeMajor\":9,\"computeMinor\":0,\"numSms\":132}]}";
  return doc;
}

void expect_terminal_safe(const std::string& text, const std::string& what) {
  EXPECT_EQ(test::terminal_hazard(text), "") << what << ":\n" << text.substr(0, 3000);
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class TerminalSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_path("terminal-safety");
    ASSERT_EQ(std::system(("rm -rf '" + dir_ + "' && mkdir -p '" + dir_ + "'").c_str()), 0);
    base_ = dir_ + "/base.json";
    next_ = dir_ + "/new.json";
    test::write_file(base_, hostile_trace(50));
    test::write_file(next_, hostile_trace(80));
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_, base_, next_;
};

TEST_F(TerminalSafety, AnalyzeTextAndMarkdownShowNamesEscaped) {
  const auto text = run_ferret("analyze '" + base_ + "'");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  expect_terminal_safe(text.out, "analyze");
  expect_terminal_safe(text.err, "analyze stderr");
  // The kernel table shows the kernel's name, escaped: "\x1b[2J" as four visible characters.
  EXPECT_TRUE(contains(text.out, "kernel\\x1b[2J")) << text.out;
  EXPECT_TRUE(contains(text.out, "op\\x1b[2J")) << text.out;
  EXPECT_TRUE(contains(text.out, "device\\x1b[2J")) << text.out;

  const auto md = run_ferret("analyze --md '" + base_ + "'");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  expect_terminal_safe(md.out, "analyze --md");
  // Markdown escapes the escape's backslash and the bracket: the page renders "\x1b[2J".
  EXPECT_TRUE(contains(md.out, "op\\\\x1b\\[2J")) << md.out;
}

TEST_F(TerminalSafety, JsonKeepsTheExactNames) {
  const auto r = run_ferret("info --json '" + base_ + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& info = j.at("traces").at(0);
  EXPECT_EQ(info.at("trace_name").get<std::string>(), hostile_bytes("traceName"));
  EXPECT_EQ(info.at("devices").at(0).at("name").get<std::string>(), hostile_bytes("device"));
  EXPECT_EQ(info.at("versions").at("cuda_runtime_version").get<std::string>(), hostile_bytes("version"));
  const auto a = run_ferret("analyze --json '" + base_ + "'");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(json::parse(a.out).at("traces").at(0).at("hot_spots").at("kernels").at(0).at("name").get<std::string>(),
            hostile_bytes("kernel"));
}

TEST_F(TerminalSafety, InfoShowsEveryFieldEscaped) {
  const auto r = run_ferret("info '" + base_ + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_terminal_safe(r.out, "info");
  for (const char* tag : {"thread", "process", "version", "device", "backend", "nccl"})
    EXPECT_TRUE(contains(r.out, std::string(tag) + "\\x1b[2J")) << tag << "\n" << r.out;
  EXPECT_TRUE(contains(r.out, "csi\\u009b2J\\nFORGED")) << r.out;
}

TEST_F(TerminalSafety, DiffTextAndMarkdownShowNamesEscaped) {
  const auto text = run_ferret("diff '" + base_ + "' '" + next_ + "'");
  ASSERT_LE(text.exit_code, 1) << text.err;
  expect_terminal_safe(text.out, "diff");
  expect_terminal_safe(text.err, "diff stderr");
  EXPECT_TRUE(contains(text.out, "kernel\\x1b[2J")) << text.out;
  const auto md = run_ferret("diff --md '" + base_ + "' '" + next_ + "'");
  ASSERT_LE(md.exit_code, 1) << md.err;
  expect_terminal_safe(md.out, "diff --md");
}

TEST_F(TerminalSafety, FileNamesInMessagesAreEscaped) {
  // A file name may hold ESC and '\n' on Linux; the message naming it must not act on either.
  const std::string bad = dir_ + "/evil\x1b]0;owned\x07\nFORGED: all good.json";
  test::write_file(bad, "{\"traceEvents\": [");  // cut short: an error or a repair naming the file
  const std::string missing = dir_ + "/gone\x1b[2J.json";
  for (const std::string& args : {"info '" + bad + "'", "analyze '" + bad + "'", "info '" + missing + "'",
                                  "diff '" + missing + "' '" + base_ + "'"}) {
    const auto r = run_ferret(args);
    expect_terminal_safe(r.err, "stderr of " + args);
    expect_terminal_safe(r.out, "stdout of " + args);
  }
  const auto r = run_ferret("info '" + missing + "'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "gone\\x1b[2J.json")) << r.err;
}

TEST_F(TerminalSafety, JobDirectoryRankFileNamesAreEscaped) {
  const std::string job = dir_ + "/job";
  ASSERT_EQ(::mkdir(job.c_str(), 0755), 0);
  test::write_file(job + "/rank0\x1b[2J.json", hostile_trace(50));
  test::write_file(job + "/rank1\x07.json", hostile_trace(60));
  test::write_file(job + "/rank2\x1b]0;t\x07\nFORGED: all good.json", "not json at all");
  ASSERT_EQ(::symlink((job + "/nowhere").c_str(), (job + "/rank3\x1b[5m.json").c_str()), 0);  // dangling
  for (const char* format : {"", " --md"}) {
    const auto r = run_ferret("analyze" + std::string(format) + " '" + job + "'");
    expect_terminal_safe(r.out, std::string("job stdout") + format);
    expect_terminal_safe(r.err, std::string("job stderr") + format);
    EXPECT_TRUE(contains(r.err, "rank3\\x1b[5m.json")) << r.err;
  }
}

TEST(TerminalSafetyNccl, HostNamesAndEnvironmentValuesAreEscaped) {
  const std::string host = "e\x07\x9b\xc2\x9bh";  // short enough for the host columns
  std::string log;
  log += host + ":900:900 [0] NCCL INFO NCCL version 2.20.5+cuda12.4\n";
  log += host + ":900:900 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\x1b]52;c;ZXZpbA==\x07\n";
  log += host +
         ":900:900 [0] NCCL INFO comm 0x99000 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 1c000 commId 0x1 - "
         "Init START\n";
  log += host + ":900:900 [0] misc.cc:10 NCCL WARN bad\x1b[2J\x7f thing\n";
  const std::string path = test::temp_path("terminal-safety-nccl.log");
  test::write_file(path, log);
  for (const char* format : {"", " --md"}) {
    const auto r = run_ferret("nccl" + std::string(format) + " '" + path + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_terminal_safe(r.out, std::string("nccl") + format);
    expect_terminal_safe(r.err, std::string("nccl stderr") + format);
  }
  const auto text = run_ferret("nccl '" + path + "'");
  // The raw 0x9b is not UTF-8: it shows as "\x9b"; the C1 U+009B as "\u009b".
  EXPECT_TRUE(contains(text.out, "e\\x07\\x9b\\u009bh ")) << text.out;
  EXPECT_TRUE(contains(text.out, "eth0\\x1b]52;c;ZXZpbA==\\x07")) << text.out;
  EXPECT_TRUE(contains(text.out, "bad\\x1b[2J\\x7f thing")) << text.out;
  // JSON keeps the host as logged (the raw 0x9b, not UTF-8, becomes U+FFFD in JSON).
  const auto j = run_ferret("nccl --json '" + path + "'");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_TRUE(contains(j.out, "e\\u0007\xef\xbf\xbd\xc2\x9bh")) << j.out;
  ::unlink(path.c_str());
}

TEST(TerminalSafetyHistory, LabelsAreEscaped) {
  const std::string dir = test::temp_path("terminal-safety-history");
  std::system(("rm -rf '" + dir + "'").c_str());
  const std::string db = dir + "/history.db";
  {
    HistoryStore store = HistoryStore::open(db);
    for (int i = 0; i < 2; ++i) {
      RunRecord r;
      r.label = "main\x1b]0;owned\x07\x1b[2J\nFORGED: all good";
      r.subject = "/models/m\x1b[2J.pt";
      r.samples = {0.009, 0.010, 0.011 + 0.001 * i};
      r.batch_size = 1;
      r.environment.fields = {{"OMP_NUM_THREADS", i == 0 ? "4" : "8\x1b[2J"}};
      store.record(r);
    }
  }
  for (const std::string& args : {std::string("history"), std::string("history --md"), std::string("compare '#1' '#2'"),
                                  std::string("compare --md '#1' '#2'"), std::string("compare nosuch '#2'")}) {
    const auto r = run_ferret(args + " --db '" + db + "'");
    expect_terminal_safe(r.out, args);
    expect_terminal_safe(r.err, args + " stderr");
  }
  const auto history = run_ferret("history --db '" + db + "'");
  ASSERT_EQ(history.exit_code, 0) << history.err;
  EXPECT_TRUE(contains(history.out, "main\\x1b")) << history.out;
  const auto missing = run_ferret("compare nosuch '#2' --db '" + db + "'");
  EXPECT_TRUE(contains(missing.err, "main\\x1b]0;owned\\x07")) << missing.err;  // the labels it lists
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace terminal_safety_cli_test
}  // namespace
}  // namespace ferret
