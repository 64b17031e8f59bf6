// The one mapping from `ferret analyze`'s options (ferret::AnalyzeOptions, include/ferret/ferret.h:
// the struct the command line's flags, the C++ API and Python's keywords all fill) to what the
// analyses read. The CLI and the API both call it, so that an option cannot mean one thing on the
// command line and another in a library call.
#pragma once

#include <ferret/ferret.h>

#include "analysis/analysis.h"

namespace ferret {

// Validates as the command line does: a bad --steps, --time, --peaks file, DataLoader or host
// document throws OptionError or InputError naming the option and what was wrong.
AnalysisOptions analysis_options_from(const AnalyzeOptions& options);

}  // namespace ferret
