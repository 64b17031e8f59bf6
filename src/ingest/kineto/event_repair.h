// Repairs of one event whose bytes simdjson refused (event_parser's one-event-at-a-time path):
// control characters and invalid UTF-8 in place, and the number and comma leniencies
// (docs/JSON.md) by rewriting the event as standard JSON. Each says what it changed, so that the
// parser counts every repair under its reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ferret {

// In-place repairs that keep the event's length: raw control characters become spaces (outside
// strings they were whitespace anyway) and bytes of invalid UTF-8 sequences become '?'.
void repair_bytes(char* p, std::size_t n, bool& changed_control, bool& changed_utf8);

// What lenient_rewrite changed in one event.
struct LenientFixes {
  std::uint64_t numbers = 0;         // "+1", ".5", "01", "1." -> standard JSON
  std::uint64_t nan_ids = 0;         // NaN/Infinity as a correlation or External id -> null
  std::uint64_t nan_values = 0;      // NaN/Infinity elsewhere -> null
  std::uint64_t missing_commas = 0;  // between fields or array elements
  bool any() const { return numbers + nan_ids + nan_values + missing_commas > 0; }
};

// The event rewritten as standard JSON: lenient numbers made standard, NaN/Infinity as null,
// missing commas put in; `fixes` counts each.
std::string lenient_rewrite(std::string_view in, LenientFixes& fixes);

// Every control character becomes a space (the last resort before an event is skipped).
void blank_all_controls(char* p, std::size_t n);

// The repair reason for an event whose "ph" is not one of the Trace Event Format's phases: the
// phase itself when it is one printable character.
std::string unknown_phase_reason(char ph, bool one_char);

}  // namespace ferret
