// run_memory (app/memory_command.h) is `ferret memory` as a library call: rendered, its outcome is
// byte for byte what the command prints, and an unreadable file fails the outcome with a message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/memory_command.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace memory_command_test {

std::string memory_file(const std::string& name) {
  return std::string(FERRET_SOURCE_DIR) + "/tests/data/memory/" + name;
}

TEST(MemoryCommand, JsonIsTheCliStdout) {
  const std::vector<std::string> files = {memory_file("oom-torch2.log"), memory_file("summary-torch2.txt")};
  MemoryRequest request;
  request.files = files;
  const MemoryOutcome outcome = run_memory(request);
  EXPECT_FALSE(outcome.failed);
  ASSERT_EQ(outcome.inputs.size(), 2u);
  const test::CommandResult cli = test::run_ferret("memory --json " + files[0] + " " + files[1]);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(memory_json(outcome.inputs).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n",
            cli.out);
}

TEST(MemoryCommand, AnUnreadableFileFailsWithAMessage) {
  MemoryRequest request;
  request.files = {memory_file("oom-hip.log"), "/no/such/snapshot.pickle"};
  std::vector<std::string> messages;
  request.on_message = [&](const std::string& m) { messages.push_back(m); };
  const MemoryOutcome outcome = run_memory(request);
  EXPECT_TRUE(outcome.failed);
  EXPECT_EQ(outcome.inputs.size(), 1u);  // the readable one is kept
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("/no/such/snapshot.pickle"), std::string::npos) << messages[0];
  EXPECT_EQ(test::run_ferret("memory " + memory_file("oom-hip.log") + " /no/such/snapshot.pickle").exit_code, 2);
}

}  // namespace memory_command_test
}  // namespace
}  // namespace ferret
