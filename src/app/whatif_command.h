// `ferret whatif` as one call: load a trace, add the fix of a finding when one is named, and
// re-time each step's dependency graph with the changes. The CLI renders the outcome (it needs
// the model and the window as well as the result); the C++ API and Python can offer the same.
#pragma once

#include <ferret/ferret.h>

#include <functional>
#include <string>

#include "analysis/analysis.h"
#include "analysis/causal/whatif.h"
#include "ingest/load_options.h"
#include "model/trace_model.h"
#include "report/format.h"

namespace ferret {

struct WhatIfRequest {
  std::string trace;      // "-" for stdin
  RetimeChanges changes;  // --remove and --speedup, parsed
  std::string fix;        // a finding id of `ferret analyze`: its fix's change is re-timed too
  AnalysisOptions analysis;
  LoadOptions load;
  std::function<void()> loaded;  // called once the trace is loaded (the CLI ends its progress bar)
};

struct WhatIfOutcome {
  TraceModel model;
  AnalysisContext context;
  WhatIfResult result;
};

// Throws InputError for a trace that cannot be read, OptionError for a --fix the diagnosis
// cannot re-time, std::bad_alloc when re-timing runs out of memory.
WhatIfOutcome run_whatif(const WhatIfRequest& request);

// The request of `ferret whatif TRACE` with these options (ferret::WhatIfSettings: the command
// line's flags, the C++ API and Python's keywords), validated as the command line does:
// OptionError for a bad --remove, --speedup, --steps or --max-memory.
WhatIfRequest whatif_request_from(const std::string& trace, const WhatIfSettings& settings);
// Why the command fails after its report ("no step to re-time"); empty when it does not.
std::string whatif_failure(const WhatIfOutcome& outcome, const std::string& trace);
// The report as the command prints it on stdout: JSON with its final newline, or text.
std::string render_whatif(const WhatIfOutcome& outcome, Format format, const Style& style);

}  // namespace ferret
