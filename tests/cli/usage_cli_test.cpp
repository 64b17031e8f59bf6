// Usage errors read the same in every sub-command: "ferret: <what is wrong>" on stderr, nothing
// on stdout, exit status 2.
#include <algorithm>

#include <gtest/gtest.h>

#include "test_util.h"

namespace ferret {
namespace {

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

}  // namespace
}  // namespace ferret
