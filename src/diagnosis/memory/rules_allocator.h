// Allocator snapshot rules (`ferret memory`): they read AllocatorStateResult
// (analysis/memory/allocator_state.h) and emit memory findings. A snapshot measures no time, so these
// findings bound no speed-up (max_speedup 1); what they win back is memory.
#pragma once

#include <vector>

#include "analysis/memory/allocator_state.h"
#include "diagnosis/finding.h"
#include "model/memory_text.h"

namespace ferret {

void rules_allocator(const AllocatorStateResult& state, std::vector<Finding>& out);
// The same questions asked of text (model/memory_text.h): out-of-memory messages (oom-fragmentation,
// oom-capacity, oom-other-processes) and the last memory_summary() of each device (summary-*).
void rules_memory_text(const MemoryText& text, std::vector<Finding>& out);

}  // namespace ferret
