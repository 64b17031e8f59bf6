// run_whatif (app/whatif_command.h) is `ferret whatif` as a library call: rendered, its outcome is
// byte for byte what the command prints; a --fix the trace has no finding for, and a trace that
// cannot be read, are the command's errors.
#include <gtest/gtest.h>

#include <string>

#include "analysis/analysis_options.h"
#include "app/whatif_command.h"
#include "base/input_error.h"
#include "report/trace/whatif_report.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace whatif_command_test {

std::string example(const std::string& name) { return std::string(FERRET_SOURCE_DIR) + "/examples/traces/" + name; }

TEST(WhatIfCommand, JsonIsTheCliStdout) {
  const std::string trace = example("torch2-host-sync.json.gz");
  WhatIfRequest request;
  request.trace = trace;
  parse_whatif_removal("host-sync", request.changes);
  int loaded = 0;
  request.loaded = [&] { ++loaded; };
  const WhatIfOutcome outcome = run_whatif(request);
  EXPECT_EQ(loaded, 1);
  ASSERT_FALSE(outcome.result.steps.empty());
  const test::CommandResult cli = test::run_ferret("whatif --json --remove host-sync " + trace);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(whatif_json(outcome.model, outcome.context, outcome.result)
                    .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
                "\n",
            cli.out);
}

TEST(WhatIfCommand, AnUnknownFixAndAMissingTraceAreTheCommandsErrors) {
  WhatIfRequest request;
  request.trace = example("torch2-host-sync.json.gz");
  request.fix = "no-such-finding";
  try {
    run_whatif(request);
    FAIL() << "--fix no-such-finding was accepted";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("no finding 'no-such-finding'"), std::string::npos) << e.what();
    const test::CommandResult cli = test::run_ferret("whatif --fix no-such-finding " + request.trace);
    EXPECT_NE(cli.exit_code, 0);
    EXPECT_NE(cli.err.find(e.what()), std::string::npos) << cli.err;
  }
  request.fix.clear();
  request.trace = "/no/such/trace.json";
  EXPECT_THROW(run_whatif(request), InputError);
}

}  // namespace whatif_command_test
}  // namespace
}  // namespace ferret
