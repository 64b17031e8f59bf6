// GPU-efficiency rules, the operator layer: once the GPU is busy, is its time spent well? Tensor
// Cores left idle by fp32 convolutions and matmuls, element-wise kernels with too few warps to
// hide memory latency, and where GEMM-heavy work has its levers. They read the GPU metrics.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/classify.h"
#include "analysis/operator/conv_layout.h"
#include "analysis/operator/tensor_cores.h"
#include "base/text.h"
#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

std::string device_label(const DeviceMetrics& d) {
  if (d.name.empty()) return fmt::format("GPU {} (unknown device)", d.device);
  std::string label = fmt::format("GPU {} ({}", d.device, d.name);
  if (d.compute_major >= 0) label += fmt::format(", CC {}.{}", d.compute_major, d.compute_minor);
  return label + ")";
}

// Whether the device has matrix units. NVIDIA: compute capability >= 7.0 (Volta on), except the
// Turing GTX 16 series, which has none. AMD: CDNA Instinct parts (MI100, MI200, MI300); the
// compute capability HIP reports (9.0 for gfx906 and gfx90a alike) cannot tell. Either way,
// matrix-unit kernels in the trace prove the hardware has them.
bool has_matrix_units(const DeviceMetrics& d) {
  if (device_is_amd(d))
    return d.tensor_core_ns > 0 || contains(d.name, "MI100") || contains(d.name, "MI2") || contains(d.name, "MI3");
  if (!device_is_nvidia(d)) return false;
  return d.tensor_core_ns > 0 || (d.compute_major >= 7 && !contains(d.name, "GTX 16"));
}

// Share of the analysed wall time (0..1) that `kernel_ns` of kernel time can account for: at most
// the time the device was busy at all (kernels on several streams overlap).
double wall_share(const DeviceMetrics& d, std::int64_t kernel_ns) {
  if (d.window_ns <= 0) return 0;
  return static_cast<double>(std::min(kernel_ns, d.kernel_busy_ns)) / static_cast<double>(d.window_ns);
}

// Evidence floors for every rule here (ferret's). Fewer kernels than kMinKernels describe a trace
// fragment, not a workload. A kernel-level fix buys at most the wall-time share of the kernels it
// speeds up; below kMinWallShare that is not worth a finding, however poor the kernels are.
constexpr std::uint64_t kMinKernels = 10;
constexpr double kMinWallShare = 0.05;

bool enough_evidence(const DeviceMetrics& d, std::int64_t affected_kernel_ns) {
  return d.kernels >= kMinKernels && wall_share(d, affected_kernel_ns) >= kMinWallShare;
}

// The precision change a user can paste for this device.
std::vector<Fix> precision_fixes(const DeviceMetrics& d) {
  std::vector<Fix> fixes;
  const bool nvidia = device_is_nvidia(d);
  if (nvidia && d.compute_major == 7) {
    fixes.push_back(
        "fp16 autocast with loss scaling (CC 7.x has fp16 Tensor Cores, not bf16): `scaler = "
        "torch.cuda.amp.GradScaler()`; "
        "`with torch.autocast(\"cuda\", dtype=torch.float16): loss = loss_fn(model(x), y)`; "
        "`scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()`");
  } else {
    fixes.push_back(
        "bf16 autocast around the forward pass and the loss (no loss scaling needed): `with torch.autocast(\"cuda\", "
        "dtype=torch.bfloat16): loss = loss_fn(model(x), y)`");
  }
  if (nvidia && d.compute_major >= 8)
    fixes.push_back(
        "Or keep fp32 and let matmuls and convolutions use TF32 Tensor Cores: `torch.backends.cuda.matmul.allow_tf32 = "
        "True`; `torch.backends.cudnn.allow_tf32 = True` (equivalently `torch.set_float32_matmul_precision(\"high\")` "
        "for matmuls)");
  return fixes;
}

