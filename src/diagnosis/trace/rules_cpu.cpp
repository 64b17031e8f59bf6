// Rules for traces without GPU work (CPU-only jobs, the legacy autograd export): the host's own
// operator time is the compute.
#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "analysis/operator/tensor_cores.h"
#include "diagnosis/rule_registry.h"
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

void fit_blas_fixes_to_host(Finding& f, const HostFacts& host);

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
  Finding f = finding_for("matmul-dominated");
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
  // A CPU the run recorded without bf16 instructions (AVX-512 BF16, AMX) emulates bf16: no step.
  const HostFacts& host = a.context.options.host;
  fit_blas_fixes_to_host(f, host);
  if (host.recorded() && !host.cpu_flags.empty() && !host.has_flag("avx512_bf16") && !host.has_flag("amx_bf16")) {
    const auto bf16 = std::find_if(f.fixes.begin(), f.fixes.end(),
                                   [](const Fix& x) { return x.text.find("autocast(\"cpu\"") != std::string::npos; });
    if (bf16 != f.fixes.end()) {
      f.fixes_left_out.push_back({bf16->text, "this CPU has no bf16 instructions (neither AVX-512 BF16 nor AMX)"});
      f.fixes.erase(bf16);
    }
    f.title = fmt::format("Compute-bound on the CPU: matmul/conv ops take {:.0f}% of the time ({} leads)", share * 100,
                          top_op);
    f.detail = fmt::format(
        "No GPU work in this trace; {:.1f} ms of host self time in the window is spent in matrix multiplications and "
        "convolutions on {}. This CPU has no bf16 instructions, so lower precision is no step here; more threads "
        "or an accelerator can gain, by how much the trace cannot tell.",
        static_cast<double>(matmul_ns) / 1e6, host.describe());
    f.threshold = "matmul/conv host self time > 50% of the window (ferret; as the GPU matmul-dominated rule)";
    out.push_back(std::move(f));
    return;
  }
  if (host.recorded())
    for (Fix& x : f.fixes)
      if (x.text.find("autocast(\"cpu\"") != std::string::npos)
        add_because(x, host.has_flag("amx_bf16") ? "this CPU has AMX BF16" : "this CPU has AVX-512 BF16");
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

// slow-cpu-matmul. The host's own fp32/fp64 GEMMs of >= 100 MFLOP each (analysis/operator/cpu_gemm.h) run
// below 10 GFLOP/s fp32 (5 fp64) while GEMM calls hold >= 20% of the window. One core with AVX2 FMA
// peaks at 32 fp32 FLOP per cycle (two 8-wide FMA units), ~100 GFLOP/s at 3 GHz, and OpenBLAS, MKL
// or oneDNN reach most of it on such sizes; an unoptimised reference BLAS (netlib, a triple loop)
// manages a few GFLOP/s. 10 is a tenth of one core's peak: below it, the library is the cause,
// whatever the thread count. The gain: the GEMMs at 40 GFLOP/s fp32 (20 fp64), a conservative
// single-core rate for an optimised BLAS. Threshold and rates: ferret's, from those peaks.
constexpr double kSlowCpuGemmShare = 0.20;
constexpr double kSlowCpuGemmGflops = 10, kOptimisedCpuGemmGflops = 40;
// With the CPU's ceiling known: OpenBLAS, MKL and oneDNN reach well over half of it on GEMMs of
// 100 MFLOP and more (their own benchmarks), so half is the rate the fix is credited with.
constexpr double kOptimisedShareOfPeak = 0.5;

// The live measurement of `ferret run` (fp32 512x512 products at torch's threads) says whether the
// library is slow: under kSlowCpuGemmGflops it is, at kOptimisedCpuGemmGflops or more it is not,
// and a slow GEMM in the trace then has another cause (denormal inputs, cores shared with other
// work). "" when not measured or in between.
std::string measured_library_words(const HostFacts& host) {
  if (!host.measured()) return {};
  return fmt::format("the run measured torch's BLAS at {:.1f} GFLOP/s on {}x{} fp32 matmuls", host.matmul_gflops,
                     host.matmul_size, host.matmul_size);
}
bool measured_fast_library(const HostFacts& host) {
  return host.measured() && host.matmul_gflops >= kOptimisedCpuGemmGflops;
}
bool measured_slow_library(const HostFacts& host) { return host.measured() && host.matmul_gflops < kSlowCpuGemmGflops; }

