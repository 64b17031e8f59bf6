// The fixes for communication a job cannot hide or should send less of, chosen by how the job
// parallelises (analysis/timeline/communication.h ParallelStyle): one home for the single-trace rules
// (rules_distributed.cpp) and the job's (job/rules_job.cpp), so both give the same advice.
#pragma once

#include <vector>

#include "analysis/timeline/communication.h"
#include "diagnosis/finding.h"

namespace ferret {

// Hiding it: overlap with backward, prefetch, pipelining. `on_host`: gloo collectives on the CPU.
std::vector<Fix> overlap_fixes(const ParallelStyleShare& style, bool on_host);
// Sending less of it: accumulation, compression, bigger batches, sharding inside a node.
std::vector<Fix> volume_fixes(const ParallelStyleShare& style, bool on_host);

}  // namespace ferret
