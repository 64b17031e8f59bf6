// `ferret smi` as one call: read GPU utilisation logs (nvidia-smi, DCGM, rocm-smi, amd-smi), place
// Kineto traces of the same run on their clock, and run the utilisation rules. The CLI renders the
// outcome; the C++ API and Python can offer the same without a copy.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analysis/smi/smi_stats.h"
#include "diagnosis/finding.h"
#include "ingest/smi/smi_log_parser.h"
#include "report/smi/smi_report.h"

namespace ferret {

struct SmiRequest {
  std::vector<std::string> logs;    // utilisation logs ("-" for stdin)
  std::vector<std::string> traces;  // Kineto traces of the same run, placed on the logs' clock
  SmiReadOptions read;              // max_memory_bytes 0: the default memory limit
  unsigned trace_threads = 0;       // parser threads per trace; 0 = one per core
  // Called with each message as it arises: a log cut short, an input that could not be read.
  std::function<void(const std::string&)> on_message;
};

struct SmiOutcome {
  SmiLog log;
  SmiStats stats;
  std::vector<Finding> findings;
  std::vector<SmiInputError> errors;  // inputs that could not be read, for the report
  bool any_log = false;               // false: no log could be read (the command exits 2)
};

SmiOutcome run_smi(const SmiRequest& request);

}  // namespace ferret
