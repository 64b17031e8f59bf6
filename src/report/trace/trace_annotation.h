// `ferret annotate`: the original trace with ferret's view added as native trace events, so that
// Perfetto UI and chrome://tracing show the diagnosis on the timeline.
//
// Two parts. annotation_events() turns one analysed trace into events of a process of its own
// ("ferret"): counter tracks (GPU busy, launch queue, memory allocated and reserved), one span per
// step named with its breakdown, and per finding a track of spans where its cause happens (the
// stalls, syncs, idle gaps, collectives; the analysed window when it is not one place in time).
// splice_trace() then streams the original document to the output byte for byte and puts those
// events at the end of its traceEvents array: memory stays a few buffers and the events to add,
// whatever the size of the trace.
//
// Every added event has category "ferret" (kAnnotationCategory, ingest/trace_loader.h): ferret's
// loader leaves them out
// (counted in the load notes), so an annotated trace analyses exactly as the original.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "base/trace_writer.h"
#include "diagnosis/diagnose.h"
#include "ingest/byte_source.h"
#include "ingest/trace_loader.h"
#include "model/trace_model.h"

namespace ferret {

// Buckets of the counter tracks: fine enough to zoom into a step of a long window, a few hundred
// kB of events at most.
inline constexpr int kAnnotationSeriesBuckets = 2000;

struct AnnotationEvents {
  std::vector<std::string> events;  // whole JSON objects
  std::int32_t pid = 0;             // the process they are drawn under
  std::uint64_t counters = 0;       // counter samples
  std::uint64_t steps = 0;          // step spans
  std::uint64_t finding_marks = 0;  // finding spans and instants
};

// The analysis must have been made with AnalysisOptions::series_buckets and queue_series set (the
// counters read its curves); diagnosis is diagnose(analysis).
AnnotationEvents annotation_events(const TraceModel& model, const TraceAnalysis& analysis, const Diagnosis& diagnosis);

struct SpliceResult {
  std::uint64_t bytes_in = 0;      // decompressed bytes read
  std::uint64_t bytes_copied = 0;  // of them, written unchanged
  bool events_array_found = false;
  // A document that ended early (truncated): what was dropped after its last complete event and
  // what was closed, for the user's note; empty when the document was whole.
  std::string repair;
};

// Copies the JSON trace in `source` (`name` for messages) to `out`, inserting `events` as the last
// elements of its traceEvents array (the root array of a bare-array trace; a "traceEvents" key is
// added when the root object has none). Throws InputError when the document is not a JSON object or
// array, naming the byte offset.
SpliceResult splice_trace(ByteSource& source, const std::string& name, const std::vector<std::string>& events,
                          OutputFile& out);

}  // namespace ferret
