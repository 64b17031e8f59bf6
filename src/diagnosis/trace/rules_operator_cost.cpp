// The operators that cost the most: hot-operator (one operator holds a large share of the GPU time)
// and top-cost (the largest cost, named when no rule became the verdict). They read HotSpotsResult
// and the roofline. docs/rules/host.md describes each rule, its threshold and its source.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "analysis/operator/tensor_cores.h"
#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// top-cost. No threshold: it is written only when no finding became the verdict (diagnose.cpp), so
// that "no rule crossed its threshold" never reads as "nothing costs anything". It names the
// operator that holds the most self time - device self time where the trace has GPU work, host
// self time without - and bounds no gain: a cost is not a waste until a rule says why.
struct SlowPath {
  std::string_view name_part;  // a substring of the operator's name
  std::string_view what;       // why it is slow, for the detail
  std::vector<std::string_view> fixes;
};

// Operators that are PyTorch's own slow fallbacks: their time is a fix waiting to be made. The
// reference convolutions (im2col + GEMM, `slow_conv*`, formerly `thnn_conv*`) run when oneDNN
// (CPU) or cuDNN/MIOpen (GPU) does not take the call: PyTorch's CPU heuristic leaves float32 NCHW
// convolutions with batch 1 and small filters to them, and float64, disabled backends or a build
// without them always do (aten/src/ATen/native/Convolution.cpp, use_mkldnn / use_cudnn).
const std::vector<SlowPath>& slow_paths() {
  static const std::vector<SlowPath> paths = {
      {"slow_conv",
       "PyTorch's slow fallback convolution (im2col + GEMM), used when neither oneDNN (CPU) nor cuDNN/MIOpen (GPU) "
       "takes the call: float64 inputs, disabled or missing backends, or - on the CPU - float32 NCHW inputs of batch 1 "
       "with small filters, which PyTorch's heuristic leaves to it",
       {"Check the fast path is there: `torch.backends.mkldnn.is_available(), torch.backends.mkldnn.enabled` (CPU) or "
        "`torch.backends.cudnn.is_available(), torch.backends.cudnn.enabled` (GPU)",
        "Let oneDNN take the convolutions: `model = model.to(memory_format=torch.channels_last); x = "
        "x.to(memory_format=torch.channels_last)`",
        "Run in float32 or bfloat16, not float64: `model.float()` (or `with torch.autocast(\"cpu\", "
        "dtype=torch.bfloat16):` on CPUs with AVX-512 BF16 / AMX)",
        "model = torch.compile(model)  # or export to ONNX Runtime / OpenVINO for CPU inference"}},
      {"thnn_conv",
       "PyTorch's slow fallback convolution (im2col + GEMM, THNN), used when neither oneDNN nor cuDNN takes the call",
       {"Check the fast path is there: `torch.backends.mkldnn.enabled`, `torch.backends.cudnn.enabled`",
        "Let oneDNN take the convolutions: `model = model.to(memory_format=torch.channels_last)`",
        "Run in float32 or bfloat16, not float64: `model.float()`"}},
  };
  return paths;
}

}  // namespace

constexpr double kOutsideOpsShare = 0.10;

