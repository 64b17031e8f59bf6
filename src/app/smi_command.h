// `ferret smi` as one call: read GPU utilisation logs (nvidia-smi, DCGM, rocm-smi, amd-smi), place
// Kineto traces of the same run on their clock, and run the utilisation rules. The CLI renders the
// outcome; the C++ API and Python can offer the same without a copy.
#pragma once

#include <ferret/ferret.h>

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

// The request of `ferret smi LOGS` with these options (ferret::SmiSettings: the command line's
// flags, the C++ API and Python's keywords), validated as the command line does: OptionError.
SmiRequest smi_request_from(const std::vector<std::string>& logs, const SmiSettings& settings);
// "+02:00", "-0530", "+2", "0" -> seconds east of UTC (--utc-offset); OptionError otherwise.
std::int64_t smi_utc_offset(const std::string& text);
// Why the command fails: no log could be read (before any report), or no log held a readable
// sample (after it); empty when it does not.
std::string smi_failure_before_report(const SmiOutcome& outcome);
std::string smi_failure_after_report(const SmiOutcome& outcome);
// The report as the command prints it on stdout (JSON with its final newline, Markdown, or text).
std::string render_smi(const SmiOutcome& outcome, Format format, const Style& style);

}  // namespace ferret
