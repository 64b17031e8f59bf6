// GPU utilisation log rules (`ferret smi`): they read SmiStats (analysis/smi/smi_stats.h) and emit
// findings: a starved GPU, idle periods at regular intervals, one GPU unlike the others,
// throttling. Every threshold and its source sits beside its rule in rules_smi.cpp; docs/SMI.md
// lists them.
#pragma once

#include <vector>

#include "analysis/smi/smi_stats.h"
#include "diagnosis/finding.h"

namespace ferret {

// `log` names the GPUs in titles (its source when there are several).
// What the utilisation-log rules read: the log and the statistics computed from it.
struct SmiEvidence {
  const SmiLog& log;
  const SmiStats& stats;
};

void rules_smi(const SmiLog& log, const SmiStats& stats, std::vector<Finding>& out);

// "GPU 0", or "GPU 0 of node-a.csv" when the log holds several sources; terminal-safe.
std::string smi_gpu_label(const SmiLog& log, std::uint32_t gpu);

}  // namespace ferret
