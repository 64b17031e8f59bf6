#include "model/memory_text.h"

#include "base/units.h"

namespace ferret {

const char* summary_metric_name(SummaryMetric m) {
  switch (m) {
    case SummaryMetric::kAllocated: return "Allocated memory";
    case SummaryMetric::kActive: return "Active memory";
    case SummaryMetric::kRequested: return "Requested memory";
    case SummaryMetric::kReserved: return "GPU reserved memory";
    case SummaryMetric::kNonReleasable: return "Non-releasable memory";
    case SummaryMetric::kAllocations: return "Allocations";
    case SummaryMetric::kActiveAllocs: return "Active allocs";
    case SummaryMetric::kSegments: return "GPU reserved segments";
    case SummaryMetric::kNonReleasableAllocs: return "Non-releasable allocs";
    case SummaryMetric::kOversizeAllocations: return "Oversize allocations";
    case SummaryMetric::kOversizeSegments: return "Oversize GPU segments";
  }
  return "?";
}

const char* summary_metric_key(SummaryMetric m) {
  switch (m) {
    case SummaryMetric::kAllocated: return "allocated_bytes";
    case SummaryMetric::kActive: return "active_bytes";
    case SummaryMetric::kRequested: return "requested_bytes";
    case SummaryMetric::kReserved: return "reserved_bytes";
    case SummaryMetric::kNonReleasable: return "non_releasable_bytes";
    case SummaryMetric::kAllocations: return "allocations";
    case SummaryMetric::kActiveAllocs: return "active_allocs";
    case SummaryMetric::kSegments: return "segments";
    case SummaryMetric::kNonReleasableAllocs: return "non_releasable_allocs";
    case SummaryMetric::kOversizeAllocations: return "oversize_allocations";
    case SummaryMetric::kOversizeSegments: return "oversize_segments";
  }
  return "?";
}

std::int64_t OomMessage::other_processes_bytes() const {
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < processes.size(); ++i)
    if (static_cast<int>(i) != self_index && processes[i].bytes > 0) sum = saturating_add(sum, processes[i].bytes);
  return sum;
}

}  // namespace ferret
