// NCCL setup rules: what an NCCL_DEBUG=INFO log says is wrong with a job's communication setup
// (transport, GPU Direct RDMA, peer-to-peer, versions, configuration, missing ranks, init time,
// warnings) and, given a trace, whether the bus bandwidth fits the transport. Every threshold and
// its source sits beside its rule in rules_nccl.cpp; docs/NCCL.md lists them.
#pragma once

#include <vector>

#include "analysis/nccl/nccl_setup.h"
#include "diagnosis/finding.h"

namespace ferret {

void rules_nccl(const NcclSetup& setup, std::vector<Finding>& out);

}  // namespace ferret
