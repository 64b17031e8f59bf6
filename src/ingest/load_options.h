// What every importer reads by (LoadOptions) and the repair and skip reasons ingestion shares:
// the seam's types, apart from trace_loader.h so that an importer needs no part of the loader.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "ingest/byte_source.h"
#include "ingest/kineto/json_scanner.h"
#include "ingest/proc/memory_limit.h"

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

// The default memory limit in bytes: default_memory_limit() (ingest/proc/memory_limit.h).
inline std::uint64_t default_max_memory_bytes() { return default_memory_limit().bytes; }

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
