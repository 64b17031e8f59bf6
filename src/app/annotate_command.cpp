#include "app/annotate_command.h"

#include <fmt/format.h>

#include "analysis/analysis_options.h"
#include "analysis/trace_analysis.h"
#include "app/option_values.h"
#include "base/input_error.h"
#include "base/safe_file.h"
#include "base/trace_writer.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"

namespace ferret {

AnnotateOutcome run_annotate(const AnnotateRequest& request) {
  AnalysisOptions analysis = request.analysis;
  analysis.series_buckets = kAnnotationSeriesBuckets;
  analysis.queue_series = true;
  AnnotateOutcome out;
  {
    const TraceModel model = load_trace(request.trace, request.load);
    if (request.loaded) request.loaded();
    const TraceAnalysis a = analyze_trace(model, analysis);
    out.added = annotation_events(model, a, diagnose(a));
    out.load_notes = model.report.lines();
  }  // the model goes before the copy: only the added events stay in memory
  OpenedSource in = open_byte_source(request.trace, request.load.inflation);
  const OutputCompression compression = output_compression_for(request.output, false, request.plain);
  OutputFile file(request.output, compression, {request.trace});
  out.splice = splice_trace(*in.source, request.trace, out.added.events, file);
  file.close();
  return out;
}

AnnotateRequest annotate_request_from(const std::string& trace, const std::string& output,
                                      const AnnotateSettings& settings) {
  if (trace == "-") throw OptionError("annotate reads the trace twice (to analyse it, then to copy it): give a file");
  try {
    refuse_if_an_input(output, {trace});
  } catch (const std::runtime_error& e) {
    throw OptionError(std::string("--output ") + e.what());
  }
  AnnotateRequest request;
  request.trace = trace;
  request.output = output;
  request.plain = settings.plain;
  parse_step_range(settings.steps, request.analysis);
  parse_time_range(settings.time, request.analysis);
  request.analysis.window_name = settings.window;
  if (settings.device >= 0) request.analysis.device = settings.device;
  request.load.threads = settings.threads;
  request.load.max_memory_bytes = max_memory_option(settings.max_memory);
  return request;
}

std::vector<std::string> annotate_messages(const AnnotateOutcome& outcome, const AnnotateRequest& request) {
  std::vector<std::string> lines;
  for (const std::string& n : outcome.load_notes) lines.push_back(request.trace + ": " + n);
  if (!outcome.splice.repair.empty()) lines.push_back(outcome.splice.repair);
  const AnnotationEvents& added = outcome.added;
  lines.push_back(fmt::format(
      "{}: the trace ({} bytes copied unchanged) and {} ferret events: {} counter samples, {} step spans, {} "
      "finding marks (process \"ferret\", pid {})",
      request.output, outcome.splice.bytes_copied, added.events.size(), added.counters, added.steps,
      added.finding_marks, added.pid));
  return lines;
}

}  // namespace ferret
