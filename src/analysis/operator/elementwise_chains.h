// Chains of memory-bound kernels between two matrix kernels on one stream: the element-wise,
// normalisation, softmax and reduction kernels an eager model runs one by one between its GEMMs
// (bias, activation, dropout, residual add, norm), each reading its input from memory and writing
// its output back. A compiler (torch.compile's Inductor) fuses such a chain into one kernel that
// reads the chain's input and writes its output once.
//
// A kernel's kind is the cost-model kind of the innermost op around its launch that has one
// (analysis/op_cost: elementwise, reduction, norm, softmax are memory-bound kinds; GEMM,
// convolution, attention are matrix kinds), else its name (Tensor Core and GEMM kernels are
// matrix kernels; PyTorch's `elementwise_kernel` / `reduce_kernel` families memory-bound ones).
// Inductor's Triton kernels are fused already: they break a chain. So does a kernel of any other
// kind, and graph replays are left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace ferret {

// A chain has at least this many kernels: two kernels between GEMMs (a bias and an activation)
// are often one already-fused epilogue away; three or more are a chain a compiler merges (ferret's).
inline constexpr std::size_t kMinChainKernels = 3;

// Chains with the same sequence of ops, summed.
struct ElementwiseChainPattern {
  std::string ops;  // "aten::add > aten::gelu > aten::mul" (at most 6 names, then "... (+N)")
  std::uint64_t occurrences = 0;
  std::uint64_t kernels = 0;   // per occurrence
  std::int64_t kernel_ns = 0;  // summed over the occurrences
  std::int64_t fused_ns = 0;   // the estimated fused kernels' time, summed
  std::int64_t saved_ns() const { return kernel_ns - fused_ns; }
};

struct ElementwiseChainsResult {
  std::uint64_t chains = 0;
  std::uint64_t kernels = 0;   // in chains
  std::int64_t kernel_ns = 0;  // the chains' kernels
  // One fused kernel per chain reads the chain's input and writes its output once: for
  // memory-bound kernels, whose time follows their bytes, about half of the first kernel's time
  // (its read) plus half of the last's (its write).
  std::int64_t fused_ns = 0;
  bool compiled = false;  // the window runs Inductor (Triton) kernels: chains are what it left unfused
  std::vector<ElementwiseChainPattern> patterns;  // by saved time, descending
  std::vector<EventIndex> chain_kernels;          // the chains' kernels, ascending: what fusion shortens
  std::int64_t saved_ns() const { return kernel_ns - fused_ns; }
};

ElementwiseChainsResult analyze_elementwise_chains(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
