#include "model/allocator_snapshot.h"

namespace ferret {

const char* allocator_action_name(AllocatorAction a) {
  switch (a) {
    case AllocatorAction::kAlloc: return "alloc";
    case AllocatorAction::kFreeRequested: return "free_requested";
    case AllocatorAction::kFreeCompleted: return "free_completed";
    case AllocatorAction::kSegmentAlloc: return "segment_alloc";
    case AllocatorAction::kSegmentFree: return "segment_free";
    case AllocatorAction::kSegmentMap: return "segment_map";
    case AllocatorAction::kSegmentUnmap: return "segment_unmap";
    case AllocatorAction::kSnapshot: return "snapshot";
    case AllocatorAction::kOom: return "oom";
    case AllocatorAction::kOther: return "other";
  }
  return "other";
}

}  // namespace ferret