void rule_top_cost(const TraceAnalysis& a, std::vector<Finding>& out) {
  const HotSpotsResult& h = a.hot_spots;
  if (h.window_ns <= 0) return;
  // On the device when there is device work: the GPU's time is what a step waits for. A graph-replay
  // row is many operators' work; a hot-operator finding already names the top one.
  const bool on_device = h.gpu_activities > 0 && h.attributed_device_ns > 0;
  if (on_device && std::any_of(out.begin(), out.end(), [](const Finding& f) { return f.id == "hot-operator"; })) return;
  const std::vector<OpStat>& rows = on_device ? h.ops_by_device : h.ops_by_host;
  // Kernels launched outside operators count where operators launch the rest (hot-operator's rule).
  const bool ops_launch = h.operator_device_ns() > 0;
  const auto it = std::find_if(rows.begin(), rows.end(), [&](const OpStat& o) {
    return !o.graph_replay && (!o.no_operator || ops_launch) && (on_device ? o.device_self_ns : o.host_self_ns) > 0;
  });
  if (it == rows.end()) return;
  const OpStat& op = *it;
  const std::int64_t op_ns = on_device ? op.device_self_ns : op.host_self_ns;
  const std::int64_t of_ns = on_device ? h.attributed_device_ns : h.host_op_ns;  // the time ops account for
  const double share = std::min(1.0, share_of(op_ns, of_ns));
  const double of_window = std::min(1.0, share_of(op_ns, h.window_ns));
  const auto slow = std::find_if(slow_paths().begin(), slow_paths().end(),
                                 [&](const SlowPath& p) { return op.name.find(p.name_part) != std::string::npos; });
  const bool is_slow_path = slow != slow_paths().end();
  Finding f = finding_for("top-cost");
  f.layer = Layer::kOperator;
  f.severity = Severity::kInfo;
  f.title = fmt::format("The largest cost is {}: {:.0f}% of the {} time in operators ({} call{}, {}){}", op.name,
                        share_to_pct(share), on_device ? "GPU" : "host", op.calls, op.calls == 1 ? "" : "s",
                        human_duration(op_ns), is_slow_path ? ", PyTorch's slow fallback path" : "");
  f.detail = fmt::format(
      "No rule judged a cause in this {}, but its time still goes somewhere: {} holds {:.2f} ms of {} self time, "
      "{:.0f}% of the {:.2f} ms spent in operators and {:.0f}% of the {:.2f} ms {}.{} This is where time goes, not a "
      "waste a rule measured; a faster operator there is the first place to gain.",
      window_noun(a), op.name, ns_to_ms(op_ns), on_device ? "device" : "host", share_to_pct(share), ns_to_ms(of_ns),
      share_to_pct(of_window), ns_to_ms(h.window_ns), window_noun(a),
      is_slow_path ? fmt::format(" It is {}.", slow->what) : std::string());
  f.evidence = {{"op_ms", ns_to_ms(op_ns), "ms"},
                {"op_share_pct", share_to_pct(share), "%"},
                {"op_share_of_window_pct", share_to_pct(of_window), "%"},
                {"op_calls", static_cast<double>(op.calls), "count"}};
  if (is_slow_path)
    for (std::string_view fix : slow->fixes) f.fixes.emplace_back(fix);
  f.fixes.push_back(
      "See its shapes and callers: profile with `record_shapes=True, with_stack=True` and print "
      "`prof.key_averages(group_by_input_shape=True).table(sort_by=\"self_" +
      std::string(on_device ? "cuda" : "cpu") + "_time_total\", row_limit=10)`");
  // On the host, time in no operator at all (the breakdown's Other) is a cost no operator row
  // shows: Python, or native code the profiler does not record - a C++ extension bound with
  // pybind11 alone, NumPy, a tokenizer. Named beside the top operator from kOutsideOpsShare of the
  // window, first when it is larger.
  const double steps = static_cast<double>(std::max<std::size_t>(1, a.breakdown.steps.size()));
  const auto outside_ns = static_cast<std::int64_t>(a.breakdown.average_of(StepCategory::kOther) * steps);
  const double outside = std::min(1.0, share_of(outside_ns, h.window_ns));
  if (!on_device && outside >= kOutsideOpsShare) {
    const bool first = outside_ns > op_ns;
    if (first)
      f.title = fmt::format(
          "The largest cost is host time outside every operator: {:.0f}% of the {} ({}), more than {} ({})",
          share_to_pct(outside), window_noun(a), human_duration(outside_ns), op.name, human_duration(op_ns));
    f.detail += fmt::format(
        " {} {:.2f} ms ({:.0f}% of the {}) pass in no recorded operator: Python, or native code the profiler does "
        "not see - a C++ extension bound with pybind11 alone, NumPy, a tokenizer.",
        first ? "Larger still," : "Beside it,", ns_to_ms(outside_ns), share_to_pct(outside), window_noun(a));
    f.evidence.push_back({"outside_ops_ms", ns_to_ms(outside_ns), "ms"});
    f.evidence.push_back({"outside_ops_pct", share_to_pct(outside), "%"});
    const auto at = first ? f.fixes.begin() : f.fixes.end();
    f.fixes.insert(at, {"Name the code outside the operators: profile with `with_stack=True` (its Python frames), and "
                        "wrap regions in `with torch.profiler.record_function(\"name\"):`",
                        "Register a C++ extension's functions with the dispatcher (`TORCH_LIBRARY(ns, m) { "
                        "m.def(\"op(Tensor x) -> Tensor\"); }` and call `torch.ops.ns.op(x)`) so the profiler "
                        "records and names them"});
  }
  f.threshold = "none: named when no finding is the verdict (ferret)";
  f.time_share = share;
  f.max_speedup = 1.0;  // a cost, not a measured waste: no bound
  out.push_back(std::move(f));
}

