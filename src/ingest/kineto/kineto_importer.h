// The Kineto JSON importer: Kineto traces of every torch generation and the legacy autograd
// array. The seam (ingest/importer.h) registers it as the built-in "kineto-json" importer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ingest/byte_source.h"
#include "ingest/load_options.h"
#include "model/model_builder.h"

namespace ferret {

// How sure the input is Kineto JSON (an importer's sniff: 0 = not this format, 100 = surest).
int sniff_kineto_json(std::string_view head);

// Scans, parses on worker threads and merges in order into the builder; then the root object's
// other keys and what the scan repaired or skipped.
void load_kineto_json(ByteSource& source, const std::string& name, const LoadOptions& options, ModelBuilder& builder);

// What ingestion holds beside the model with `threads` parsers: batches in flight and pooled, and
// the parsers' indexes. Counted against the memory limit.
std::uint64_t ingest_buffer_bytes(unsigned threads, std::size_t batch_bytes);

}  // namespace ferret
