// Inflate a real trace to a target size: its events repeated copy after copy, each copy shifted
// in time and given fresh ids, so that the result is still one valid, consistent trace.
//
// Events are edited as text: only the tokens that must change (ts, ids, ProfilerStep numbers)
// are rewritten, so every other field and arg survives byte for byte. Copy 0 is the input itself.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/trace_writer.h"

namespace ferret {

struct InflateOptions {
  std::string input;   // a trace file; it is read once per copy, so stdin is not accepted
  std::string output;  // "-" writes to stdout
  OutputCompression compression = OutputCompression::kNone;
  std::uint64_t target_bytes = 0;  // stop after the copy that brings the uncompressed output to this size
  std::uint64_t copies = 0;        // exact number of copies; overrides target_bytes when > 0
  std::int64_t gap_ns = 10'000;    // idle time between the end of one copy and the start of the next
  // Called after each copy with (uncompressed bytes written, target or 0).
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

struct InflateResult {
  std::uint64_t copies = 0;
  std::uint64_t events_per_copy = 0;  // non-metadata events of the input
  std::uint64_t metadata_events = 0;  // 'M' events, written once
  std::uint64_t events_written = 0;   // copies * events_per_copy + metadata_events
  std::uint64_t skipped_events = 0;   // input events that are not valid JSON (left out of every copy)
  std::int64_t first_ts_ns = 0;       // earliest ts of a non-metadata event in the input
  std::int64_t last_end_ns = 0;       // latest ts + dur
  std::int64_t period_ns = 0;         // time shift from one copy to the next (whole microseconds)
  std::int64_t id_stride = 0;         // added to every id per copy: a power of ten above the largest id
  std::int64_t step_stride = 0;       // added to ProfilerStep numbers per copy
  std::uint64_t json_bytes = 0;       // uncompressed output size
  std::uint64_t file_bytes = 0;       // size of the file written
  std::vector<std::string> warnings;  // input defects carried over, early stops
};

// Throws InputError for an unreadable input and std::runtime_error for output failures.
InflateResult inflate_trace(const InflateOptions& options);

// The args whose integer values are ids, made unique per copy (the top-level flow "id" is too).
// Exposed so tests check the same list the inflater uses.
const std::vector<std::string>& inflated_id_args();

}  // namespace ferret
