// `ferret nccl` as one call: read the NCCL_DEBUG=INFO logs of any or all ranks (and, optionally,
// Kineto traces of the same run for the bus bandwidth), analyse the setup and run the NCCL rules.
// The CLI renders the outcome; the C++ API and Python can offer the same without a copy.
#pragma once

#include <ferret/ferret.h>

#include <functional>
#include <string>
#include <vector>

#include "analysis/nccl/nccl_setup.h"
#include "diagnosis/finding.h"
#include "ingest/nccl/nccl_log_parser.h"
#include "report/nccl/nccl_report.h"

namespace ferret {

struct NcclRequest {
  std::vector<std::string> logs;    // NCCL logs ("-" for stdin)
  std::vector<std::string> traces;  // Kineto traces of the same run
  NcclReadLimits limits;            // max_memory_bytes 0: the default memory limit
  unsigned trace_threads = 0;       // parser threads per trace; 0 = one per core
  // Called with each message as it arises: a log cut short, an input that could not be read.
  std::function<void(const std::string&)> on_message;
};

struct NcclOutcome {
  NcclSetup setup;
  std::vector<Finding> findings;
  std::vector<NcclInputError> errors;  // inputs that could not be read, for the report
  bool any_log = false;                // false: no log could be read (the command exits 2)
};

NcclOutcome run_nccl(const NcclRequest& request);

// The request of `ferret nccl LOGS` with these options (ferret::NcclSettings, which the command
// line's flags, the C++ API and Python's keywords all fill), validated as the command line does:
// OptionError naming the flag.
NcclRequest nccl_request_from(const std::vector<std::string>& logs, const NcclSettings& settings);
// Why the command fails before any report ("none of the NCCL logs could be read"); empty when it does not.
std::string nccl_failure(const NcclOutcome& outcome);
// The report as the command prints it on stdout: the JSON document (with its final newline),
// Markdown, or text in `style` (before the terminal-safe pass that printing makes).
std::string render_nccl(const NcclOutcome& outcome, Format format, const Style& style);

}  // namespace ferret
