// Name-based classification shared by several analyses.
#pragma once

#include <string_view>

namespace ferret {

// NCCL / RCCL collective and point-to-point kernels ("ncclKernel_*", "ncclDevKernel_*", "rccl*").
bool is_communication_kernel(std::string_view kernel_name);
// Host spans that wait for input: "enumerate(DataLoader)#..." and "enumerate(DataPipe)#...".
bool is_dataloader_span(std::string_view name);

}  // namespace ferret
