// Rules for traces without GPU work (CPU-only jobs, the legacy autograd export): the host's own
// operator time is the compute.
#include <fmt/format.h>

#include "analysis/tensor_cores.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// Matmul-dominated on the CPU. Threshold: more than half of the window in matmul/conv self time,
// the same "dominates" share the GPU rule uses for kernel time (docs/RULES.md).
constexpr double kCpuMatmulDominates = 0.50;

void rule_cpu_matmul_dominated(const TraceAnalysis& a, std::vector<Finding>& out) {
  const HotSpotsResult& h = a.hot_spots;
  if (h.gpu_activities > 0 || h.window_ns <= 0) return;
  std::int64_t matmul_ns = 0;
  std::string top_op;
  std::int64_t top_ns = 0;
  for (const OpStat& op : h.ops_by_host) {
    if (!is_tensor_core_eligible_op(op.name)) continue;  // matmul/conv/attention, fwd or bwd
    matmul_ns += op.host_self_ns;
    if (op.host_self_ns > top_ns) top_ns = op.host_self_ns, top_op = op.name;
  }
  const double share = static_cast<double>(matmul_ns) / static_cast<double>(h.window_ns);
  if (share <= kCpuMatmulDominates) return;
  Finding f;
  f.id = "matmul-dominated";
  f.title =
      fmt::format("Compute-bound on the CPU: matmul/conv ops take {:.0f}% of the time ({} leads)", share * 100, top_op);
  f.dimension = Dimension::kCompute;
  f.layer = Layer::kOperator;
  f.severity = share > 0.7 ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "No GPU work in this trace; {} of host self time in the window is spent in matrix multiplications and "
      "convolutions. Faster math, lower precision or moving the work to an accelerator are the levers.",
      fmt::format("{:.1f} ms", static_cast<double>(matmul_ns) / 1e6));
  f.evidence = {{"matmul_conv_share_pct", share * 100, "%"},
                {"matmul_conv_ms", static_cast<double>(matmul_ns) / 1e6, "ms"},
                {"window_ms", static_cast<double>(h.window_ns) / 1e6, "ms"}};
  f.fixes = {"torch.set_num_threads(<physical cores>)  # check torch.get_num_threads(); intra-op threads do the math",
             "with torch.autocast(\"cpu\", dtype=torch.bfloat16): ...  # on CPUs with AVX-512 BF16 / AMX",
             "model = torch.compile(model)  # or export to ONNX Runtime / OpenVINO for inference",
             "run on a GPU: model.to(\"cuda\") with torch.autocast(\"cuda\", dtype=torch.bfloat16)"};
  // Lower precision or better kernels can at best remove most of the matmul time.
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  f.threshold = "matmul/conv host self time > 50% of the window (ferret; as the GPU matmul-dominated rule)";
  out.push_back(std::move(f));
}

}  // namespace

void rules_cpu(const TraceAnalysis& a, std::vector<Finding>& out) { rule_cpu_matmul_dominated(a, out); }

}  // namespace ferret