// no-tensor-cores. The TensorBoard plugin advises mixed precision when no kernel time uses Tensor
// Cores while Tensor-Core-eligible operators (conv, mm, bmm, addmm, linear, matmul and their
// backwards) launched kernels, on compute capability >= 7.0. ferret asks for evidence of size:
// the eligible operators' kernels that ran without Tensor Cores take >= 10% of kernel time
// (>= 25% medium, >= 50% high), and under half of the eligible kernel time already used Tensor
// Cores - so the layout transforms around an fp16 convolution do not trigger it. Thresholds:
// ferret's; the plugin fires at any size.
constexpr double kNoTensorCoresLow = 0.10, kNoTensorCoresMedium = 0.25, kNoTensorCoresHigh = 0.50;
constexpr double kNoTensorCoresMaxCovered = 0.50;

// Tensor Cores make matmul kernels faster, not free: the most they can gain is the ratio of the
// device's dense FP16/BF16 Tensor peak to its FP32 peak (vendor datasheets): V100 125/15.7 = 8x, A100
// 312/19.5 = 16x, H100 989.5/67 = 14.8x, B200 2250/80 = 28x, Ada/Ampere workstation parts ~4x.
// Unknown devices get the largest ratio, so the bound stays an upper bound.
double tensor_core_speedup_bound(const DeviceMetrics& d) {
  const int cc = d.compute_major * 10 + d.compute_minor;
  if (d.compute_major == 7) return 8.0;
  if (cc == 80) return 16.0;
  if (cc == 86 || cc == 87 || cc == 89) return 4.0;
  if (d.compute_major == 9) return 14.8;
  return 28.0;
}

// The roofline's share of the bound: the eligible fp32 groups it places (shapes recorded, the
// device's ceilings known) gain at most their time above the roofline of the precision step
// (analysis/operator/roofline.h precision_step_roofline_ns); the eligible time it cannot place keeps the
// peak-ratio bound. `modelled_ns` is the placed groups' GPU time, `floor_ns` their roofline after it.
struct RooflinePrecisionStep {
  double modelled_ns = 0;
  double floor_ns = 0;
};

RooflinePrecisionStep roofline_precision_step(const RooflineResult& r, const DeviceMetrics& d) {
  RooflinePrecisionStep step;
  if (r.device != d.device) return step;
  for (const RooflineGroup& g : r.groups) {
    const double floor = precision_step_roofline_ns(r, g);
    if (floor < 0) continue;
    step.modelled_ns += static_cast<double>(g.kernel_ns);
    step.floor_ns += std::min(floor, static_cast<double>(g.kernel_ns));
  }
  return step;
}

// channels-last for the convolutions the trace runs: named by the most timed convolution op, with
// the NCHW <-> NHWC transposes cuDNN runs around them when it does; left out where the trace's
// operators hold no convolution (a trace of kernels alone keeps it).
bool is_convolution_op(std::string_view n) {
  return contains(n, "convolution") || contains(n, "conv2d") || contains(n, "conv3d") || contains(n, "conv1d");
}

void add_channels_last_fix(Finding& f, const TraceAnalysis& a) {
  const Fix generic =
      "Convolution networks: channels-last memory format, which matrix-unit convolutions expect: "
      "`model = model.to(memory_format=torch.channels_last)`; `x = x.to(memory_format=torch.channels_last)`";
  const OpStat* conv = nullptr;
  for (const OpStat& op : a.hot_spots.ops_by_host)
    if (is_convolution_op(op.name) && (conv == nullptr || op.device_total_ns > conv->device_total_ns)) conv = &op;
  if (conv == nullptr) {
    if (a.hot_spots.ops_by_host.empty())
      f.fixes.push_back(generic);
    else
      f.fixes_left_out.push_back({generic.text, "the trace runs no convolution"});
    return;
  }
  Fix fix = generic;
  add_because(fix, fmt::format("the trace runs {} ({} calls)", conv->name, conv->calls));
  std::int64_t transpose_ns = 0;
  std::uint64_t transposes = 0;
  for (const KernelStat& k : a.hot_spots.kernels)
    if (is_layout_transpose_kernel(k.name)) transpose_ns += k.total_ns, transposes += k.calls;
  const bool amd = a.model != nullptr && a.model->info.platform == Platform::kRocm;
  if (transposes > 0)
    add_because(fix, fmt::format("{} transposes NCHW <-> NHWC around them ({} kernels, {:.2f} ms)",
                                 amd ? "MIOpen" : "cuDNN", transposes, ns_to_ms(static_cast<double>(transpose_ns))));
  f.fixes.push_back(std::move(fix));
}