// With the host recorded, the library question is answered: the "see which BLAS" fix goes, the swap
// comes first where torch calls the reference BLAS, and the threads fix goes where torch already
// uses every CPU (or leads where it uses one of several).
void fit_blas_fixes_to_host(Finding& f, const HostFacts& host) {
  if (!host.recorded()) return;
  const std::string blas = host.blas_name();
  std::vector<Fix> kept;
  for (Fix& fix : f.fixes) {
    const bool which_blas = fix.text.starts_with("See which BLAS");
    const bool threads = fix.text.find("set_num_threads") != std::string::npos;
    if (which_blas && !blas.empty()) {
      f.fixes_left_out.push_back({fix.text, fmt::format("the run recorded it: torch calls {}", blas)});
      continue;
    }
    // A library measured fast is not what to swap.
    if ((which_blas || fix.text.starts_with("Use the PyPI wheel")) && measured_fast_library(host)) {
      f.fixes_left_out.push_back({fix.text, measured_library_words(host)});
      continue;
    }
    if (fix.text.starts_with("Use the PyPI wheel") && measured_slow_library(host))
      add_because(fix, measured_library_words(host));
    if (threads && host.threads > 0 && host.cpus > 0 && host.threads >= host.cpus) {
      f.fixes_left_out.push_back(
          {fix.text, fmt::format("torch already uses {} threads on {} CPUs", host.threads, host.cpus)});
      continue;
    }
    if (threads && host.threads > 0 && host.cpus > host.threads)
      add_because(
          fix, fmt::format("torch uses {} thread{} of {} CPUs", host.threads, host.threads == 1 ? "" : "s", host.cpus));
    if (fix.text.starts_with("Use the PyPI wheel") && !blas.empty())
      add_because(fix, fmt::format("torch calls {}", blas));
    kept.push_back(std::move(fix));
  }
  // Most of the gain first: the library where it is the reference one or measured slow, else the
  // threads.
  std::stable_partition(kept.begin(), kept.end(), [&](const Fix& x) {
    return host.reference_blas() || measured_slow_library(host) ? x.text.starts_with("Use the PyPI wheel")
                                                                : x.text.find("set_num_threads") != std::string::npos;
  });
  f.fixes = std::move(kept);
}

bool is_blas_gemm_op(std::string_view n) {
  return n == "aten::mm" || n == "aten::addmm" || n == "aten::bmm" || n == "aten::baddbmm";
}

