#include "app/whatif_command.h"

#include <fmt/format.h>

#include "analysis/analysis_options.h"
#include "analysis/trace_analysis.h"
#include "app/option_values.h"
#include "base/input_error.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "report/trace/whatif_report.h"

namespace ferret {

namespace {

// `--fix ID`: the change the diagnosis re-timed for finding ID, so that `whatif` and `analyze`
// give one number for one cause.
void add_fix_of_finding(const TraceModel& model, const AnalysisOptions& options, const std::string& trace,
                        const std::string& id, RetimeChanges& changes) {
  const Diagnosis d = diagnose(analyze_trace(model, options));
  std::string predicted;
  for (const Finding& f : d.findings) {
    if (f.id == id) {
      merge_whatif_changes(changes, fix_change_of(f));
      if (f.predicted_speedup <= 0)
        throw OptionError(
            fmt::format("--fix: the diagnosis of {} cannot re-time the fix of '{}' (its gain is a "
                        "ceiling only)",
                        trace, id));
      return;
    }
    if (f.predicted_speedup > 0) predicted += (predicted.empty() ? "" : ", ") + f.id;
  }
  throw OptionError(fmt::format("--fix: {} has no finding '{}'; findings with a predicted gain: {}", trace, id,
                                predicted.empty() ? "none" : predicted));
}

}  // namespace

WhatIfOutcome run_whatif(const WhatIfRequest& request) {
  WhatIfOutcome out;
  out.model = load_trace(request.trace, request.load);
  if (request.loaded) request.loaded();
  out.context = make_analysis_context(out.model, request.analysis);
  RetimeChanges changes = request.changes;
  if (!request.fix.empty()) add_fix_of_finding(out.model, request.analysis, request.trace, request.fix, changes);
  out.result = analyze_whatif(out.model, out.context, changes);
  return out;
}

WhatIfRequest whatif_request_from(const std::string& trace, const WhatIfSettings& settings) {
  WhatIfRequest request;
  request.trace = trace;
  for (const std::string& r : settings.remove) parse_whatif_removal(r, request.changes);
  for (const std::string& s : settings.speedup) parse_whatif_speedup(s, request.changes);
  request.fix = settings.fix;
  parse_step_range(settings.steps, request.analysis);
  if (settings.device >= 0) request.analysis.device = settings.device;
  request.load.threads = settings.threads;
  request.load.max_memory_bytes = max_memory_option(settings.max_memory);
  return request;
}

std::string whatif_failure(const WhatIfOutcome& outcome, const std::string& trace) {
  return outcome.result.steps.empty() ? trace + ": no step to re-time: the window holds no work" : std::string();
}

std::string render_whatif(const WhatIfOutcome& outcome, Format format, const Style& style) {
  if (format == Format::kJson)
    return whatif_json(outcome.model, outcome.context, outcome.result)
               .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
           "\n";
  return whatif_text(outcome.model, outcome.context, outcome.result, style);
}

}  // namespace ferret
