// run_analyze (app/analyze_command.h) is `ferret analyze` as a library call: its output is
// byte for byte what the command prints, for one trace and for a job directory.
#include <filesystem>

#include <gtest/gtest.h>

#include "app/analyze_command.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace analyze_command_test {

std::string small_trace(int rank) {
  std::vector<std::string> events = {test::span("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000)};
  for (int k = 0; k < 3 + rank; ++k) events.push_back(test::span("kernel", "gemm", 0, 7, 200.0 * k, 100));
  return test::trace(events);
}

struct BothWays {
  AnalyzeOutput library;
  test::CommandResult cli;
};

// `ferret analyze [--json] INPUTS` through run_analyze and through the built binary: both succeed
// and print the same bytes.
BothWays analyze_both_ways(AnalyzeRequest request, const std::vector<std::string>& inputs, bool json = true) {
  request.inputs = inputs;
  request.format = json ? AnalyzeFormat::kJson : AnalyzeFormat::kText;
  std::string args = json ? "analyze --json" : "analyze";
  for (const std::string& input : inputs) args += " " + input;
  BothWays both{run_analyze(request), test::run_ferret(args)};
  EXPECT_EQ(both.library.exit_code, 0);
  EXPECT_EQ(both.cli.exit_code, 0) << both.cli.err;
  EXPECT_EQ(both.library.out, both.cli.out);
  return both;
}

TEST(AnalyzeCommand, JsonIsTheCliStdoutForATrace) {
  const std::string path = test::temp_path("analyze-command-one.json");
  test::write_file(path, small_trace(0));
  const BothWays both = analyze_both_ways({}, {path});
  EXPECT_NE(both.library.out.find("\"schema\": \"ferret.analysis/1\""), std::string::npos);
  EXPECT_TRUE(both.library.messages.empty());
}

TEST(AnalyzeCommand, JsonAndMessagesAreTheClisForAJobDirectory) {
  const std::string dir = test::temp_path("analyze-command-job");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (int r = 0; r < 3; ++r) test::write_file(dir + "/rank" + std::to_string(r) + ".json", small_trace(r));
  test::write_file(dir + "/config.json", "{\"lr\": 0.1}");  // not a trace: left out with a note
  AnalyzeRequest request;
  std::vector<std::string> seen;
  request.on_message = [&](const std::string& m) { seen.push_back(m); };
  const BothWays both = analyze_both_ways(request, {dir});
  const AnalyzeOutput& library = both.library;
  EXPECT_NE(library.out.find("\"schema\": \"ferret.job/1\""), std::string::npos);
  EXPECT_NE(library.out.find("\"ranks_given\": 3"), std::string::npos);
  const std::string note = "left out " + dir + "/config.json: not a trace (no \"traceEvents\" array in the document)";
  ASSERT_EQ(library.messages, std::vector<std::string>{note});
  EXPECT_EQ(seen, library.messages);
  EXPECT_EQ(both.cli.err, "ferret: " + note + "\n");
}

TEST(AnalyzeCommand, TextOfTwoTracesIsTheCliStdout) {
  // Not ranks of one job (no rank in their names): two reports, one blank line between them.
  const std::string a = test::temp_path("analyze-command-a.json");
  const std::string b = test::temp_path("analyze-command-b.json");
  test::write_file(a, small_trace(0));
  test::write_file(b, small_trace(1));
  const BothWays both = analyze_both_ways({}, {a, b}, false);
  const std::size_t second = both.library.out.find(b);
  ASSERT_NE(second, std::string::npos) << both.library.out;
  EXPECT_NE(both.library.out.rfind("\n\n", second), std::string::npos);
  EXPECT_NE(both.library.out.find(a), std::string::npos);
}

TEST(AnalyzeCommand, AMissingInputIsAMessageAndExitStatus2) {
  AnalyzeRequest request;
  request.inputs = {test::temp_path("analyze-command-no-such-dir") + "/"};
  const AnalyzeOutput out = run_analyze(request);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_TRUE(out.out.empty());
  ASSERT_EQ(out.messages.size(), 1u);
}

}  // namespace analyze_command_test
}  // namespace
}  // namespace ferret
