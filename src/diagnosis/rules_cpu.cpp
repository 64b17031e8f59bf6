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

// The gain bound: the fix a CPU trace can vouch for is a precision step. bf16 on a CPU with
// AVX-512 BF16 does twice the multiply-adds per instruction of fp32 FMA (VDPBF16PS: 32 bf16
// products per 512-bit register against 16 fp32 FMAs; Intel's intrinsics guide), so the matmul
// time at most halves. AMX, more threads or a GPU can do more, but nothing in the trace says which
// of them the machine offers, so no bound covers them.
constexpr double kCpuPrecisionStep = 2.0;

void rule_cpu_matmul_dominated(const TraceAnalysis& a, std::vector<Finding>& out) {
  const HotSpotsResult& h = a.hot_spots;
  if (h.gpu_activities > 0 || h.window_ns <= 0) return;
  // Kernel launches with no device record are a broken capture (device-activity-missing), not a
  // CPU-only job: the host's matmul ops there only launched the work.
  if (a.window_activity.kernel_launches > 0) return;
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
  // Lower precision makes the matmuls faster, not free: the rest of their time stays.
  f.time_share = share * (1.0 - 1.0 / kCpuPrecisionStep);
  f.max_speedup = amdahl_speedup(f.time_share);
  // The what-if: those ops (the outermost of a nest, with what they call) twice as fast.
  fix_speeds_up_host_ops(f, "matmul/conv ops in bf16", static_cast<double>(matmul_ns),
                         static_cast<double>(matmul_ns) * (1.0 - 1.0 / kCpuPrecisionStep), is_tensor_core_eligible_op);
  f.title = fmt::format(
      "Compute-bound on the CPU: matmul/conv ops take {:.0f}% of the time ({} leads); bf16 at most halves them",
      share * 100, top_op);
  f.dimension = Dimension::kCompute;
  f.layer = Layer::kOperator;
  f.severity = share > 0.7 ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "No GPU work in this trace; {:.1f} ms of host self time in the window is spent in matrix multiplications and "
      "convolutions. bf16 on a CPU with AVX-512 BF16 at most doubles their rate, which bounds the gain at {:.2f}x; "
      "AMX, more intra-op threads or an accelerator can gain more, but the trace cannot tell how much.",
      static_cast<double>(matmul_ns) / 1e6, f.max_speedup);
  f.evidence = {{"matmul_conv_share_pct", share * 100, "%"},
                {"matmul_conv_ms", static_cast<double>(matmul_ns) / 1e6, "ms"},
                {"window_ms", static_cast<double>(h.window_ns) / 1e6, "ms"}};
  f.fixes = {"torch.set_num_threads(<physical cores>)  # check torch.get_num_threads(); intra-op threads do the math",
             "with torch.autocast(\"cpu\", dtype=torch.bfloat16): ...  # on CPUs with AVX-512 BF16 / AMX",
             "model = torch.compile(model)  # or export to ONNX Runtime / OpenVINO for inference",
             "run on a GPU: model.to(\"cuda\") with torch.autocast(\"cuda\", dtype=torch.bfloat16)"};
  f.threshold = "matmul/conv host self time > 50% of the window (ferret; as the GPU matmul-dominated rule)";
  out.push_back(std::move(f));
}

}  // namespace

void rules_cpu(const TraceAnalysis& a, std::vector<Finding>& out) { rule_cpu_matmul_dominated(a, out); }

}  // namespace ferret
