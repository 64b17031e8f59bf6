// `ferret memory` as one call: each file (an allocator snapshot, or text holding memory_summary()
// tables and out-of-memory messages, told by content) read, analysed and run through its rules.
// The CLI renders the outcome; the C++ API and Python can offer the same without a copy.
#pragma once

#include <ferret/ferret.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "report/memory/memory_report.h"

namespace ferret {

struct MemoryRequest {
  std::vector<std::string> files;
  std::uint64_t max_memory_bytes = 0;  // bound while reading; 0 = the readers' default
  // Called with each message as it arises: a file that could not be read.
  std::function<void(const std::string&)> on_message;
};

struct MemoryOutcome {
  std::vector<MemoryReportInput> inputs;  // one per file read, in the order given
  bool failed = false;                    // a file could not be read (the command exits 2)
};

MemoryOutcome run_memory(const MemoryRequest& request);

// The request of `ferret memory FILES` with these options (ferret::MemorySettings), validated as
// the command line does: OptionError.
MemoryRequest memory_request_from(const std::vector<std::string>& files, const MemorySettings& settings);
// The report as the command prints it on stdout (JSON with its final newline, Markdown, or text).
std::string render_memory(const MemoryOutcome& outcome, Format format, const Style& style);

}  // namespace ferret