bool rule_slow_cpu_matmul(const TraceAnalysis& a, std::vector<Finding>& out) {
  const HotSpotsResult& h = a.hot_spots;
  const CpuGemmRate& g = a.cpu_gemm;
  const HostFacts& host = a.context.options.host;
  // Without recorded shapes there is no rate, but a run that recorded the reference BLAS answers the
  // question: it is the cost wherever GEMMs take the time.
  const bool by_library = g.calls == 0 && (host.reference_blas() || measured_slow_library(host));
  if (h.gpu_activities > 0 || h.window_ns <= 0 || a.window_activity.kernel_launches > 0 ||
      (g.calls == 0 && !by_library))
    return false;
  const double share = static_cast<double>(g.all_gemm_ns) / static_cast<double>(h.window_ns);
  const double scale = g.fp64 ? 0.5 : 1.0;  // fp64 runs at half the fp32 rate on the same units
  // Without shapes, the live measurement's rate where the run made one; else the reference BLAS's
  // rate taken at the slow bar (an unoptimised triple loop runs a few GFLOP/s), so the gain counted
  // from it is the least the swap gives.
  const double rate =
      by_library ? (measured_slow_library(host) ? host.matmul_gflops : kSlowCpuGemmGflops) * scale : g.gflops();
  if (share < kSlowCpuGemmShare || rate < 0 || (!by_library && rate >= kSlowCpuGemmGflops * scale)) return false;
  // With the host recorded (ferret run), the rate an optimised BLAS reaches is half the ceiling of
  // the threads torch uses (large GEMMs reach most of it); else one core's conservative 40.
  const double peak = host.fp32_peak_gflops() * scale;
  // A library measured fast on this machine: its own rate is what the GEMMs should reach.
  const double target = measured_fast_library(host) ? host.matmul_gflops * scale
                        : peak > 0 ? std::max(kOptimisedCpuGemmGflops * scale, kOptimisedShareOfPeak * peak)
                                   : kOptimisedCpuGemmGflops * scale;
  const std::string blas = host.blas_name();
  Finding f = finding_for("slow-cpu-matmul");
  f.layer = Layer::kOperator;
  f.title = fmt::format(
      "Slow CPU matrix multiplies: {} runs at {:.1f} GFLOP/s ({}), far below any optimised BLAS (tens of GFLOP/s on "
      "one core): {}",
      g.top_op, rate, g.fp64 ? "fp64" : "fp32",
      blas.empty() ? std::string("the BLAS library is the cost") : fmt::format("torch calls {}, the cost", blas));
  f.detail = fmt::format(
      "{} GEMM calls of at least 100 MFLOP each ({} {} the most timed) did {:.1f} GFLOP in {:.1f} ms: {:.1f} "
      "GFLOP/s. One x86 core with AVX2 FMA peaks near 100 GFLOP/s fp32, and OpenBLAS, MKL or oneDNN reach most of "
      "it on such sizes; a rate under {:.0f} is what an unoptimised reference BLAS (netlib) gives. GEMM calls take "
      "{:.0f}% of the {}. At {:.0f} GFLOP/s they would take {:.1f} ms.",
      g.calls, g.top_op, g.top_dims, g.flops / 1e9, static_cast<double>(g.ns) / 1e6, rate, kSlowCpuGemmGflops * scale,
      100 * share, window_noun(a), target, g.flops / target / 1e6);
  if (!blas.empty())
    f.detail += fmt::format(" The run recorded the library: torch calls {} (its build says BLAS_INFO={}).", blas,
                            host.blas_info.empty() ? "?" : host.blas_info);
  if (measured_fast_library(host)) {
    f.title = fmt::format(
        "Slow CPU matrix multiplies: {} runs at {:.1f} GFLOP/s ({}) while {}: not the library; denormal inputs or "
        "cores shared with other work",
        g.top_op, rate, g.fp64 ? "fp64" : "fp32", measured_library_words(host));
    f.detail += fmt::format(
        " After the trace, {} at the same threads: the library is fast, so these GEMMs lose their rate to something "
        "else - inputs holding denormal values, or cores taken by other threads or processes while they ran.",
        measured_library_words(host));
  } else if (host.measured()) {
    f.detail += fmt::format(" After the trace, {}.", measured_library_words(host));
  }
  if (peak > 0 && !measured_fast_library(host))
    f.detail += fmt::format(
        " This CPU's fp32 ceiling for torch's {} thread{} is {:.0f} GFLOP/s ({:.0f} MHz, {} FLOP per cycle per "
        "core); {:.0f} GFLOP/s, half of it, is credited to the fix.",
        std::min(host.threads, host.cpus > 0 ? host.cpus : host.threads),
        std::min(host.threads, host.cpus > 0 ? host.cpus : host.threads) == 1 ? "" : "s", peak, host.cpu_mhz,
        host.has_flag("avx2") && host.has_flag("fma") ? 32 : 8, target);
  if (by_library) {
    std::string top = "aten::mm";
    std::int64_t top_ns = -1;
    for (const OpStat& op : h.ops_by_host)
      if (is_blas_gemm_op(op.name) && op.host_self_ns > top_ns) top = op.name, top_ns = op.host_self_ns;
    const std::string library = blas.empty() ? std::string("a BLAS") : blas;
    f.title = fmt::format(
        "Slow CPU matrix multiplies: torch calls {} and GEMM calls take {:.0f}% of the {}; an optimised BLAS runs "
        "them several times faster",
        measured_slow_library(host) ? fmt::format("{} measured at {:.1f} GFLOP/s", library, host.matmul_gflops)
                                    : library,
        100 * share, window_noun(a));
    const std::string known =
        measured_slow_library(host)
            ? fmt::format("but {}{}", measured_library_words(host),
                          blas.empty() ? std::string() : fmt::format(" (torch calls {})", blas))
            : fmt::format(
                  "but the run recorded the library: torch calls {} (BLAS_INFO={}), an unoptimised triple "
                  "loop that runs a few GFLOP/s on any CPU",
                  blas, host.blas_info.empty() ? "?" : host.blas_info);
    f.detail = fmt::format(
        "GEMM calls ({} leads) take {:.1f} ms, {:.0f}% of the {}. The trace records no shapes, so their own rate is "
        "not known, {}, where OpenBLAS, MKL or oneDNN reach most of the CPU's peak. Counting their rate at {:.1f} "
        "GFLOP/s{} against {:.0f} for an optimised library gives the least the swap wins.",
        top, static_cast<double>(g.all_gemm_ns) / 1e6, 100 * share, window_noun(a), known, rate,
        measured_slow_library(host) ? "" : " (more than it reaches)", target);
  }
  f.evidence = {{"gemm_gflops", by_library ? -1 : rate, "GFLOP/s"},
                {"gemm_calls", static_cast<double>(g.calls), "count"},
                {"gemm_share_pct", 100 * share, "%"},
                {"gemm_ms", static_cast<double>(g.all_gemm_ns) / 1e6, "ms"}};
  if (peak > 0) f.evidence.push_back({"fp32_peak_gflops", peak, "GFLOP/s"});
  if (host.measured()) f.evidence.push_back({"measured_blas_gflops", host.matmul_gflops, "GFLOP/s"});
  f.fixes = {
      "See which BLAS PyTorch calls: `print(torch.__config__.show())` (BLAS_INFO, LAPACK_INFO, \"USE_MKL\", "
      "\"USE_MKLDNN\"); a distribution build linked to the reference BLAS (Debian's python3-torch with libblas3) "
      "runs matmuls 10-50x slower than OpenBLAS or MKL",
      "Use the PyPI wheel (`pip install torch --index-url https://download.pytorch.org/whl/cpu`: MKL and oneDNN on "
      "x86), or point the system BLAS at OpenBLAS (`sudo update-alternatives --config libblas.so.3-$(uname "
      "-m)-linux-gnu`)",
      "Then give the math its cores: `torch.set_num_threads(<physical cores>)` (check `torch.get_num_threads()`)",
      "If inputs hold denormal values, every BLAS slows down: `torch.set_flush_denormal(True)`"};
  fit_blas_fixes_to_host(f, host);
  const double saved = static_cast<double>(g.all_gemm_ns) * std::max(0.0, 1.0 - rate / target);
  f.time_share = std::min(1.0, saved / static_cast<double>(h.window_ns));
  f.max_speedup = amdahl_speedup(f.time_share);
  f.severity = share >= 0.5 ? Severity::kHigh : Severity::kMedium;
  fix_speeds_up_host_ops(f, fmt::format("GEMMs at {:.0f} GFLOP/s", target), static_cast<double>(g.all_gemm_ns), saved,
                         is_blas_gemm_op);
  f.threshold =
      "fp32 GEMMs >= 100 MFLOP under 10 GFLOP/s (fp64 5), or without shapes a run that recorded the reference BLAS; "
      "GEMM calls >= 20% of the window (ferret: a tenth of one AVX2 core's peak)";
  out.push_back(std::move(f));
  return true;
}

}  // namespace

void rules_cpu(const TraceAnalysis& a, std::vector<Finding>& out) {
  // A slow BLAS is the cause: a precision step on top of it is not the first fix.
  if (!rule_slow_cpu_matmul(a, out)) rule_cpu_matmul_dominated(a, out);
}

namespace {
constexpr RuleInfo kCpuRules[] = {
    RuleInfo{"slow-cpu-matmul", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause},
};
}  // namespace

FERRET_RULE_FAMILY(cpu){"rules_cpu", 90, kCpuRules, rule_run<rules_cpu>()};

}  // namespace ferret
