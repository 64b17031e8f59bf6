// Renders `ferret memory`: the allocator state of each snapshot (analysis/memory/allocator_state.h), or
// the memory_summary() tables and out-of-memory messages of each text (model/memory_text.h), with
// their findings, as text, Markdown (input text escaped) and JSON (schema ferret.memory/1,
// docs/MEMORY.md: snapshots under "snapshots", texts under "texts").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/memory/allocator_state.h"
#include "diagnosis/finding.h"
#include "model/memory_text.h"
#include "report/format.h"

namespace ferret {

struct MemoryReportInput {
  std::string source;
  bool is_text = false;        // text (summaries, out-of-memory messages) rather than a snapshot
  AllocatorStateResult state;  // a snapshot's
  MemoryText text;             // text's
  std::vector<Finding> findings;
};

std::string memory_text(const std::vector<MemoryReportInput>& inputs, const Style& style);
std::string memory_markdown(const std::vector<MemoryReportInput>& inputs);
nlohmann::ordered_json memory_json(const std::vector<MemoryReportInput>& inputs);

}  // namespace ferret
