// ferret::nccl_reports, smi_reports, memory_reports, whatif_reports and annotate
// (include/ferret/ferret.h) are `ferret nccl`, `smi`, `memory`, `whatif` and `annotate` as library
// calls: on every input of its kind the repository holds, each format is the command's stdout byte
// for byte, the notes are its stderr lines and the exit code its status; each option gives the
// bytes its flag gives, and a bad value is the command line's message.
#include <gtest/gtest.h>

#include <ferret/ferret.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/input_error.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace commands_api_test {

namespace fs = std::filesystem;

std::vector<std::string> files_in(const std::string& folder) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(std::string(FERRET_SOURCE_DIR) + "/" + folder))
    if (entry.is_regular_file()) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// What the command line printed on stderr, as the API's notes: one "ferret: " line each.
std::string as_stderr(const std::vector<std::string>& notes) {
  std::string err;
  for (const std::string& n : notes) err += "ferret: " + n + "\n";
  return err;
}

// `ferret COMMAND [flags] INPUTS` in each format against the API's reports.
void expect_cli_bytes(const std::string& command, const std::string& flags, const std::vector<std::string>& inputs,
                      const Reports& api) {
  std::string args;
  for (const std::string& in : inputs) args += " '" + in + "'";
  SCOPED_TRACE(command + flags + args);
  const test::CommandResult json = test::run_ferret(command + " --json" + flags + args);
  const test::CommandResult text = test::run_ferret(command + flags + args);
  const test::CommandResult md = test::run_ferret(command + " --md" + flags + args);
  EXPECT_EQ(api.exit_code, json.exit_code);
  EXPECT_EQ(api.json, json.out);
  EXPECT_EQ(api.text, text.out);
  EXPECT_EQ(api.markdown, md.out);
  EXPECT_EQ(as_stderr(api.notes), text.err);
}

TEST(CommandsApi, NcclReportsAreTheCommandsOnEveryLog) {
  const std::vector<std::string> logs = files_in("tests/data/nccl");
  ASSERT_GT(logs.size(), 5u);
  for (const std::string& log : logs) expect_cli_bytes("nccl", "", {log}, nccl_reports({log}));
  expect_cli_bytes("nccl", "", logs, nccl_reports(logs));  // all ranks together
  // No log at all: exit 2 and the command's message.
  expect_cli_bytes("nccl", "", {"/no/such/nccl.log"}, nccl_reports({"/no/such/nccl.log"}));
}

TEST(CommandsApi, SmiReportsAreTheCommandsOnEveryLog) {
  const std::vector<std::string> logs = files_in("tests/data/smi");
  ASSERT_GT(logs.size(), 5u);
  for (const std::string& log : logs) expect_cli_bytes("smi", "", {log}, smi_reports({log}));
  expect_cli_bytes("smi", "", {"/no/such/smi.csv"}, smi_reports({"/no/such/smi.csv"}));
}

TEST(CommandsApi, MemoryReportsAreTheCommandsOnEveryInput) {
  const std::vector<std::string> files = files_in("tests/data/memory");
  ASSERT_GT(files.size(), 5u);
  for (const std::string& file : files) expect_cli_bytes("memory", "", {file}, memory_reports({file}));
  expect_cli_bytes("memory", "", {files[0], "/no/such/snapshot.pickle"},
                   memory_reports({files[0], "/no/such/snapshot.pickle"}));
}

TEST(CommandsApi, EachOptionGivesItsFlagsBytes) {
  const std::string nccl_log = std::string(FERRET_SOURCE_DIR) + "/tests/data/nccl/single_host_nvlink.log";
  const std::string trace = std::string(FERRET_SOURCE_DIR) + "/examples/traces/synthetic-communication-heavy.json.gz";
  NcclSettings nccl;
  nccl.traces = {trace};
  nccl.threads = 1;
  expect_cli_bytes("nccl", " --trace '" + trace + "' --threads 1", {nccl_log}, nccl_reports({nccl_log}, nccl));
  nccl = {};
  nccl.max_bytes_without_progress = "2KiB";
  nccl.max_memory = "1GiB";
  expect_cli_bytes("nccl", " --max-bytes-without-progress 2KiB --max-memory 1GiB", {nccl_log},
                   nccl_reports({nccl_log}, nccl));

  const std::string smi_dir = std::string(FERRET_SOURCE_DIR) + "/tests/data/smi/";
  for (const std::string& log : files_in("tests/data/smi")) {
    SmiSettings smi;
    smi.interval = 2.5;
    smi.utc_offset = "+02:00";
    smi.max_memory = "1GiB";
    expect_cli_bytes("smi", " --interval 2.5 --utc-offset +02:00 --max-memory 1GiB", {log}, smi_reports({log}, smi));
  }

  const std::string summary = std::string(FERRET_SOURCE_DIR) + "/tests/data/memory/summary-torch2.txt";
  MemorySettings memory;
  memory.max_memory = "1GiB";
  expect_cli_bytes("memory", " --max-memory 1GiB", {summary}, memory_reports({summary}, memory));
}

