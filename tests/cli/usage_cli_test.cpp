// Usage errors read the same in every sub-command: "ferret: <what is wrong>" on stderr, nothing
// on stdout, exit status 2.
#include <algorithm>

#include <gtest/gtest.h>

#include "test_util.h"

namespace ferret {
namespace {
namespace usage_cli_test {

void expect_usage_error(const std::string& args, const std::string& message) {
  const test::CommandResult r = test::run_ferret(args);
  EXPECT_EQ(r.exit_code, 2) << args;
  EXPECT_EQ(r.err, "ferret: " + message + "\n") << args;
  EXPECT_EQ(r.out, "") << args;
}

TEST(UsageCli, EverySubCommandPrintsUsageErrorsOneWay) {
  const std::string out = test::temp_path("usage-cli-out.json");
  expect_usage_error("analyze x.json --json --md", "choose one of --json and --md");
  expect_usage_error("analyze x.json --job --per-trace", "choose one of --job and --per-trace");
  expect_usage_error("analyze x.json --steps 3-x", "--steps: expected A-B, A-, -B or N (step numbers), got \"3-x\"");
  expect_usage_error("analyze x.json --max-memory 12parsecs",
                     "--max-memory: expected a size such as 4GiB or 512MiB, got \"12parsecs\"");
  expect_usage_error("scaling a b --json --md", "choose one of --json and --md");
  expect_usage_error("nccl - --trace - ", "only one input can be read from stdin");
  expect_usage_error("gen inflate --from x.json --copies 2 --gzip --no-gzip -o " + out,
                     "--gzip and --no-gzip exclude each other");
  expect_usage_error("gen scenario -o " + out, "scenario: give a NAME (see --list)");
}

TEST(UsageCli, ParseErrorsOfTheOptionParserReadTheSameWay) {
  // One line, the unknown option named (not CLI11's "A subcommand is required" before it).
  expect_usage_error("--bogus info x.json", "unknown option --bogus; run with --help for more information");
  expect_usage_error("analyze x.json --bogus", "unknown option --bogus; run with --help for more information");
  const test::CommandResult missing = test::run_ferret("analyze");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err.rfind("ferret: ", 0), 0u) << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
  EXPECT_NE(missing.err.find("traces"), std::string::npos) << missing.err;
}

// A mistyped sub-command or long option names the nearest one (issue 14, point 8).
TEST(UsageCli, TyposSuggestTheNearestCommandOrOption) {
  expect_usage_error("analyz x.json",
                     "unknown command `analyz` (did you mean `analyze`?); run with --help for more information");
  expect_usage_error("ncl x.log", "unknown command `ncl` (did you mean `nccl`?); run with --help for more information");
  expect_usage_error("analyze x.json --josn",
                     "unknown option --josn (did you mean `--json`?); run with --help for more information");
  expect_usage_error("diff a b --widht 60",
                     "unknown option --widht (did you mean `--width`?); run with --help for more information");
  // Nothing near: the commands are listed instead.
  const test::CommandResult far = test::run_ferret("zzzzzzzz x");
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_NE(far.err.find("unknown command `zzzzzzzz` (commands: analyze, info,"), std::string::npos) << far.err;
}

// --width N (and COLUMNS) set the text layout; out of range is a usage error; JSON is unchanged.
TEST(UsageCli, WidthAndColumnsSetTheTextLayout) {
  const std::string log = std::string(FERRET_SOURCE_DIR) + "/tests/data/nccl/two_host_socket_fallback.log";
  const test::CommandResult narrow = test::run_ferret("nccl --width 60 " + log);
  const test::CommandResult normal = test::run_shell("env -u COLUMNS {ferret} nccl " + log);
  const test::CommandResult wide = test::run_shell("COLUMNS=160 {ferret} nccl " + log);
  const test::CommandResult flag_wins = test::run_shell("COLUMNS=160 {ferret} nccl --width 80 " + log);
  const test::CommandResult bad_columns = test::run_shell("COLUMNS=12x {ferret} nccl " + log);
  ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  // The findings' text wraps to the width (the fixed-width host and rank tables are 76 columns).
  EXPECT_LE(test::longest_line(normal.out), 80u) << normal.out;
  EXPECT_GT(test::longest_line(wide.out), 80u) << wide.out;
  EXPECT_LE(test::longest_line(wide.out), 160u) << wide.out;
  EXPECT_LT(std::count(wide.out.begin(), wide.out.end(), '\n'), std::count(normal.out.begin(), normal.out.end(), '\n'));
  EXPECT_GT(std::count(narrow.out.begin(), narrow.out.end(), '\n'),
            std::count(normal.out.begin(), normal.out.end(), '\n'));
  EXPECT_EQ(flag_wins.out, normal.out);
  EXPECT_EQ(bad_columns.out, normal.out);  // COLUMNS that is not a width is ignored
  const test::CommandResult too_narrow = test::run_ferret("nccl --width 10 " + log);
  EXPECT_EQ(too_narrow.exit_code, 2);
  EXPECT_NE(too_narrow.err.find("--width"), std::string::npos) << too_narrow.err;
  EXPECT_EQ(test::run_ferret("nccl --json --width 60 " + log).out, test::run_ferret("nccl --json " + log).out);
}

// Every floating-point option refuses NaN and infinities (exit 2 naming the option): a comparison
// with NaN is false, so a range check let "nan" through and `compare --fail-if-slower nan` passed a
// run 396% slower. Each command line below is otherwise sound (it runs, or fails later for a file).
TEST(UsageCli, NoFloatingPointOptionTakesNanOrInfinity) {
  const std::string trace = std::string(FERRET_SOURCE_DIR) + "/examples/traces/cpu-input-bound.json.gz";
  const std::vector<std::pair<std::string, std::string>> options = {
      {"diff " + trace + " " + trace + " --fail-if-slower", "--fail-if-slower"},
      {"compare a b --fail-if-slower", "--fail-if-slower"},
      {"compare a b --alpha", "--alpha"},
      {"history --alpha", "--alpha"},
      {"smi " + trace + " --interval", "--interval"},
      {"gen inflate --from " + trace + " -o /dev/null --copies 1 --gap-us", "--gap-us"},
      {"gen job --ranks 2 -o /nonexistent --straggler-delay-ms", "--straggler-delay-ms"},
      {"gen job --ranks 2 -o /nonexistent --clock-skew-ms", "--clock-skew-ms"},
      {"bench m.pt --time", "--time"},
      {"bench m.pt --batch-size", "--batch-size"},
  };
  for (const auto& [line, option] : options) {
    for (const char* value : {"nan", "NaN", "inf", "-inf", "1e999"}) {
      const test::CommandResult r = test::run_ferret(line + " " + value);
      EXPECT_EQ(r.exit_code, 2) << line << " " << value << ": " << r.err;
      EXPECT_NE(r.err.find(option), std::string::npos) << line << " " << value << ": " << r.err;
    }
  }
  // whatif --speedup K: from 1/1000 to 1000 (1e-308 overflowed the retimed steps).
  for (const char* k : {"nan", "inf", "1e-308", "0", "1e9"}) {
    const test::CommandResult r = test::run_ferret("whatif " + trace + " --speedup aten::mm=" + k);
    EXPECT_EQ(r.exit_code, 2) << k;
    EXPECT_NE(r.err.find("from 0.001 to 1000"), std::string::npos) << r.err;
  }
  EXPECT_EQ(test::run_ferret("whatif " + trace + " --speedup aten::mm=0.5").exit_code, 0);
}

// A report that cannot be written is not a success: with stdout on a full disk (/dev/full) every
// command that prints one says so and exits 2 (before, all exited 0 with nothing on stderr).
TEST(UsageCli, AReportThatCannotBeWrittenExits2) {
  const std::string src = FERRET_SOURCE_DIR;
  const std::string trace = src + "/examples/traces/cpu-input-bound.json.gz";
  for (const std::string& line :
       {"analyze " + trace, "analyze --json " + trace, "analyze --md " + trace, "info " + trace, "info --json " + trace,
        "diff " + trace + " " + trace, "whatif " + trace, "whatif --json " + trace,
        "smi " + src + "/tests/data/smi/amd-smi.csv", "nccl " + src + "/tests/data/nccl/two_host_socket_fallback.log",
        "memory " + src + "/tests/data/memory/oom-hip.log"}) {
    const test::CommandResult ok = test::run_shell("{ferret} " + line + " > /dev/null");
    ASSERT_EQ(ok.exit_code, 0) << line << ": " << ok.err;
    const test::CommandResult full = test::run_shell("{ferret} " + line + " > /dev/full");
    EXPECT_EQ(full.exit_code, 2) << line;
    EXPECT_NE(full.err.find("cannot write the output to stdout"), std::string::npos) << line << ": " << full.err;
  }
}

}  // namespace usage_cli_test
}  // namespace
}  // namespace ferret
