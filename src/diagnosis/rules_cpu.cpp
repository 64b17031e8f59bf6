// Rules for traces without GPU work (CPU-only jobs, the legacy autograd export): the host's own
// operator time is the compute.
#include <algorithm>
#include <string_view>

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
  // Most GEMM time already in bf16/fp16 (autocast, or a model cast down): the precision step is
  // taken, and nothing in the trace bounds what threads, AMX or an accelerator would add.
  const CpuGemmRate& g = a.cpu_gemm;
  const bool reduced = g.all_gemm_ns > 0 && g.reduced_precision_ns * 2 >= g.all_gemm_ns;
  const char* reduced_dtype = g.fp16_ns * 2 > g.reduced_precision_ns ? "fp16" : "bf16";
  Finding f;
  f.id = "matmul-dominated";
  f.dimension = Dimension::kCompute;
  f.layer = Layer::kOperator;
  f.severity = share > 0.7 ? Severity::kHigh : Severity::kMedium;
  f.evidence = {{"matmul_conv_share_pct", share * 100, "%"},
                {"matmul_conv_ms", static_cast<double>(matmul_ns) / 1e6, "ms"},
                {"window_ms", static_cast<double>(h.window_ns) / 1e6, "ms"}};
  f.fixes = {"torch.set_num_threads(<physical cores>)  # check torch.get_num_threads(); intra-op threads do the math",
             "with torch.autocast(\"cpu\", dtype=torch.bfloat16): ...  # on CPUs with AVX-512 BF16 / AMX",
             "model = torch.compile(model)  # or export to ONNX Runtime / OpenVINO for inference",
             "run on a GPU: model.to(\"cuda\") with torch.autocast(\"cuda\", dtype=torch.bfloat16)"};
  if (reduced) {
    const double reduced_pct = 100.0 * static_cast<double>(g.reduced_precision_ns) / static_cast<double>(g.all_gemm_ns);
    f.title =
        fmt::format("Compute-bound on the CPU: matmul/conv ops take {:.0f}% of the time ({} leads), already in {}",
                    share * 100, top_op, reduced_dtype);
    f.detail = fmt::format(
        "No GPU work in this trace; {:.1f} ms of host self time in the window is spent in matrix multiplications and "
        "convolutions, and {:.0f}% of the GEMM time already runs in {}. What more intra-op threads, AMX or an "
        "accelerator would gain depends on the machine, which the trace does not describe: no gain is bounded.",
        static_cast<double>(matmul_ns) / 1e6, reduced_pct, reduced_dtype);
    f.evidence.push_back({"reduced_precision_gemm_pct", reduced_pct, "%"});
    f.fixes_left_out.push_back({f.fixes[1].text, fmt::format("the trace shows {:.0f}% of the GEMM time in {} already",
                                                             reduced_pct, reduced_dtype)});
    f.fixes.erase(f.fixes.begin() + 1);
    f.threshold = "matmul/conv host self time > 50% of the window (ferret; as the GPU matmul-dominated rule)";
    out.push_back(std::move(f));
    return;
  }
  // Lower precision makes the matmuls faster, not free: the rest of their time stays.
  f.time_share = share * (1.0 - 1.0 / kCpuPrecisionStep);
  f.max_speedup = amdahl_speedup(f.time_share);
  // The what-if: those ops (the outermost of a nest, with what they call) twice as fast.
  fix_speeds_up_host_ops(f, "matmul/conv ops in bf16", static_cast<double>(matmul_ns),
                         static_cast<double>(matmul_ns) * (1.0 - 1.0 / kCpuPrecisionStep), is_tensor_core_eligible_op);
  f.title = fmt::format(
      "Compute-bound on the CPU: matmul/conv ops take {:.0f}% of the time ({} leads); bf16 at most halves them",
      share * 100, top_op);
  f.detail = fmt::format(
      "No GPU work in this trace; {:.1f} ms of host self time in the window is spent in matrix multiplications and "
      "convolutions. bf16 on a CPU with AVX-512 BF16 at most doubles their rate, which bounds the gain at {:.2f}x; "
      "AMX, more intra-op threads or an accelerator can gain more, but the trace cannot tell how much.",
      static_cast<double>(matmul_ns) / 1e6, f.max_speedup);
  f.threshold = "matmul/conv host self time > 50% of the window (ferret; as the GPU matmul-dominated rule)";
  out.push_back(std::move(f));
}

// slow-cpu-matmul. The host's own fp32/fp64 GEMMs of >= 100 MFLOP each (analysis/cpu_gemm.h) run
// below 10 GFLOP/s fp32 (5 fp64) while GEMM calls hold >= 20% of the window. One core with AVX2 FMA
// peaks at 32 fp32 FLOP per cycle (two 8-wide FMA units), ~100 GFLOP/s at 3 GHz, and OpenBLAS, MKL
// or oneDNN reach most of it on such sizes; an unoptimised reference BLAS (netlib, a triple loop)
// manages a few GFLOP/s. 10 is a tenth of one core's peak: below it, the library is the cause,
// whatever the thread count. The gain: the GEMMs at 40 GFLOP/s fp32 (20 fp64), a conservative
// single-core rate for an optimised BLAS. Threshold and rates: ferret's, from those peaks.
constexpr double kSlowCpuGemmShare = 0.20;
constexpr double kSlowCpuGemmGflops = 10, kOptimisedCpuGemmGflops = 40;