// A bad value is an OptionError with the message the command line prints, exit status 2.
void expect_option_error(const std::function<void()>& call, const std::string& cli_args) {
  const test::CommandResult cli = test::run_ferret(cli_args);
  EXPECT_EQ(cli.exit_code, 2) << cli_args;
  try {
    call();
    ADD_FAILURE() << cli_args << ": no OptionError";
  } catch (const OptionError& e) {
    EXPECT_EQ("ferret: " + std::string(e.what()) + "\n", cli.err) << cli_args;
  }
}

TEST(CommandsApi, BadValuesAreTheCommandLinesErrors) {
  const std::string log = std::string(FERRET_SOURCE_DIR) + "/tests/data/nccl/single_host_nvlink.log";
  NcclSettings nccl;
  nccl.max_memory = "lots";
  expect_option_error([&] { nccl_reports({log}, nccl); }, "nccl --max-memory lots " + log);
  nccl = {};
  nccl.max_bytes_without_progress = "1XB";
  expect_option_error([&] { nccl_reports({log}, nccl); }, "nccl --max-bytes-without-progress 1XB " + log);
  expect_option_error([&] { nccl_reports({"-", "-"}); }, "nccl - -");
  SmiSettings smi;
  smi.utc_offset = "+25";
  expect_option_error([&] { smi_reports({log}, smi); }, "smi --utc-offset +25 " + log);
  MemorySettings memory;
  memory.max_memory = "0";
  expect_option_error([&] { memory_reports({log}, memory); }, "memory --max-memory 0 " + log);
}

std::string example(const std::string& name) { return std::string(FERRET_SOURCE_DIR) + "/examples/traces/" + name; }

TEST(CommandsApi, WhatIfReportsAreTheCommandsOnEveryExampleTrace) {
  const std::vector<std::string> traces = files_in("examples/traces");
  ASSERT_GT(traces.size(), 10u);
  WhatIfSettings settings;
  settings.remove = {"host-sync", "dataloader"};
  for (const std::string& trace : traces) {
    const Reports api = whatif_reports(trace, settings);
    SCOPED_TRACE(trace);
    const std::string args = " --remove host-sync --remove dataloader '" + trace + "'";
    const test::CommandResult json = test::run_ferret("whatif --json" + args);
    const test::CommandResult text = test::run_ferret("whatif" + args);
    EXPECT_EQ(api.exit_code, json.exit_code);
    EXPECT_EQ(api.json, json.out);
    EXPECT_EQ(api.text, text.out);
    EXPECT_EQ(as_stderr(api.notes), text.err);
    EXPECT_TRUE(api.markdown.empty());
  }
  // Each option: steps, device, speedup and a finding's fix.
  const std::string trace = example("synthetic-input-bound.json.gz");
  settings = {};
  settings.steps = "6-7";
  settings.speedup = {"aten::mm=2"};
  settings.fix = "input-bound";
  settings.max_memory = "1GiB";
  const Reports api = whatif_reports(trace, settings);
  const test::CommandResult cli =
      test::run_ferret("whatif --json --steps 6-7 --speedup aten::mm=2 --fix input-bound --max-memory 1GiB " + trace);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(api.json, cli.out);
  EXPECT_NE(api.json, whatif_reports(trace).json);  // the options did change the result
}

TEST(CommandsApi, WhatIfBadValuesAreTheCommandLinesErrors) {
  const std::string trace = example("synthetic-input-bound.json.gz");
  WhatIfSettings settings;
  settings.remove = {"everything"};
  expect_option_error([&] { whatif_reports(trace, settings); }, "whatif --remove everything " + trace);
  settings = {};
  settings.speedup = {"aten::mm=fast"};
  expect_option_error([&] { whatif_reports(trace, settings); }, "whatif --speedup aten::mm=fast " + trace);
  settings = {};
  settings.fix = "no-such-finding";
  expect_option_error([&] { whatif_reports(trace, settings); }, "whatif --fix no-such-finding " + trace);
  EXPECT_THROW(whatif_reports("/no/such/trace.json"), InputError);
}

TEST(CommandsApi, AnnotateWritesTheCommandsBytesAndSaysWhatItAdded) {
  const std::string trace = example("synthetic-launch-bound.json.gz");
  const std::string by_api = test::temp_path("annotated-api.json");
  const std::string by_cli = test::temp_path("annotated-cli.json");
  AnnotateSettings settings;
  settings.steps = "6-7";
  const std::vector<std::string> notes = annotate(trace, by_api, settings);
  const test::CommandResult cli = test::run_ferret("annotate --steps 6-7 " + trace + " -o " + by_cli);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(test::read_file(by_api), test::read_file(by_cli));
  // The notes are the CLI's stderr, but for the output's name.
  std::string err = as_stderr(notes);
  const std::size_t at = err.find(by_api);
  ASSERT_NE(at, std::string::npos) << err;
  err.replace(at, by_api.size(), by_cli);
  EXPECT_EQ(err, cli.err);
  // Never over the trace itself, before any work; standard input is refused (read twice).
  expect_option_error([&] { annotate(trace, trace); }, "annotate " + trace + " -o " + trace);
  expect_option_error([&] { annotate("-", by_api); }, "annotate - -o " + by_api);
}

}  // namespace commands_api_test
}  // namespace
}  // namespace ferret
