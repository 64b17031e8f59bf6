// run_nccl (app/nccl_command.h) is `ferret nccl` as a library call: rendered, its outcome is byte
// for byte what the command prints, and an unreadable log is an error of the outcome and a message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/nccl_command.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace nccl_command_test {

std::string nccl_log(const std::string& name) { return std::string(FERRET_SOURCE_DIR) + "/tests/data/nccl/" + name; }

std::string json_of(const NcclOutcome& o) {
  return nccl_json(o.setup, o.findings, o.errors)
             .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
         "\n";
}

TEST(NcclCommand, JsonIsTheCliStdout) {
  const std::vector<std::string> logs = {nccl_log("two_host_ib_gdr.log"), nccl_log("rank0_socket_no_verbs.log")};
  NcclRequest request;
  request.logs = logs;
  const NcclOutcome outcome = run_nccl(request);
  ASSERT_TRUE(outcome.any_log);
  EXPECT_FALSE(outcome.setup.ranks.empty());
  const test::CommandResult cli = test::run_ferret("nccl --json " + logs[0] + " " + logs[1]);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(json_of(outcome), cli.out);
}

TEST(NcclCommand, AnUnreadableLogIsAnErrorAndAMessage) {
  NcclRequest request;
  request.logs = {nccl_log("single_host_nvlink.log"), "/no/such/nccl.log"};
  std::vector<std::string> messages;
  request.on_message = [&](const std::string& m) { messages.push_back(m); };
  const NcclOutcome outcome = run_nccl(request);
  EXPECT_TRUE(outcome.any_log);
  ASSERT_EQ(outcome.errors.size(), 1u);
  EXPECT_EQ(outcome.errors[0].source, "/no/such/nccl.log");
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("/no/such/nccl.log"), std::string::npos) << messages[0];
  // No log at all: nothing to analyse, and the command exits 2.
  request.logs = {"/no/such/nccl.log"};
  EXPECT_FALSE(run_nccl(request).any_log);
  EXPECT_EQ(test::run_ferret("nccl /no/such/nccl.log").exit_code, 2);
}

}  // namespace nccl_command_test
}  // namespace
}  // namespace ferret
