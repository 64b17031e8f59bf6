// run_watch (app/watch_command.h) is `ferret watch` as a library call: the command's exit status
// comes back with its samples and their summary, and a command that cannot start throws.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "app/watch_command.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace watch_command_test {

TEST(WatchCommand, TheExitStatusAndTheSummaryComeBack) {
  WatchRequest request;
  request.command = {"sh", "-c", "exit 3"};
  request.interval_ms = 50;
  const WatchOutcome outcome = run_watch(request);
  EXPECT_EQ(outcome.series.exit_status, 3);
  EXPECT_EQ(outcome.report.command, request.command);
  EXPECT_DOUBLE_EQ(outcome.report.interval_s, 0.05);
  // The command line passes the same status on.
  EXPECT_EQ(test::run_ferret("watch --interval 50 -- sh -c 'exit 3'").exit_code, 3);
}

TEST(WatchCommand, ACommandThatCannotStartThrows) {
  WatchRequest request;
  request.command = {"/no/such/program"};
  try {
    run_watch(request);
    FAIL() << "a missing program was started";
  } catch (const WatchSpawnError& e) {
    EXPECT_EQ(e.error, ENOENT);
  }
  EXPECT_EQ(test::run_ferret("watch -- /no/such/program").exit_code, 127);
}

}  // namespace watch_command_test
}  // namespace
}  // namespace ferret
