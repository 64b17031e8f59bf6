// The achieved rate of the host's own matrix multiplications: aten::mm, addmm, bmm and baddbmm
// calls that run on the CPU (no device work launched under them), with recorded shapes, in fp32 or
// fp64. Their FLOPs come from the shapes (analysis/operator/op_cost.h), their time from the op spans. A
// rate far below what any optimised BLAS reaches names the library, not the model, as the cost.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/analysis.h"

namespace ferret {

// Calls below this much work are latency, not rate: a 100 MFLOP GEMM (e.g. 256 x 512 x 384)
// already runs near an optimised BLAS's peak on one core.
inline constexpr double kCpuGemmMinFlops = 1e8;

struct CpuGemmRate {
  std::uint64_t calls = 0;       // counted calls (>= kCpuGemmMinFlops, fp32 or fp64)
  std::int64_t ns = 0;           // their summed wall time
  double flops = 0;              // their summed FLOPs
  bool fp64 = false;             // most of their FLOPs in fp64
  std::string top_op;            // the op with the most time among them
  std::string top_dims;          // its most timed input dims
  std::int64_t all_gemm_ns = 0;  // every mm/addmm/bmm/baddbmm call's time, shapes or not
  // ... of which calls whose recorded operands are bf16 or fp16 (autocast or a model cast down),
  // any size: the precision step a CPU rule would offer is taken there already.
  std::int64_t reduced_precision_ns = 0;
  std::int64_t fp16_ns = 0;                                                        // ... of which fp16
  double gflops() const { return ns > 0 ? flops / static_cast<double>(ns) : -1; }  // FLOP/ns = GFLOP/s
};

CpuGemmRate analyze_cpu_gemm_rate(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
