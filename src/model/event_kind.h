// Event classification: from a trace event's phase, category and name to its EventKind.
#pragma once

#include <string_view>

#include "model/trace_model.h"

namespace ferret {

// The kind of an 'X' span from its category alone (kOther when unknown).
EventKind classify_span_category(std::string_view cat);
// The kind of any event. `has_cat` is false when the event has no "cat" field at all.
EventKind classify_event(char phase, std::string_view cat, bool has_cat, std::string_view name);

}  // namespace ferret
