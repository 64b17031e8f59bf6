// `ferret whatif` as one call: load a trace, add the fix of a finding when one is named, and
// re-time each step's dependency graph with the changes. The CLI renders the outcome (it needs
// the model and the window as well as the result); the C++ API and Python can offer the same.
#pragma once

#include <functional>
#include <string>

#include "analysis/analysis.h"
#include "analysis/causal/whatif.h"
#include "ingest/load_options.h"
#include "model/trace_model.h"

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

}  // namespace ferret
