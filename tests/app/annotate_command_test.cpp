// run_annotate (app/annotate_command.h) is `ferret annotate` as a library call: the file it writes
// is byte for byte the command's, its counts are those the command reports, and a trace that
// cannot be read writes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "app/annotate_command.h"
#include "base/input_error.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace annotate_command_test {

TEST(AnnotateCommand, TheFileIsTheCommandsAndTheCountsItsReport) {
  const std::string trace = std::string(FERRET_SOURCE_DIR) + "/examples/traces/torch2-host-sync.json.gz";
  const std::string library_out = test::temp_path("annotate-library.json");
  const std::string cli_out = test::temp_path("annotate-cli.json");
  AnnotateRequest request;
  request.trace = trace;
  request.output = library_out;
  const AnnotateOutcome outcome = run_annotate(request);
  EXPECT_GT(outcome.added.events.size(), 0u);
  EXPECT_GT(outcome.splice.bytes_copied, 0u);
  const test::CommandResult cli = test::run_ferret("annotate " + trace + " -o " + cli_out);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(test::read_file(library_out), test::read_file(cli_out));
  EXPECT_NE(cli.err.find(fmt::format("the trace ({} bytes copied unchanged) and {} ferret events",
                                     outcome.splice.bytes_copied, outcome.added.events.size())),
            std::string::npos)
      << cli.err;
}

TEST(AnnotateCommand, AnUnreadableTraceWritesNothing) {
  AnnotateRequest request;
  request.trace = "/no/such/trace.json";
  request.output = test::temp_path("annotate-nothing.json");
  std::filesystem::remove(request.output);
  EXPECT_THROW(run_annotate(request), InputError);
  EXPECT_FALSE(std::filesystem::exists(request.output));
}

}  // namespace annotate_command_test
}  // namespace
}  // namespace ferret
