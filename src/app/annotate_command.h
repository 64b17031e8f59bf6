// `ferret annotate` as one call: analyse a trace, then copy it through to the output with the
// diagnosis spliced in as trace events (report/trace/trace_annotation.h). The trace is read twice,
// so it must be a file. The CLI reports the outcome; the C++ API and Python can offer the same.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <ferret/ferret.h>

#include "analysis/analysis.h"
#include "ingest/load_options.h"
#include "report/trace/trace_annotation.h"

namespace ferret {

struct AnnotateRequest {
  std::string trace;   // a file: it is read twice
  std::string output;  // "-" for stdout; gzip when it ends in .gz unless `plain`
  bool plain = false;
  AnalysisOptions analysis;  // series_buckets and queue_series are set by run_annotate
  LoadOptions load;
  std::function<void()> loaded;  // called once the trace is loaded (the CLI ends its progress bar)
};

struct AnnotateOutcome {
  SpliceResult splice;
  AnnotationEvents added;               // the events written (and their counts)
  std::vector<std::string> load_notes;  // what loading repaired, skipped or noted
};

// Throws InputError for a trace that cannot be read, std::runtime_error for output I/O,
// std::bad_alloc when analysing runs out of memory. The output appears whole or not at all.
AnnotateOutcome run_annotate(const AnnotateRequest& request);

// The request of `ferret annotate TRACE -o OUTPUT` with these options (ferret::AnnotateSettings),
// validated as the command line does: OptionError for standard input as the trace (it is read
// twice), an output that is the trace itself, or a bad --steps, --time or --max-memory.
AnnotateRequest annotate_request_from(const std::string& trace, const std::string& output,
                                      const AnnotateSettings& settings);
// What the command prints on stderr once the output is written: what loading repaired, then the
// events added.
std::vector<std::string> annotate_messages(const AnnotateOutcome& outcome, const AnnotateRequest& request);

}  // namespace ferret