void rule_no_tensor_cores(const DeviceMetrics& d, const TraceAnalysis& a, std::vector<Finding>& out) {
  const RooflineResult& roofline = a.roofline;
  if (d.kernel_ns <= 0 || d.tc_eligible_ns <= 0 || !has_matrix_units(d)) return;
  const double without = static_cast<double>(d.tc_eligible_without_tc_ns) / static_cast<double>(d.kernel_ns);
  const double covered = 1.0 - static_cast<double>(d.tc_eligible_without_tc_ns) / static_cast<double>(d.tc_eligible_ns);
  if (without < kNoTensorCoresLow || covered >= kNoTensorCoresMaxCovered) return;
  if (!enough_evidence(d, d.tc_eligible_without_tc_ns)) return;

  Finding f = finding_for("no-tensor-cores");
  f.title =
      fmt::format("Mixed precision: {:.0f}% of GPU kernel time is convolution/matmul work running without {} on {}",
                  100 * without, matrix_unit_name(d), device_label(d));
  f.layer = Layer::kOperator;
  f.severity = without >= kNoTensorCoresHigh     ? Severity::kHigh
               : without >= kNoTensorCoresMedium ? Severity::kMedium
                                                 : Severity::kLow;
  f.detail = fmt::format(
      "Tensor-Core-eligible operators (convolutions, matmuls, linear layers and their backwards) launched {:.0f}% of "
      "the kernel time, and {:.0f}% of the kernel time ran in kernels whose names show no use of {} "
      "(kernels with {}: {:.1f}% overall). These are fp32 kernels on the {}; the device's "
      "{} do the same work several times faster in reduced precision. Compare validation metrics "
      "against the fp32 baseline after the change.",
      d.tc_eligible_pct, 100 * without, matrix_unit_name(d), matrix_unit_name(d), d.tensor_core_pct,
      device_is_amd(d) ? "vector units" : "CUDA cores", matrix_unit_name(d));
  f.evidence = {{"tc_eligible_without_tc_pct", 100 * without, "%"},
                {"tc_eligible_pct", d.tc_eligible_pct, "%"},
                {"tensor_core_pct", d.tensor_core_pct, "%"},
                {"eligible_on_tensor_cores_pct", 100 * covered, "%"}};
  if (d.compute_major >= 0) f.evidence.push_back({"compute_capability", d.compute_major + d.compute_minor / 10.0, ""});
  f.fixes = precision_fixes(d);
  add_channels_last_fix(f, a);
  // The affected kernels shrink to the roofline of the precision step where the roofline places
  // them, elsewhere by at most the device's Tensor / fp32 peak ratio; the rest of their time stays.
  const RooflinePrecisionStep step = roofline_precision_step(roofline, d);
  const double eligible_ns = static_cast<double>(d.tc_eligible_without_tc_ns);
  const double modelled_ns = std::min(step.modelled_ns, eligible_ns);
  const double floor_ns = step.modelled_ns > 0 ? step.floor_ns * modelled_ns / step.modelled_ns : 0;
  const double gain_ns =
      (modelled_ns - floor_ns) + (eligible_ns - modelled_ns) * (1.0 - 1.0 / tensor_core_speedup_bound(d));
  if (modelled_ns > 0) {
    f.evidence.push_back({"roofline_modelled_pct", 100 * modelled_ns / eligible_ns, "%"});
    f.evidence.push_back({"precision_step_roofline_ms", ns_to_ms(floor_ns), "ms"});
  }
  f.time_share = wall_share(d, d.tc_eligible_without_tc_ns) * (eligible_ns > 0 ? gain_ns / eligible_ns : 0.0);
  f.max_speedup = amdahl_speedup(f.time_share);
  // The what-if: the same kernels (launched by eligible ops, not on the matrix units) shortened by
  // the same gain, re-timed in the step: on a host-bound step they were never in the way.
  fix_speeds_up_device_work(
      f, "kernels of Tensor-Core-eligible ops off the matrix units", eligible_ns, gain_ns, is_tensor_core_eligible_op,
      [](std::string_view k) { return !is_tensor_core_kernel(k) && !is_communication_kernel(k); });
  f.threshold =
      "eligible ops' non-Tensor-Core kernels >= 10% of kernel time (25% medium, 50% high) and < 50% of eligible "
      "kernel time on Tensor Cores, compute capability >= 7.0 (ferret; TensorBoard plugin: Tensor Cores 0% and any "
      "eligible kernel time)";
  out.push_back(std::move(f));
}