namespace {

// hot-operator. One operator (by name; collectives excepted) runs >= 25% of the GPU time launched
// from ops and >= 1% of the window. No peer sets a level; ferret's: at a quarter of GPU time one
// operator is the first place to optimize, since Amdahl caps every other single fix lower. Severity
// low, medium at >= 50%: it names where time goes, not waste by itself.
constexpr double kHotOperatorShare = 0.25;
constexpr double kHotOperatorMedium = 0.50;
// Of the window: the floor below which no fix is worth a user's time (the host rules' 1%).
constexpr double kHotOperatorFloor = 0.01;

// Collectives are the distributed rules' subject; their GPU time is mostly waiting for peers.
bool is_communication_op(std::string_view op) {
  return op == "record_param_comms" || op.substr(0, 5) == "nccl:" || op.substr(0, 5) == "gloo:" ||
         op.substr(0, 6) == "c10d::";
}

// The matrix units of the device that ran the most kernel time, by its vendor's name ("" when
// ferret does not know them: MTIA, an unnamed accelerator, a CPU-only trace).
std::string busiest_device_matrix_units(const GpuMetricsResult& gpus) {
  const DeviceMetrics* busiest = nullptr;
  for (const DeviceMetrics& d : gpus.devices)
    if (busiest == nullptr || d.kernel_ns > busiest->kernel_ns) busiest = &d;
  return busiest != nullptr ? matrix_unit_name(*busiest) : std::string();
}

// The roofline's bound on a hot operator: its groups (analysis/operator/roofline.h) can lose at most their
// time above the roofline - of the precision step for fp32 matrix work off the matrix units, of
// their own dtype otherwise - and the op's GPU time no group places can at most vanish. Returned
// as GPU time a fix can win back; -1 when the roofline places under half of the op's time (the
// bound would say little more than the op's share).
constexpr double kHotOperatorMinModelled = 0.50;

double hot_operator_gain_ns(const RooflineResult& r, const OpStat& op) {
  if (op.device_self_ns <= 0) return -1;
  double modelled = 0, excess = 0;
  for (const RooflineGroup& g : r.groups) {
    if (g.op != op.name) continue;
    double floor = precision_step_roofline_ns(r, g);
    if (floor < 0) floor = g.roofline_ns;
    if (floor < 0) continue;
    modelled += static_cast<double>(g.kernel_ns);
    excess += std::max(0.0, static_cast<double>(g.kernel_ns) - floor);
  }
  const double total = static_cast<double>(op.device_self_ns);
  if (modelled < kHotOperatorMinModelled * total) return -1;
  return excess + std::max(0.0, total - modelled);
}

// The fixes for a hot kernel no PyTorch operator launched: profile it with the device's kernel
// profiler, autotune a Triton kernel, register it so that the profiler names it.
std::vector<Fix> custom_kernel_fixes(const std::string& name, const std::string& units) {
  std::vector<Fix> fixes;
  const std::string kernel = name.substr(0, name.find('('));
  if (units == "Matrix Cores")
    fixes = {
        fmt::format("Profile the kernel itself: `rocprofv3 --kernel-trace --stats -- python train.py`, "
                    "then `rocprof-compute profile -n ferret -k {} -- python train.py` for its bandwidth, FLOPs and "
                    "occupancy against the roofline",
                    kernel)};
  else if (units.empty())
    fixes = {
        fmt::format("Profile the kernel itself with the device vendor's kernel profiler: its achieved "
                    "bandwidth and FLOPs against the device's peaks tell whether {} is memory- or "
                    "compute-bound",
                    kernel)};
  else
    fixes = {
        fmt::format("Profile the kernel itself: `ncu --set full -k regex:{} -c 5 python train.py` "
                    "(Nsight Compute: achieved bandwidth and FLOPs against the roofline, occupancy, stall "
                    "reasons)",
                    kernel)};
  if (kernel.rfind("triton", 0) == 0)
    fixes.push_back(
        "A Triton kernel: autotune its block sizes and warps (`@triton.autotune(configs=[...], key=[...])`) for "
        "the shapes it runs");
  fixes.push_back(
      "Register it as an operator (`torch.library.custom_op`, or a `torch.profiler.record_function(\"name\")` "
      "around the call) so that the profiler names it and records its shapes");
  return fixes;
}

// The fixes for a hot operator whose matrix work is off the matrix units: a reduced precision in
// the device's terms, and compiling to fuse around it.
std::vector<Fix> matrix_precision_fixes(const std::string& op_name, const std::string& units) {
  std::vector<Fix> fixes;
  // Precision fixes only for work not already on the matrix units in a reduced precision (an
  // ampere_fp16_s16816gemm is fp16 on Tensor Cores already).
  // Precision fixes in the device's terms: ROCm builds of PyTorch use the "cuda" device type and
  // map the cudnn flags to MIOpen; TF32 is an NVIDIA (Ampere on) format; of other devices ferret
  // knows no precision path, so it names the generic one.
  if (units.empty())
    fixes = {
        "If the device computes bf16 faster than fp32, run it in bf16: `with torch.autocast(x.device.type, "
        "dtype=torch.bfloat16): out = model(x)`"};
  else
    fixes = {
        fmt::format("Run it in bf16 on {}: `with torch.autocast(\"cuda\", dtype=torch.bfloat16): out = "
                    "model(x)`",
                    units)};
  if (units == "Tensor Cores")
    fixes.push_back(
        "For fp32, allow TF32: `torch.backends.cuda.matmul.allow_tf32 = True; torch.backends.cudnn.allow_tf32 = "
        "True` (or `torch.set_float32_matmul_precision(\"high\")`)");
  fixes.push_back("Compile to fuse its prologue/epilogue: `model = torch.compile(model, mode=\"max-autotune\")`");
  if (!units.empty() && op_name.find("conv") != std::string::npos)
    fixes.push_back(
        "Let cuDNN pick the fastest algorithm: `torch.backends.cudnn.benchmark = True`; use "
        "`model = model.to(memory_format=torch.channels_last)`");
  return fixes;
}

void rule_hot_operator(const HotSpotsResult& hs, const RooflineResult& roofline, const std::string& units,
                       std::vector<Finding>& out) {
  if (hs.attributed_device_ns <= 0 || hs.window_ns <= 0) return;
  // A graph-replay row (its capturing ops unknown) is many operators' work, not one to optimize.
  // A kernel launched outside operators is the user's own only where operators launch the rest: a
  // trace whose launches no op encloses at all (a C++ inference runtime) did not record operators.
  // torch.cuda._sleep's spin kernel waits on purpose (tests, overlap demos): nothing to speed up.
  const bool ops_launch = hs.operator_device_ns() > 0;
  const auto it = std::find_if(hs.ops_by_device.begin(), hs.ops_by_device.end(), [&](const OpStat& o) {
    if (o.no_operator && (!ops_launch || o.name.find("::spin_kernel") != std::string::npos)) return false;
    return !is_communication_op(o.name) && !o.graph_replay;
  });
  if (it == hs.ops_by_device.end()) return;
  const OpStat& op = *it;
  const double of_gpu = share_of(op.device_self_ns, hs.attributed_device_ns);
  const double share = std::min(1.0, share_of(op.device_self_ns, hs.window_ns));
  // A quarter of a GPU that is almost never busy is no hot spot: the op must also hold >= 1% of
  // the wall time.
  if (of_gpu < kHotOperatorShare || share < kHotOperatorFloor) return;
  // A no-operator row's name is "no operator: KERNEL"; its text names the kernel.
  const std::string name = op.no_operator ? op.name.substr(std::string_view("no operator: ").size()) : op.name;
  Finding f = finding_for("hot-operator");
  f.title = op.no_operator
                ? fmt::format(
                      "Hot kernel outside PyTorch's operators: {} runs {:.0f}% of the GPU time ({} launches, "
                      "{:.2f} ms)",
                      name, share_to_pct(of_gpu), op.calls, ns_to_ms(op.device_self_ns))
                : fmt::format("Hot operator: {} runs {:.0f}% of the GPU time ({} calls, {:.2f} ms)", op.name,
                              share_to_pct(of_gpu), op.calls, ns_to_ms(op.device_self_ns));
  f.layer = Layer::kOperator;
  f.severity = of_gpu >= kHotOperatorMedium ? Severity::kMedium : Severity::kLow;
  const KernelStat* top_kernel = nullptr;  // a no-operator row is its kernel already
  for (const KernelStat& k : hs.kernels)
    for (const KernelLaunchPath& p : k.launched_by)
      if (!op.no_operator && p.op == op.name && top_kernel == nullptr) top_kernel = &k;
  f.detail = fmt::format(
      "{} launched {} GPU activities for {:.2f} ms of the {:.2f} ms of GPU work launched in the window ({:.1f}% "
      "of the window){}{}.",
      name, op.kernels, ns_to_ms(op.device_self_ns), ns_to_ms(hs.attributed_device_ns), share_to_pct(share),
      op.device_replayed_ns > 0
          ? fmt::format(" ({:.0f}% of it replays of graph nodes it captured)",
                        100.0 * static_cast<double>(op.device_replayed_ns) / static_cast<double>(op.device_self_ns))
          : std::string(),
      top_kernel ? fmt::format("; its largest kernel is {} ({} calls, mean {:.1f} us{})", top_kernel->name,
                               top_kernel->calls, top_kernel->mean_ns / 1e3,
                               units.empty() ? std::string() : (top_kernel->tensor_core ? ", " : ", no ") + units)
                 : std::string());
  f.evidence = {{"op_gpu_ms", ns_to_ms(op.device_self_ns), "ms"},
                {"op_share_of_gpu_pct", share_to_pct(of_gpu), "%"},
                {"op_share_of_window_pct", share_to_pct(share), "%"},
                {"op_calls", static_cast<double>(op.calls), "count"}};
  if (op.no_operator) {
    // No PyTorch operator launched it: the user's own kernel (an extension, Triton called directly)
    // or a library called from C++. Its own profile, and a name and shapes for the profiler.
    f.detail += fmt::format(
        " No PyTorch operator encloses its launches{}: it is a custom kernel (a C++/CUDA extension, a Triton "
        "kernel launched directly) or a library called from C++, so no operator finding can name it, and the "
        "roofline has no shapes to place it.",
        op.launch_site.empty() ? std::string() : fmt::format(" (launched from the Python frame {})", op.launch_site));
    f.fixes = custom_kernel_fixes(name, units);
  } else if (is_tensor_core_eligible_op(op.name) && (top_kernel == nullptr || !top_kernel->tensor_core)) {
    f.fixes = matrix_precision_fixes(op.name, units);
  } else {
    f.fixes = {
        "Fuse it with its neighbours: `model = torch.compile(model)` (Inductor merges elementwise and reduction chains "
        "into one kernel)",
        "Look for a fused implementation (e.g. `torch.nn.functional.scaled_dot_product_attention`, fused optimizers "
        "`fused=True`, `torch.nn.functional.layer_norm`)",
    };
  }
  // Precision, fusion or a better kernel make the operator faster by an amount its name does not
  // tell; its roofline does: the time above it is the most any of them wins back. Where the
  // roofline cannot place the op, the finding says where the time goes, bounds no gain and keeps
  // its own severity.
  const double gain_ns = hot_operator_gain_ns(roofline, op);
  // Matrix work already on the matrix units: fusion and fused implementations (the fixes above)
  // act around a GEMM, not on it, and no datasheet peak is a GEMM's attainable rate, so the time
  // above the roofline is said, not promised (a serving prefill's bf16 GEMMs at 35-48% of an
  // MI300X's peak would have read "predicted 2.08x").
  const bool on_matrix_units =
      !op.no_operator && is_tensor_core_eligible_op(op.name) && top_kernel != nullptr && top_kernel->tensor_core;
  if (gain_ns >= 0 && on_matrix_units) {
    f.time_share = share;
    f.max_speedup = 1.0;
    f.evidence.push_back({"above_roofline_ms", ns_to_ms(gain_ns), "ms"});
    f.detail += fmt::format(
        " Its matrix work runs on {} already; {:.2f} ms of it lies above the roofline of the datasheet's peaks, which "
        "tuned GEMM kernels (autotuning, the vendor's tuned-GEMM libraries) approach but no kernel reaches.",
        units.empty() ? "the matrix units" : units, ns_to_ms(gain_ns));
  } else if (gain_ns >= 0) {
    f.time_share = std::min(share, gain_ns / static_cast<double>(hs.window_ns));
    f.max_speedup = amdahl_speedup(f.time_share);
    f.evidence.push_back({"above_roofline_ms", ns_to_ms(gain_ns), "ms"});
    // The what-if: the operator's kernels down to its roofline, re-timed in the step.
    fix_speeds_up_device_work(f, op.name + " at its roofline", static_cast<double>(op.device_self_ns), gain_ns,
                              [name = op.name](std::string_view n) { return n == name; });
  } else {
    f.time_share = share;
    f.max_speedup = 1.0;
  }
  f.threshold =
      "one operator (not a collective), or one kernel launched outside any operator, >= 25% of the GPU time "
      "launched in the window and >= 1% of the window (ferret); >= 50% medium";
  out.push_back(std::move(f));
}

}  // namespace

void rules_hot_operator(const TraceAnalysis& a, std::vector<Finding>& out) {
  rule_hot_operator(a.hot_spots, a.roofline, busiest_device_matrix_units(a.gpu_metrics), out);
}

namespace {
constexpr RuleInfo kHotOperatorRules[] = {
    RuleInfo{"hot-operator", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause},
};
// Informational, written only when no finding is the verdict: it never competes for it.
constexpr RuleInfo kTopCostRules[] = {
    RuleInfo{"top-cost", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause},
};
}  // namespace

// After rules_host, whose launch-bound finding it stands beside.
FERRET_RULE_FAMILY(hot_operator){"rules_hot_operator", 51, kHotOperatorRules, rule_run<rules_hot_operator>()};
FERRET_RULE_FAMILY(top_cost){"rule_top_cost", 10, kTopCostRules, rule_run<rule_top_cost>(), RulePhase::kNoVerdict};

}  // namespace ferret
