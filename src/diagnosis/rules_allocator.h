// Allocator snapshot rules (`ferret memory`): they read AllocatorStateResult
// (analysis/allocator_state.h) and emit memory findings. A snapshot measures no time, so these
// findings bound no speed-up (max_speedup 1); what they win back is memory.
#pragma once

#include <vector>

#include "analysis/allocator_state.h"
#include "diagnosis/finding.h"

namespace ferret {

void rules_allocator(const AllocatorStateResult& state, std::vector<Finding>& out);

}  // namespace ferret