// low-occupancy. CUPTI's kernel-time-weighted "est. achieved occupancy" over the element-wise,
// reduction and copy kernels (GEMM, convolution, attention and NCCL kernels are excluded: they run
// few, register-heavy warps by design) is below 25%, while those kernels take >= 20% of kernel
// time. Threshold: ferret's. 25% is 16 of the 64 warps an SM holds (Volta to Hopper): too few to
// hide DRAM latency in memory-bound kernels (NVIDIA's CUDA C++ Best Practices Guide, "Occupancy":
// low occupancy "always interferes with the ability to hide memory latency", with no single
// number). Below 10% is medium. AMD traces carry no occupancy estimate: the rule stays silent.
constexpr double kLowOccupancyPct = 25.0, kVeryLowOccupancyPct = 10.0, kLowOccupancyMinKernelShare = 0.20;

// The gain bound: a memory-bound kernel's throughput grows at most in proportion to its resident
// warps until they hide the memory latency; ferret takes 50% occupancy (32 of 64 warps) as that
// point, past which DRAM bandwidth, not latency, limits (the Best Practices Guide: higher occupancy
// does not always mean higher performance). Kernels at occupancy o keep at least o / 50 of their time.
constexpr double kLatencyHiddenOccupancyPct = 50.0;

void rule_low_occupancy(const DeviceMetrics& d, std::vector<Finding>& out) {
  if (d.kernel_ns <= 0 || d.non_matmul_occupancy_pct < 0 || d.non_matmul_occupancy_pct >= kLowOccupancyPct) return;
  const double kernel_share = static_cast<double>(d.non_matmul_occupancy_ns) / static_cast<double>(d.kernel_ns);
  if (kernel_share < kLowOccupancyMinKernelShare || !enough_evidence(d, d.non_matmul_occupancy_ns)) return;

  Finding f = finding_for("low-occupancy");
  f.title = fmt::format(
      "Low occupancy: element-wise and reduction kernels on {} keep {:.0f}% of their warp slots busy ({:.0f}% of "
      "kernel time)",
      device_label(d), d.non_matmul_occupancy_pct, 100 * kernel_share);
  f.layer = Layer::kOperator;
  f.severity = d.non_matmul_occupancy_pct < kVeryLowOccupancyPct ? Severity::kMedium : Severity::kLow;
  f.detail = fmt::format(
      "Kernels other than GEMM, convolution, attention and communication take {:.1f} ms ({:.0f}% of kernel time) at "
      "an estimated achieved occupancy of {:.1f}% (all kernels: {:.1f}%; est. SM efficiency {:.1f}% against "
      "{:.1f}% utilization). Memory-bound kernels need many resident warps to hide memory latency; these have "
      "few, usually because tensors are small (little work per launch) or kernels are short.",
      ns_to_ms(static_cast<double>(d.non_matmul_occupancy_ns)), 100 * kernel_share, d.non_matmul_occupancy_pct,
      d.achieved_occupancy_pct, d.sm_efficiency_pct, d.utilization_pct);
  f.evidence = {{"non_matmul_occupancy_pct", d.non_matmul_occupancy_pct, "%"},
                {"non_matmul_kernel_share_pct", 100 * kernel_share, "%"},
                {"achieved_occupancy_pct", d.achieved_occupancy_pct, "%"},
                {"sm_efficiency_pct", d.sm_efficiency_pct, "%"},
                {"gpu_utilization_pct", d.utilization_pct, "%"}};
  f.fixes = {
      "Fuse the small element-wise kernels into fewer, larger ones: `model = torch.compile(model)`",
      "More work per launch: raise the batch size (or sequence length) while memory allows",
      "Own Triton kernels: autotune warps and block sizes - `@triton.autotune(configs=[triton.Config({\"BLOCK_SIZE\": "
      "1024}, "
      "num_warps=8), triton.Config({\"BLOCK_SIZE\": 512}, num_warps=4)], key=[\"n_elements\"])`",
      "Own CUDA kernels: check the limiter with `ncu --section Occupancy --section LaunchStats python train.py`; cap "
      "registers with `__launch_bounds__(256, 4)` or use less shared memory per block",
  };
  f.time_share = wall_share(d, d.non_matmul_occupancy_ns) *
                 (1.0 - std::min(1.0, d.non_matmul_occupancy_pct / kLatencyHiddenOccupancyPct));
  f.max_speedup = amdahl_speedup(f.time_share);
  // The what-if: every kernel but GEMM/convolution and communication kept to the same share of its
  // time (occupancy is per launch, so all of them, by their mean occupancy).
  const double occupancy_ns = static_cast<double>(d.non_matmul_occupancy_ns);
  fix_speeds_up_device_work(
      f, "element-wise and reduction kernels at low occupancy", occupancy_ns,
      occupancy_ns * (1.0 - std::min(1.0, d.non_matmul_occupancy_pct / kLatencyHiddenOccupancyPct)),
      [](std::string_view k) { return !is_matmul_or_conv_kernel(k) && !is_communication_kernel(k); },
      [](std::string_view k) { return !is_matmul_or_conv_kernel(k) && !is_communication_kernel(k); });
  f.threshold =
      "est. achieved occupancy of non-GEMM kernels < 25% (< 10% medium) and those kernels >= 20% of kernel time "
      "(ferret)";
  out.push_back(std::move(f));
}