bool is_blas_gemm_op(std::string_view n) {
  return n == "aten::mm" || n == "aten::addmm" || n == "aten::bmm" || n == "aten::baddbmm";
}

bool rule_slow_cpu_matmul(const TraceAnalysis& a, std::vector<Finding>& out) {
  const HotSpotsResult& h = a.hot_spots;
  const CpuGemmRate& g = a.cpu_gemm;
  if (h.gpu_activities > 0 || h.window_ns <= 0 || a.window_activity.kernel_launches > 0 || g.calls == 0) return false;
  const double share = static_cast<double>(g.all_gemm_ns) / static_cast<double>(h.window_ns);
  const double scale = g.fp64 ? 0.5 : 1.0;  // fp64 runs at half the fp32 rate on the same units
  const double rate = g.gflops();
  if (share < kSlowCpuGemmShare || rate < 0 || rate >= kSlowCpuGemmGflops * scale) return false;
  const double target = kOptimisedCpuGemmGflops * scale;
  Finding f;
  f.id = "slow-cpu-matmul";
  f.dimension = Dimension::kCompute;
  f.layer = Layer::kOperator;
  f.title = fmt::format(
      "Slow CPU matrix multiplies: {} runs at {:.1f} GFLOP/s ({}), far below any optimised BLAS (tens of GFLOP/s on "
      "one core): the BLAS library is the cost",
      g.top_op, rate, g.fp64 ? "fp64" : "fp32");
  f.detail = fmt::format(
      "{} GEMM calls of at least 100 MFLOP each ({} {} the most timed) did {:.1f} GFLOP in {:.1f} ms: {:.1f} "
      "GFLOP/s. One x86 core with AVX2 FMA peaks near 100 GFLOP/s fp32, and OpenBLAS, MKL or oneDNN reach most of "
      "it on such sizes; a rate under {:.0f} is what an unoptimised reference BLAS (netlib) gives. GEMM calls take "
      "{:.0f}% of the {}. At {:.0f} GFLOP/s they would take {:.1f} ms.",
      g.calls, g.top_op, g.top_dims, g.flops / 1e9, static_cast<double>(g.ns) / 1e6, rate, kSlowCpuGemmGflops * scale,
      100 * share, window_noun(a), target, g.flops / target / 1e6);
  f.evidence = {{"gemm_gflops", rate, "GFLOP/s"},
                {"gemm_calls", static_cast<double>(g.calls), "count"},
                {"gemm_share_pct", 100 * share, "%"},
                {"gemm_ms", static_cast<double>(g.all_gemm_ns) / 1e6, "ms"}};
  f.fixes = {
      "See which BLAS PyTorch calls: `print(torch.__config__.show())` (BLAS_INFO, LAPACK_INFO, \"USE_MKL\", "
      "\"USE_MKLDNN\"); a distribution build linked to the reference BLAS (Debian's python3-torch with libblas3) "
      "runs matmuls 10-50x slower than OpenBLAS or MKL",
      "Use the PyPI wheel (`pip install torch --index-url https://download.pytorch.org/whl/cpu`: MKL and oneDNN on "
      "x86), or point the system BLAS at OpenBLAS (`sudo update-alternatives --config libblas.so.3-$(uname "
      "-m)-linux-gnu`)",
      "Then give the math its cores: `torch.set_num_threads(<physical cores>)` (check `torch.get_num_threads()`)",
      "If inputs hold denormal values, every BLAS slows down: `torch.set_flush_denormal(True)`"};
  const double saved = static_cast<double>(g.all_gemm_ns) * std::max(0.0, 1.0 - rate / target);
  f.time_share = std::min(1.0, saved / static_cast<double>(h.window_ns));
  f.max_speedup = amdahl_speedup(f.time_share);
  f.severity = share >= 0.5 ? Severity::kHigh : Severity::kMedium;
  fix_speeds_up_host_ops(f, fmt::format("GEMMs at {:.0f} GFLOP/s", target), static_cast<double>(g.all_gemm_ns), saved,
                         is_blas_gemm_op);
  f.threshold =
      "fp32 GEMMs >= 100 MFLOP under 10 GFLOP/s (fp64 5), GEMM calls >= 20% of the window (ferret: a tenth of one "
      "AVX2 core's peak)";
  out.push_back(std::move(f));
  return true;
}

}  // namespace

void rules_cpu(const TraceAnalysis& a, std::vector<Finding>& out) {
  // A slow BLAS is the cause: a precision step on top of it is not the first fix.
  if (!rule_slow_cpu_matmul(a, out)) rule_cpu_matmul_dominated(a, out);
}

}  // namespace ferret
