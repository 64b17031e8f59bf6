// The public entry point of ingestion: a trace file (any generation, any compression) -> TraceModel.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ingest/byte_source.h"
#include "ingest/json_scanner.h"
#include "ingest/memory_limit.h"
#include "model/trace_model.h"

namespace ferret {

struct LoadOptions {
  unsigned threads = 0;         // parser threads; 0 = one per core
  bool build_relations = true;  // nesting, correlation, steps (model/relations.h)
  ScanLimits limits;
  InflationLimits inflation;
  // Stop loading (keeping what was read, with a note) once the model, the buffers of ingestion and
  // what relations and the analyses are expected to need for it reach this many bytes.
  // 0: default_memory_limit(), 3/4 of physical memory or of the cgroup limit.
  std::uint64_t max_memory_bytes = 0;
  std::string max_memory_origin;  // where max_memory_bytes came from, for the note; "" = --max-memory
  // Called now and then from the loading thread with (input bytes consumed, input size or 0).
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

// Loads a trace file; "-" reads stdin. Throws InputError when nothing usable can be read (not
// found, not JSON, not a trace); a partly broken trace loads, with its repairs in model.report.
TraceModel load_trace(const std::string& path, const LoadOptions& options = {});

// Loads from an already opened source (tests, generated data).
TraceModel load_trace_from(ByteSource& source, const std::string& name, const std::string& compression,
                           const LoadOptions& options = {});

// Convenience for tests: a trace given as JSON text.
TraceModel load_trace_text(std::string json, const LoadOptions& options = {});

// The default memory limit in bytes (default_memory_limit() in ingest/memory_limit.h).
std::uint64_t default_max_memory_bytes();
// What ingestion holds beside the model with `threads` parsers: batches in flight and pooled, and
// the parsers' indexes. Counted against the memory limit.
std::uint64_t ingest_buffer_bytes(unsigned threads, std::size_t batch_bytes);

// The note a JSON document without a "traceEvents" array (and not a bare event array) gets: it
// is some other JSON file, not a trace.
inline constexpr const char* kNotATraceDocument = "no \"traceEvents\" array in the document";

// Leniencies beyond strict JSON that the reader accepts, each counted under its own reason
// (docs/JSON.md lists them).
inline constexpr const char* kMissingCommaReason = "missing comma between events (accepted)";
inline constexpr const char* kCommentReason = "comment (// or /* */) skipped";
// `ferret annotate` adds its view to a trace as events of this category; read back, they are left
// out (and counted under kAnnotationReason) so that an annotated trace analyses as the original.
inline constexpr const char* kAnnotationCategory = "ferret";
inline constexpr const char* kAnnotationReason = "ferret annotate's own events (category \"ferret\") left out";
inline constexpr const char* kMergedArraysReason =
    "repeated \"traceEvents\" array: events merged into one list (count: events merged)";

}  // namespace ferret
