// run_smi (app/smi_command.h) is `ferret smi` as a library call: rendered, its outcome is byte for
// byte what the command prints, and an unreadable log is an error of the outcome and a message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/smi_command.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace smi_command_test {

std::string smi_log(const std::string& name) { return std::string(FERRET_SOURCE_DIR) + "/tests/data/smi/" + name; }

TEST(SmiCommand, JsonIsTheCliStdout) {
  const std::vector<std::string> logs = {smi_log("dmon-dt.txt"), smi_log("amd-smi.csv")};
  SmiRequest request;
  request.logs = logs;
  const SmiOutcome outcome = run_smi(request);
  ASSERT_TRUE(outcome.any_log);
  EXPECT_EQ(outcome.log.sources.size(), 2u);
  const SmiReportInput in{outcome.log, outcome.stats, outcome.findings, outcome.errors};
  const test::CommandResult cli = test::run_ferret("smi --json " + logs[0] + " " + logs[1]);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(smi_json(in).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n", cli.out);
}

TEST(SmiCommand, AnUnreadableLogIsAnErrorAndAMessage) {
  SmiRequest request;
  request.logs = {smi_log("pmon.txt"), "/no/such/gpus.csv"};
  std::vector<std::string> messages;
  request.on_message = [&](const std::string& m) { messages.push_back(m); };
  const SmiOutcome outcome = run_smi(request);
  EXPECT_TRUE(outcome.any_log);
  ASSERT_EQ(outcome.errors.size(), 1u);
  EXPECT_EQ(outcome.errors[0].source, "/no/such/gpus.csv");
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("/no/such/gpus.csv"), std::string::npos) << messages[0];
  request.logs = {"/no/such/gpus.csv"};
  EXPECT_FALSE(run_smi(request).any_log);
  EXPECT_EQ(test::run_ferret("smi /no/such/gpus.csv").exit_code, 2);
}

}  // namespace smi_command_test
}  // namespace
}  // namespace ferret
