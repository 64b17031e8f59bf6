// Usage errors read the same in every sub-command: "ferret: <what is wrong>" on stderr, nothing
// on stdout, exit status 2.
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

}  // namespace
}  // namespace ferret
