// FLOPs and bytes moved per call of one operator, from its name and the shapes, types and
// concrete arguments the profiler recorded (record_shapes=True). docs/ROOFLINE.md gives the model
// of every op kind; the conventions follow AMD TraceLens (a GEMM M x N x K is 2·M·N·K FLOPs, +M·N
// for a bias; bytes are each operand and the result read or written once).
//
// The recorded text is parsed defensively: malformed or missing shapes give an unknown cost with
// the reason, never a guess and never an exception.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/device/device_peaks.h"

namespace ferret {

// The family an op's cost model belongs to; it also picks the ceiling (matrix ops may run on
// Tensor / Matrix Cores, the rest on the vector units).
enum class OpKind { kNone, kGemm, kConvolution, kAttention, kNorm, kSoftmax, kElementwise, kReduction, kInductor };
const char* op_kind_name(OpKind kind);  // "gemm", "convolution", ...
inline bool is_matrix_op(OpKind k) {
  return k == OpKind::kGemm || k == OpKind::kConvolution || k == OpKind::kAttention;
}

// The op kind by name ("aten::" prefix optional); kNone for ops without a cost model.
OpKind op_kind_of(std::string_view op_name);

struct OpCostInput {
  std::string_view name;             // "aten::addmm"
  std::string_view input_dims;       // raw JSON text of "Input Dims"
  std::string_view input_types;      // raw JSON text of "Input type"
  std::string_view concrete_inputs;  // raw JSON text of "Concrete Inputs" ("" when not recorded)
  std::int64_t inductor_flop = -1;   // Inductor's kernel_flop, -1 when absent
  double inductor_num_gb = -1;       // Inductor's kernel_num_gb, -1 when absent
};

struct OpCost {
  OpKind kind = OpKind::kNone;
  Dtype dtype = Dtype::kUnknown;  // the first tensor operand's element type
  double flops = -1;              // per call; -1 unknown
  double bytes = -1;              // per call; -1 unknown
  // GEMMs: the problem's batch x M x N x K (linear: M = rows of the input), -1 for other ops or
  // when the shapes are unknown. The shape rules read them (diagnosis gemm-shape).
  double gemm_batch = -1, gemm_m = -1, gemm_n = -1, gemm_k = -1;
  std::string note;  // why a figure is unknown, or an assumption made ("non-causal assumed")
};

OpCost op_cost(const OpCostInput& in);

// "c10::BFloat16" -> kBf16, "float" -> kFp32, ...; kUnknown for integer and other types.
Dtype dtype_of_type_name(std::string_view type_name);
// Bytes per element of a profiler type name, 0 when unknown.
int element_size_of_type_name(std::string_view type_name);

}  // namespace ferret
