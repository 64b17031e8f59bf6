// The public entry point of ingestion: a trace file (any generation, any compression) -> TraceModel.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ingest/byte_source.h"
#include "ingest/load_options.h"
#include "model/trace_model.h"

namespace ferret {

// Loads a trace file; "-" reads stdin. Throws InputError when nothing usable can be read (not
// found, not JSON, not a trace); a partly broken trace loads, with its repairs in model.report.
TraceModel load_trace(const std::string& path, const LoadOptions& options = {});

// Loads from an already opened source (tests, generated data).
TraceModel load_trace_from(ByteSource& source, const std::string& name, const std::string& compression,
                           const LoadOptions& options = {});

// Convenience for tests: a trace given as JSON text.
TraceModel load_trace_text(std::string json, const LoadOptions& options = {});

}  // namespace ferret
