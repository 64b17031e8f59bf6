// `ferret nccl` as one call: read the NCCL_DEBUG=INFO logs of any or all ranks (and, optionally,
// Kineto traces of the same run for the bus bandwidth), analyse the setup and run the NCCL rules.
// The CLI renders the outcome; the C++ API and Python can offer the same without a copy.
#pragma once

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

}  // namespace ferret
