// Renders `ferret memory`: the allocator state of each snapshot (analysis/allocator_state.h) with
// its findings, as text, Markdown (trace text escaped) and JSON (schema ferret.memory/1,
// docs/MEMORY.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/allocator_state.h"
#include "diagnosis/finding.h"
#include "report/format.h"

namespace ferret {

struct MemoryReportInput {
  std::string source;
  AllocatorStateResult state;
  std::vector<Finding> findings;
};

std::string memory_text(const std::vector<MemoryReportInput>& inputs, const Style& style);
std::string memory_markdown(const std::vector<MemoryReportInput>& inputs);
nlohmann::ordered_json memory_json(const std::vector<MemoryReportInput>& inputs);

}  // namespace ferret