// matmul-dominated. GEMM / convolution / attention kernels (by name, or launched by an eligible
// operator) take more than half of the compute (non-NCCL) kernel time: the seed's "matmul
// dominates" scenario, where the levers are precision, kernel selection and fusion. Threshold:
// > 50% (the majority of GPU work). Severity: medium when under half of that time already runs
// on Tensor Cores (precision alone is a large lever), else low (the finding says where the time
// goes; the remaining levers are compilation and fusion).
constexpr double kMatmulDominated = 0.50, kMatmulOnTensorCoresEnough = 0.50;

// Tensor Core GEMMs run best when the dimensions operands are laid out along - K, and N - are
// multiples of 8 elements for fp16/bf16 (16 for FP8 and int8): NVIDIA's "Matrix Multiplication
// Background" performance guide (GEMM dimension alignment: aligned rows allow the wide loads);
// rocBLAS/hipBLASLt's MFMA tiles likewise. M (batch x sequence: rows) only sets how many tiles run,
// and padding it by a few rows changes no tile: it is not judged. Groups under this share of the
// GEMM time are not worth a padding.
constexpr double kMisalignedMinShare = 0.05;
constexpr int kGemmAlignment = 8;

bool aligned(double dim) { return dim <= 0 || std::fmod(dim, kGemmAlignment) == 0; }

// The GEMM group with the most GPU time whose M, N or K is off the alignment, on this device; and
// whether any GEMM group had its shape recorded at all.
struct GemmAlignment {
  const RooflineGroup* worst = nullptr;
  bool shapes_known = false;
};

GemmAlignment gemm_alignment(const RooflineResult& r, const DeviceMetrics& d) {
  GemmAlignment out;
  if (r.device != d.device || d.matmul_conv_ns <= 0) return out;
  for (const RooflineGroup& g : r.groups) {
    if (g.gemm_m <= 0 || g.gemm_n <= 0 || g.gemm_k <= 0) continue;
    out.shapes_known = true;
    if (aligned(g.gemm_n) && aligned(g.gemm_k)) continue;
    if (static_cast<double>(g.kernel_ns) < kMisalignedMinShare * static_cast<double>(d.matmul_conv_ns)) continue;
    if (out.worst == nullptr || g.kernel_ns > out.worst->kernel_ns) out.worst = &g;
  }
  return out;
}

