// Event classification: from a trace event's phase, category and name to its EventKind.
#pragma once

#include <string_view>

#include "model/trace_model.h"

namespace ferret {

// The kind of an 'X' span from its category alone (kOther when unknown).
EventKind classify_span_category(std::string_view cat);
// The kind of any event. `has_cat` is false when the event has no "cat" field at all.
// An MTIA device activity ("mtia_ccp_events") by its name: event_wait a wait, dma_request a copy,
// event_record an event record, anything else a kernel.
EventKind classify_mtia_activity(std::string_view name);
EventKind classify_event(char phase, std::string_view cat, bool has_cat, std::string_view name);

}  // namespace ferret
