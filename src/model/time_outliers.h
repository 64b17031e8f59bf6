// Time outliers: events whose timestamp (or end) lies far from every other event of their kind
// and process - a corrupted clock value, not a moment of the recording. One such event stretches
// a step to days or years and flips the verdict, so they are found once, after loading and before
// relations, and set aside (removed from the model, counted as a skip) or, when only the end is
// far, their duration is set to 0 (counted as a repair). The rule and its thresholds are in
// docs/RELIABILITY.md ("Time outliers").
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/trace_model.h"

namespace ferret {

// Events are judged within their group: GPU activity per device (pid), every other timed event
// per process (pid). Within a group, sorted times split into clusters wherever two neighbours are
// at least kOutlierMinGapNs apart. Clusters of more than kOutlierMaxRunEvents events are the
// recording ("the bulk"; a profiler schedule that waits between active windows makes several).
// An event is an outlier when its whole [start, end] lies at least
// max(kOutlierMinGapNs, kOutlierGapToSpan x the bulk's span) before or after the bulk, it sits in a
// cluster of at most kOutlierMaxRunEvents events, and the bulk holds at least
// kOutlierEvidenceRatio times as many events as the group's outliers together.
//
// One hour: real traces last milliseconds to hours, and no profiler leaves a few events of a
// process alone an hour away from all the others; a flipped bit at 2^42 ns or above, or a wrong
// digit in a microsecond timestamp, moves an event by more.
inline constexpr std::int64_t kOutlierMinGapNs = std::int64_t{3600} * 1000000000;
// Ten times the span of the rest: in a long recording (hours) an event an hour away is less
// surprising; it must then be far relative to the recording too.
inline constexpr double kOutlierGapToSpan = 10;
// A handful: a corruption touches one event or a few; an active profiler window of a process or
// device holds many more.
inline constexpr std::size_t kOutlierMaxRunEvents = 4;
// Too little evidence otherwise: with 2-3 events (or a bulk not much larger than the far
// events) nothing says which side is the recording.
inline constexpr std::size_t kOutlierEvidenceRatio = 8;

inline constexpr const char* kTimeOutlierSkip = "event far in time from every other event of its kind and process";
inline constexpr const char* kTimeOutlierDurationRepair =
    "duration reaching far past every other event of its kind and process set to 0";

struct TimeOutlierResult {
  std::uint64_t set_aside = 0;         // events removed from the model
  std::uint64_t durations_zeroed = 0;  // events kept with their duration set to 0
};

// Finds the outliers of a freshly loaded model (before build_relations), removes them, zeroes
// the far-reaching durations, and records both in model.report. One pass over the events when no
// process or device spans an hour or more; otherwise a few more, each event binned by the hour it
// falls in (O(n log h) for h occupied hours; no sort, no copy of the times).
TimeOutlierResult set_aside_time_outliers(TraceModel& model);

}  // namespace ferret