// The fix for shapes: the group and the dimension to pad, where the trace names them.
void add_alignment_fix(Finding& f, const GemmAlignment& al, const DeviceMetrics& d, const std::string& units) {
  const std::string generic = fmt::format(
      "Shapes that suit the {}: make GEMM dimensions (hidden size, vocabulary, batch x sequence) multiples of 8 for "
      "fp16/bf16 (16 for FP8), e.g. pad the vocabulary to a multiple of 64",
      units);
  if (al.worst == nullptr) {
    f.fixes_left_out.push_back(
        {generic, al.shapes_known ? "the trace's GEMMs have N and K in multiples of 8 already"
                                  : "the trace records no GEMM shapes to check (profile with record_shapes=True)"});
    return;
  }
  const RooflineGroup& g = *al.worst;
  std::string off;
  for (const auto& [name, dim] : {std::pair{"N", g.gemm_n}, {"K", g.gemm_k}})
    if (!aligned(dim)) off += fmt::format("{}{} = {:.0f}", off.empty() ? "" : ", ", name, dim);
  Fix fix(
      fmt::format("Pad {} to multiples of 8 (64 where the memory allows) so its GEMM tiles fill the {}: {} (inputs "
                  "{}) - pad the dimension at its source (hidden size, vocabulary, batch x sequence)",
                  g.op, units, off, g.input_dims));
  add_because(fix, fmt::format("{} takes {:.0f}% of the GEMM time with {} off the alignment", g.op,
                               100.0 * static_cast<double>(g.kernel_ns) / static_cast<double>(d.matmul_conv_ns), off));
  f.fixes.push_back(std::move(fix));
}

// The attention fix where the trace computes attention op by op (named by its shapes); left out
// where attention already runs fused or the trace's operators hold none.
void add_attention_fix(Finding& f, const AttentionPatternsResult& att, bool ops_recorded) {
  const std::string generic =
      "Attention: one fused kernel instead of matmul-softmax-matmul - "
      "`torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)`";
  if (!att.groups.empty()) {
    const UnfusedAttentionGroup& g = att.groups.front();
    Fix fix(
        fmt::format("Attention: one fused kernel instead of {} -> {} -> matmul - "
                    "`torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=...)` (True for a "
                    "causal mask)",
                    g.score_op, g.softmax_op));
    add_because(fix, g.query_len > 0 ? fmt::format("the trace computes attention op by op ({} calls, scores [{} x {} "
                                                   "x {}])",
                                                   g.calls, g.batch, g.query_len, g.key_len)
                                     : fmt::format("the trace computes attention op by op ({} calls)", g.calls));
    f.fixes.push_back(std::move(fix));
  } else if (att.fused_calls > 0) {
    f.fixes_left_out.push_back({generic, "the trace shows fused attention (scaled_dot_product_attention) in use"});
  } else if (ops_recorded) {
    f.fixes_left_out.push_back({generic, "the trace computes no attention op by op (matmul, softmax, matmul)"});
  } else {
    f.fixes.push_back(generic);  // kernels only: nothing to tell
  }
}

