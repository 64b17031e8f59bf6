#include "analysis/operator/cpu_gemm.h"

#include <map>
#include <string_view>
#include <utility>

#include "analysis/operator/op_cost.h"

namespace ferret {

namespace {

bool is_blas_gemm(std::string_view name) {
  return name == "aten::mm" || name == "aten::addmm" || name == "aten::bmm" || name == "aten::baddbmm";
}

}  // namespace

CpuGemmRate analyze_cpu_gemm_rate(const TraceModel& model, const AnalysisContext& ctx) {
  CpuGemmRate r;
  const TimeWindow window = ctx.window();
  const Relations& rel = model.relations;
  // Ops that launched device work ran their math elsewhere.
  std::vector<bool> launches(model.size(), false);
  for (std::size_t i = 0; i < rel.launches.size(); ++i)
    if (const EventIndex op = rel.launch_op[i]; op != kNoEvent) launches[op] = true;
  std::map<std::pair<std::string, std::string>, std::int64_t> time_by_shape;
  double fp64_flops = 0;
  for (std::size_t i = 0; i < model.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    if (model.kind[e] != EventKind::kCpuOp || model.phase[e] != 'X' || !window.contains(model.ts_ns[e])) continue;
    const std::string_view name = model.name_of(e);
    if (!is_blas_gemm(name) || launches[e] || model.dur_ns[e] <= 0) continue;
    r.all_gemm_ns += model.dur_ns[e];
    const OpArgs* args = model.op_args_of(e);
    if (args == nullptr || args->input_dims == kEmptyStr) continue;
    const OpCost cost = op_cost({name, model.strings.view(args->input_dims), model.strings.view(args->input_types),
                                 model.strings.view(args->concrete_inputs), -1, -1});
    if (cost.dtype == Dtype::kBf16 || cost.dtype == Dtype::kFp16) r.reduced_precision_ns += model.dur_ns[e];
    if (cost.dtype == Dtype::kFp16) r.fp16_ns += model.dur_ns[e];
    if (cost.flops < kCpuGemmMinFlops || (cost.dtype != Dtype::kFp32 && cost.dtype != Dtype::kFp64)) continue;
    ++r.calls;
    r.ns += model.dur_ns[e];
    r.flops += cost.flops;
    if (cost.dtype == Dtype::kFp64) fp64_flops += cost.flops;
    time_by_shape[{std::string(name), std::string(model.strings.view(args->input_dims))}] += model.dur_ns[e];
  }
  r.fp64 = fp64_flops * 2 > r.flops;
  std::int64_t best = -1;
  for (const auto& [key, ns] : time_by_shape)
    if (ns > best) {
      best = ns;
      r.top_op = key.first;
      r.top_dims = key.second;
    }
  return r;
}

}  // namespace ferret
