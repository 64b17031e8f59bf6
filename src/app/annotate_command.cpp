#include "app/annotate_command.h"

#include "analysis/trace_analysis.h"
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

}  // namespace ferret