void rule_matmul_dominated(const DeviceMetrics& d, const TraceAnalysis& a, std::vector<Finding>& out) {
  if (d.compute_kernel_ns <= 0 || d.matmul_conv_pct / 100.0 <= kMatmulDominated) return;
  if (!enough_evidence(d, d.matmul_conv_ns)) return;
  const double on_tensor_cores =
      d.matmul_conv_ns > 0
          ? std::min(1.0, static_cast<double>(d.tensor_core_ns) / static_cast<double>(d.matmul_conv_ns))
          : 0.0;

  Finding f = finding_for("matmul-dominated");
  const std::string units = matrix_unit_name(d);
  f.title = fmt::format("Matmul-dominated: GEMM/convolution kernels take {:.0f}% of GPU compute time on {}{}",
                        d.matmul_conv_pct, device_label(d),
                        units.empty() ? "" : fmt::format(" ({:.0f}% of it on {})", 100 * on_tensor_cores, units));
  f.layer = Layer::kOperator;
  f.severity = on_tensor_cores < kMatmulOnTensorCoresEnough ? Severity::kMedium : Severity::kLow;
  f.detail = fmt::format(
      "Matrix multiplications, convolutions and attention take {:.1f} ms of the {:.1f} ms of compute kernel time "
      "in the analysed window ({:.1f}%). Their speed is set by the precision they run in, the kernels chosen for "
      "their shapes, and the memory traffic of the small operators around them.",
      ns_to_ms(static_cast<double>(d.matmul_conv_ns)), ns_to_ms(static_cast<double>(d.compute_kernel_ns)),
      d.matmul_conv_pct);
  f.evidence = {{"matmul_conv_pct", d.matmul_conv_pct, "%"},
                {"matmul_conv_ms", ns_to_ms(static_cast<double>(d.matmul_conv_ns)), "ms"}};
  if (!units.empty()) {
    f.evidence.push_back({"matmul_on_tensor_cores_pct", 100 * on_tensor_cores, "%"});
    f.evidence.push_back({"tensor_core_pct", d.tensor_core_pct, "%"});
  }
  if (on_tensor_cores < kMatmulOnTensorCoresEnough && !units.empty()) f.fixes = precision_fixes(d);
  if (!device_is_amd(d) && d.compute_major >= 9)
    f.fixes.push_back(
        "FP8 on Hopper and later with Transformer Engine: `import transformer_engine.pytorch as te`; build layers "
        "from `te.Linear`; `with te.fp8_autocast(enabled=True): out = model(x)`");
  f.fixes.push_back(
      "Autotune GEMM kernels and fuse bias/activation epilogues into them: `model = torch.compile(model, "
      "mode=\"max-autotune\")`");
  if (device_is_nvidia(d))
    f.fixes.push_back(
        "Inference: compile to TensorRT - `trt_model = torch_tensorrt.compile(model, ir=\"dynamo\", "
        "inputs=[example], enabled_precisions={torch.half})`");
  add_attention_fix(f, a.attention, !a.hot_spots.ops_by_host.empty());
  if (!units.empty()) add_alignment_fix(f, gemm_alignment(a.roofline, d), d, units);
  // Precision makes matmuls faster, not free: off the matrix units the bound is the device's
  // Tensor/FP32 peak ratio applied to their time. Once on them, what is left (FP8 on Hopper and
  // later, autotuned kernels, fused epilogues) depends on numerics and shapes the trace does not
  // show, and on a device ferret knows no matrix units of (MTIA, unnamed) there is no precision
  // step to bound: the finding then says where the time goes and bounds no gain.
  const bool precision_step = !units.empty() && on_tensor_cores < kMatmulOnTensorCoresEnough;
  const double matmul_speedup = precision_step ? tensor_core_speedup_bound(d) : 1.0;
  f.time_share = wall_share(d, d.matmul_conv_ns) * (1.0 - 1.0 / matmul_speedup);
  f.max_speedup = amdahl_speedup(f.time_share);
  // The what-if: the same kernels (GEMM/convolution by name, or launched by an eligible op) at the
  // same factor.
  const double matmul_ns = static_cast<double>(d.matmul_conv_ns);
  fix_speeds_up_device_work(
      f, "GEMM/convolution kernels", matmul_ns, matmul_ns * (1.0 - 1.0 / matmul_speedup),
      [](std::string_view n) { return is_matmul_or_conv_kernel(n) || is_tensor_core_eligible_op(n); },
      [](std::string_view k) { return !is_communication_kernel(k); });
  f.threshold = "GEMM/convolution/attention kernels > 50% of compute kernel time (ferret)";
  out.push_back(std::move(f));
}

}  // namespace

void rules_gpu_efficiency(const TraceAnalysis& a, std::vector<Finding>& out) {
  for (const DeviceMetrics& d : a.gpu_metrics.devices) {
    rule_no_tensor_cores(d, a, out);
    rule_low_occupancy(d, out);
    rule_matmul_dominated(d, a, out);
  }
}

namespace {
constexpr RuleInfo kGpuEfficiencyRules[] = {
    RuleInfo{"no-tensor-cores", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause},
    RuleInfo{"low-occupancy", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause},
    // Matmuls off Tensor Cores (rules_cpu also emits it, for CPU matmuls): no-tensor-cores measures the
    // same precision step on the exact kernels.
    RuleInfo{"matmul-dominated", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause, {}, "no-tensor-cores"},
};
}  // namespace

FERRET_RULE_FAMILY(gpu_efficiency){"rules_gpu_efficiency", 40, kGpuEfficiencyRules, rule_run<rules_gpu_efficiency>()};

}  // namespace ferret
