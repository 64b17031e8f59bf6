// Operator-layer rules that read the roofline (analysis/operator/roofline.h) and the kernel sequence:
// GEMMs held back by their shapes and chains of memory-bound kernels a compiler would fuse. Their gains are the time
// the operators spend above their roofline, or the launch time the what-if re-times away: docs/RULES.md "Gain bounds".
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "analysis/causal/whatif.h"
#include "analysis/operator/input_shapes.h"
#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// gemm-shape. A GEMM group (mm, addmm, bmm, baddbmm, matmul, linear, _scaled_mm) runs under half
// of the rate its roofline allows and its shape says why:
//   misaligned  N or K (the leading dimensions of row-major operands) is not a multiple of 16
//               bytes of elements - 8 for fp16/bf16, 4 for fp32, 16 for fp8/int8, 32 for fp4 - so cuBLAS cannot
//               use its aligned Tensor Core kernels (NVIDIA Deep Learning Performance Guide,
//               "Matrix Multiplication Background": Tensor Core requirements, and "dimensions
//               should be multiples of 8 (fp16) ... 16 (int8)");
//   small-m     batch x M <= 16 rows: a matrix-vector product (decode), whose time is the weight's
//               read; more rows per read (batching requests, speculative tokens) is the lever;
//   skinny      the smallest of M, N, K is <= 64 and another dimension is >= 64x it: too few output
//               tiles to fill the multiprocessors and little arithmetic per byte.
// Threshold: ferret's. Under half of the roofline is the band where shapes, not the kernel
// library, explain the loss (tuned cuBLAS GEMMs on good shapes reach 60-80% of the datasheet
// peak, TraceLens's GEMM sheets of H100 traces among them); the groups with a shape cause must
// also hold >= 2% of the window, ferret's floor for an operator-level fix.
constexpr double kGemmFarBelowRoofline = 0.50;
constexpr double kGemmShapeMinShare = 0.02;
constexpr double kSmallMRows = 16;
constexpr double kSkinnyDim = 64, kSkinnyRatio = 64;

enum class ShapeIssue { kNone, kMisaligned, kSmallM, kSkinny };

// Elements in 16 bytes of the group's dtype; 0 when the dtype is unknown.
double alignment_elements(Dtype d) {
  switch (d) {
    case Dtype::kFp64: return 2;
    case Dtype::kFp32:
    case Dtype::kTf32: return 4;
    case Dtype::kBf16:
    case Dtype::kFp16: return 8;
    case Dtype::kFp8:
    case Dtype::kInt8: return 16;
    case Dtype::kFp4: return 32;
    case Dtype::kFp6:  // no torch dtype: never from recorded shapes
    case Dtype::kUnknown: return 0;
  }
  return 0;
}

bool multiple_of(double v, double m) { return m <= 0 || std::fmod(v, m) == 0; }

ShapeIssue shape_issue(const RooflineGroup& g) {
  if (g.gemm_m <= 0 || g.gemm_n <= 0 || g.gemm_k <= 0) return ShapeIssue::kNone;
  const double rows = g.gemm_m * std::max(1.0, g.gemm_batch);
  if (rows <= kSmallMRows) return ShapeIssue::kSmallM;
  // Alignment is a matrix-unit requirement: half-precision and 8-bit GEMMs, and fp32 ones on the
  // Tensor Cores (TF32). An fp32 GEMM on the CUDA cores is no-tensor-cores' subject.
  const bool matrix_dtype = is_matrix_format(g.dtype) || (g.dtype == Dtype::kFp32 && g.matrix_units);
  const double align = alignment_elements(g.dtype);
  if (matrix_dtype && (!multiple_of(g.gemm_n, align) || !multiple_of(g.gemm_k, align))) return ShapeIssue::kMisaligned;
  const double smallest = std::min({g.gemm_m, g.gemm_n, g.gemm_k});
  const double largest = std::max({g.gemm_m, g.gemm_n, g.gemm_k});
  if (smallest <= kSkinnyDim && largest >= kSkinnyRatio * smallest) return ShapeIssue::kSkinny;
  return ShapeIssue::kNone;
}

const char* issue_words(ShapeIssue i) {
  switch (i) {
    case ShapeIssue::kMisaligned: return "N or K not a multiple of 16 bytes of elements";
    case ShapeIssue::kSmallM: return "at most 16 rows (a matrix-vector product)";
    case ShapeIssue::kSkinny: return "one dimension <= 64 against one >= 64x larger";
    case ShapeIssue::kNone: break;
  }
  return "";
}

// The least time of the group on a good shape: its roofline, held to the matrix units for the
// half-precision and 8-bit dtypes that should run there (a misaligned fp16 GEMM that fell off the
// Tensor Cores is judged against them, not against the CUDA cores it ended on).
double ideal_gemm_ns(const RooflineResult& r, const RooflineGroup& g) {
  if (g.flops_per_call <= 0 || g.bytes_per_call <= 0 || !r.peaks.hbm_tb_per_s) return -1;
  std::optional<double> compute;
  if (is_matrix_format(g.dtype)) compute = r.peaks.matrix(g.dtype);
  if (!compute) return g.roofline_ns;
  const double calls = static_cast<double>(g.calls);
  return calls * std::max(g.flops_per_call / (*compute * 1e3), g.bytes_per_call / (*r.peaks.hbm_tb_per_s * 1e3));
}

// "M x N x K = 4096 x 4097 x 4095", "batch 1024 of M x N x K = 647 x 30 x 96".
std::string dims_text(const RooflineGroup& g) {
  std::string batch = g.gemm_batch > 1 ? fmt::format("batch {:.0f} of ", g.gemm_batch) : std::string();
  return fmt::format("{}M x N x K = {:.0f} x {:.0f} x {:.0f}", batch, g.gemm_m, g.gemm_n, g.gemm_k);
}

void rule_gemm_shape(const TraceAnalysis& a, std::vector<Finding>& out) {
  const RooflineResult& r = a.roofline;
  const std::int64_t window_ns = a.context.window_ns();
  if (r.device < 0 || window_ns <= 0) return;
  struct Hit {
    const RooflineGroup* group;
    ShapeIssue issue;
    double ideal_ns;
  };
  std::vector<Hit> hits;
  double excess_ns = 0, kernel_ns = 0;
  for (const RooflineGroup& g : r.groups) {
    if (g.kind != OpKind::kGemm || g.kernel_ns <= 0) continue;
    const ShapeIssue issue = shape_issue(g);
    if (issue == ShapeIssue::kNone) continue;
    const double ideal = ideal_gemm_ns(r, g);
    if (ideal <= 0 || ideal >= kGemmFarBelowRoofline * static_cast<double>(g.kernel_ns)) continue;
    hits.push_back({&g, issue, ideal});
    excess_ns += static_cast<double>(g.kernel_ns) - ideal;
    kernel_ns += static_cast<double>(g.kernel_ns);
  }
  const double share = std::min(1.0, excess_ns / static_cast<double>(window_ns));
  if (hits.empty() || share < kGemmShapeMinShare) return;
  std::sort(hits.begin(), hits.end(), [](const Hit& x, const Hit& y) {
    return static_cast<double>(x.group->kernel_ns) - x.ideal_ns > static_cast<double>(y.group->kernel_ns) - y.ideal_ns;
  });
  const Hit& top = hits.front();
  const RooflineGroup& g = *top.group;
  const double efficiency = top.ideal_ns / static_cast<double>(g.kernel_ns);

  Finding f = finding_for("gemm-shape");
  f.layer = Layer::kOperator;
  f.title = fmt::format("GEMM shapes: {} ({}) runs at {:.0f}% of its roofline, {}", g.op, dims_text(g),
                        100 * efficiency, issue_words(top.issue));
  std::string others;
  if (hits.size() > 1)
    others = fmt::format(" {} more GEMM group{} with a shape cause run under half of their roofline.", hits.size() - 1,
                         hits.size() == 2 ? "" : "s");
  f.detail = fmt::format(
      "{} with {} ({}, {}) took {} of GPU time over {} call{} where its roofline on {} allows {} "
      "({:.0f}%).{} Together they take {} and could take {}: {} of the {} ({:.1f}%) is the time above the "
      "roofline.",
      g.op, g.input_dims, dtype_name(g.dtype), dims_text(g), human_duration(static_cast<std::int64_t>(g.kernel_ns)),
      g.calls, g.calls == 1 ? "" : "s", r.peaks.model.empty() ? r.peaks.device : r.peaks.model,
      human_duration(static_cast<std::int64_t>(top.ideal_ns)), 100 * efficiency, others,
      human_duration(static_cast<std::int64_t>(kernel_ns)),
      human_duration(static_cast<std::int64_t>(kernel_ns - excess_ns)),
      human_duration(static_cast<std::int64_t>(excess_ns)), a.context.label, 100 * share);
  f.evidence = {{"gemm_m", g.gemm_m, ""},
                {"gemm_n", g.gemm_n, ""},
                {"gemm_k", g.gemm_k, ""},
                {"roofline_efficiency_pct", 100 * efficiency, "%"},
                {"groups", static_cast<double>(hits.size()), "count"},
                {"excess_ms", ns_to_ms(excess_ns), "ms"}};
  // The fixes of every shape cause among the groups, the leading group's first.
  std::vector<ShapeIssue> issues = {top.issue};
  for (const Hit& h : hits)
    if (std::find(issues.begin(), issues.end(), h.issue) == issues.end()) issues.push_back(h.issue);
  for (ShapeIssue issue : issues) {
    if (issue == ShapeIssue::kMisaligned)
      f.fixes.push_back(fmt::format(
          "Pad the dimensions to multiples of {:.0f} elements (16 bytes; 64 is better for tile quantisation): the "
          "vocabulary of an embedding/LM head (`model.resize_token_embeddings(len(tokenizer), "
          "pad_to_multiple_of=64)`), "
          "hidden and intermediate sizes, or the inputs with `torch.nn.functional.pad(x, (0, pad))`",
          std::max(8.0, alignment_elements(g.dtype))));
    if (issue == ShapeIssue::kSmallM)
      f.fixes.push_back(
          "Give each weight read more rows: batch requests or tokens (continuous batching in vLLM/SGLang, a larger "
          "`max_batch_size`, speculative decoding), and capture decode steps in CUDA graphs "
          "(`torch.compile(model, mode=\"reduce-overhead\")`) so that the small GEMMs are not latency-bound as well");
    if (issue == ShapeIssue::kSkinny)
      f.fixes.push_back(
          "Merge skinny GEMMs that share an operand into one (concatenate the weights of q/k/v or of gate/up "
          "projections: `torch.cat([w_q, w_k, w_v])`), or fold the batch into M (`x.reshape(-1, k) @ w`) so that the "
          "product has enough output tiles");
  }
  f.fixes.push_back(
      "Let the compiler pick kernels for the shapes it sees: `torch.compile(model, mode=\"max-autotune\")`");
  // The bound: the groups reach their roofline; no shape change makes a GEMM faster than that.
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  // The what-if: each group's very kernels down to its roofline, re-timed in the step.
  if (a.model != nullptr) {
    std::vector<const RooflineGroup*> groups;
    for (const Hit& h : hits) groups.push_back(h.group);
    std::vector<std::vector<EventIndex>> events = roofline_groups_gpu_events(*a.model, a.context, r, groups);
    for (std::size_t i = 0; i < hits.size(); ++i) {
      const double group_ns = static_cast<double>(hits[i].group->kernel_ns);
      fix_speeds_up_device_events(f,
                                  fmt::format("{} ({}) at its roofline", hits[i].group->op, dims_text(*hits[i].group)),
                                  group_ns, group_ns - hits[i].ideal_ns, std::move(events[i]));
    }
  }
  f.threshold =
      "GEMM groups under 50% of their roofline with a shape cause (misaligned N/K, <= 16 rows, skinny), the time above "
      "the roofline >= 2% of the window (ferret; alignment: NVIDIA Deep Learning Performance Guide)";
  out.push_back(std::move(f));
}

// elementwise-chain. Runs of >= 3 memory-bound kernels (element-wise, norm, softmax, reduction)
// between two matrix kernels on a stream (analysis/operator/elementwise_chains.h), whose fusion would save
// >= 2% of the window. Threshold: ferret's floor for an operator-level fix, as gemm-shape. The
// gain: each chain becomes one kernel that reads the chain's input and writes its output once
// (memory-bound kernels take time in proportion to their bytes): the chain's time less half of
// its first kernel and half of its last.
constexpr double kChainMinShare = 0.02;

void rule_elementwise_chain(const TraceAnalysis& a, std::vector<Finding>& out) {
  const ElementwiseChainsResult& c = a.elementwise_chains;
  const std::int64_t window_ns = a.context.window_ns();
  if (c.chains == 0 || c.patterns.empty() || window_ns <= 0) return;
  const double share = std::min(1.0, static_cast<double>(c.saved_ns()) / static_cast<double>(window_ns));
  if (share < kChainMinShare) return;
  const ElementwiseChainPattern& top = c.patterns.front();

  Finding f = finding_for("elementwise-chain");
  f.layer = Layer::kOperator;
  f.title = fmt::format(
      "Unfused element-wise chains: {} runs of {:.1f} memory-bound kernels on average between GEMMs "
      "take {:.0f}% of the {}",
      c.chains, static_cast<double>(c.kernels) / static_cast<double>(c.chains),
      100.0 * static_cast<double>(c.kernel_ns) / static_cast<double>(window_ns), window_noun(a));
  f.detail = fmt::format(
      "Between two matrix kernels, {} kernel{} of element-wise, normalisation, softmax and reduction work run one "
      "after another, {} in all. Each reads its input from memory and writes its output back; one fused kernel per "
      "run would read the run's input and write its output once, about {} ({} of the {}, {:.1f}%, saved). The "
      "largest: {} ({} time{}, {} kernels each, {}).{}",
      c.kernels, c.kernels == 1 ? "" : "s", human_duration(c.kernel_ns), human_duration(c.fused_ns),
      human_duration(c.saved_ns()), a.context.label, 100 * share, top.ops, top.occurrences,
      top.occurrences == 1 ? "" : "s", top.kernels, human_duration(top.kernel_ns),
      c.compiled ? " The window already runs Inductor (Triton) kernels: these runs are what compilation left "
                   "unfused, usually around graph breaks."
                 : "");
  f.evidence = {{"chains", static_cast<double>(c.chains), "count"},
                {"chain_kernels", static_cast<double>(c.kernels), "count"},
                {"chain_ms", ns_to_ms(static_cast<double>(c.kernel_ns)), "ms"},
                {"fused_ms", ns_to_ms(static_cast<double>(c.fused_ns)), "ms"},
                {"saved_pct", 100 * share, "%"}};
  // An RMSNorm written op by op (Hugging Face Llama/Qwen/Mistral RMSNorm modules) is the most common
  // chain of eager LLMs: pow -> mean -> add(eps) -> rsqrt -> mul.
  const bool rms_norm = top.ops.find("aten::pow") != std::string::npos &&
                        top.ops.find("aten::mean") != std::string::npos &&
                        top.ops.find("aten::rsqrt") != std::string::npos;
  if (rms_norm)
    f.fixes.push_back(
        "The largest run is an RMSNorm computed op by op (pow -> mean -> rsqrt -> mul): one kernel with "
        "`torch.nn.functional.rms_norm(x, (hidden_size,), weight, eps)` or `torch.nn.RMSNorm` (torch 2.4+), or a "
        "fused RMSNorm from Liger Kernel / Apex");
  if (c.compiled)
    f.fixes.push_back(
        "Find the graph breaks that leave these operators eager: `torch._dynamo.explain(model)(*example_inputs)` "
        "lists each break and its reason; `TORCH_LOGS=\"graph_breaks\" python train.py` prints them as they happen");
  f.fixes.push_back(
      "Fuse them with the compiler: `model = torch.compile(model)` (Inductor merges element-wise and reduction chains, "
      "and the bias/activation epilogues of GEMMs, into single kernels)");
  f.fixes.push_back(
      "By hand where compiling is not an option: fused modules (`torch.nn.functional.scaled_dot_product_attention`, "
      "Apex/Transformer Engine fused LayerNorm and bias-GeLU, `torch.optim.AdamW(..., fused=True)`)");
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  // The what-if: the chains' kernels shortened to the fused estimate, re-timed in the step.
  fix_speeds_up_device_events(f, "element-wise chains fused", static_cast<double>(c.kernel_ns),
                              static_cast<double>(c.saved_ns()), c.chain_kernels);
  f.threshold =
      ">= 3 memory-bound kernels between two matrix kernels on a stream, fusion saving >= 2% of the window (ferret)";
  out.push_back(std::move(f));
}

// inference-in-training-mode. A trace with no backward pass and no optimizer step anywhere (no
// autograd engine, no `*Backward*` / `*_backward` op, no Optimizer.* span) is inference; in it,
// dropout that draws its mask (aten::native_dropout, aten::_fused_dropout, aten::bernoulli_ under a
// dropout op: PyTorch's dropout returns its input untouched in eval mode) and batch norm that
// computes batch statistics and updates its running stats (training=True with running stats in
// "Concrete Inputs"; on the GPU the training kernels: cuDNN bn_fw_tr*, native
// batch_norm_collect_statistics, MIOpen BatchNormFwdTrain) mean the model runs in training mode:
// slower, and its outputs change from call to call. Threshold: any such op in the window - the
// results are wrong whatever the time - with its time as the gain bound.
bool is_training_trace_name(std::string_view name) {
  return name.find("Backward") != std::string_view::npos || name.find("_backward") != std::string_view::npos ||
         name.find("autograd::engine") != std::string_view::npos || name.rfind("Optimizer.", 0) == 0 ||
         name.rfind("Optimizer#", 0) == 0 || name.find("optimizer.step") != std::string_view::npos;
}

bool is_dropout_op(std::string_view name) { return name.find("dropout") != std::string_view::npos; }

bool is_batch_norm_op(std::string_view name) {
  return name == "aten::batch_norm" || name == "aten::_batch_norm_impl_index" || name == "aten::native_batch_norm" ||
         name == "aten::cudnn_batch_norm" || name == "aten::miopen_batch_norm";
}

bool is_batch_norm_training_kernel(std::string_view name) {
  return name.find("bn_fw_tr") != std::string_view::npos ||
         name.find("batch_norm_collect_statistics") != std::string_view::npos ||
         name.find("BatchNormFwdTrain") != std::string_view::npos;
}

// Whether an op or one of its enclosing ops satisfies `pred`.
template <typename Pred>
bool op_or_ancestor(const TraceModel& m, EventIndex e, Pred pred) {
  for (int depth = 0; e != kNoEvent && depth < 64; ++depth, e = m.relations.parent[e])
    if (m.kind[e] == EventKind::kCpuOp && pred(m.name_of(e))) return true;
  return false;
}

// A training-mode op by its own record: dropout drawing a mask, or batch norm with training=True
// and running statistics to update (instance norm calls batch norm with training=True and no
// running stats by design).
bool is_training_mode_op(const TraceModel& m, EventIndex e) {
  const std::string_view name = m.name_of(e);
  if (name == "aten::bernoulli_" || name == "aten::bernoulli")
    return op_or_ancestor(m, m.relations.parent[e], is_dropout_op);
  const bool fused_dropout = name == "aten::native_dropout" || name == "aten::_fused_dropout";
  if (!fused_dropout && !is_batch_norm_op(name)) return false;  // parse arguments only where they decide
  const OpArgs* args = m.op_args_of(e);
  const auto concrete = args != nullptr ? parse_input_types(m.strings.view(args->concrete_inputs))
                                        : std::optional<std::vector<std::string>>{};
  if (fused_dropout)
    return !(concrete && concrete->size() > 2 && (*concrete)[2] == "False");  // native_dropout(input, p, train)
  if (!concrete || concrete->size() <= 5 || (*concrete)[5] != "True") return false;
  // (input, weight, bias, running_mean, running_var, training, ...): running_mean recorded.
  const auto dims = parse_input_dims(m.strings.view(args->input_dims));
  if (!dims || dims->size() <= 3 || (*dims)[3].empty()) return false;
  return !op_or_ancestor(m, e, [](std::string_view n) { return n.find("instance_norm") != std::string_view::npos; });
}

// A training trace (a backward pass or an optimizer step somewhere): dropout and batch statistics
// are meant there.
bool has_training_names(const TraceModel& m) {
  for (std::size_t i = 0; i < m.size(); ++i) {
    const EventKind k = m.kind[static_cast<EventIndex>(i)];
    if ((k == EventKind::kCpuOp || k == EventKind::kUserAnnotation || k == EventKind::kPythonFunction) &&
        is_training_trace_name(m.name_of(static_cast<EventIndex>(i))))
      return true;
  }
  return false;
}

// The training-mode ops of the window, marked at the call the model made (aten::dropout around
// bernoulli_, aten::batch_norm around cudnn_batch_norm), which holds the whole cost.
std::vector<bool> mark_training_mode_calls(const TraceModel& m, const AnalysisContext& ctx) {
  std::vector<bool> marked(m.size(), false);
  for (std::size_t i = 0; i < m.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    if (m.kind[e] != EventKind::kCpuOp || m.phase[e] != 'X') continue;
    const std::int64_t t = m.ts_ns[e];
    if (t < ctx.window_start_ns || t >= ctx.window_end_ns || !is_training_mode_op(m, e)) continue;
    // The call the model made (aten::dropout around bernoulli_, aten::batch_norm around
    // cudnn_batch_norm) holds the whole cost: the mask's multiply, the statistics pass.
    EventIndex root = e;
    for (EventIndex p = m.relations.parent[e]; p != kNoEvent && m.kind[p] == EventKind::kCpuOp &&
                                               (is_dropout_op(m.name_of(p)) || is_batch_norm_op(m.name_of(p)));
         p = m.relations.parent[p])
      root = p;
    marked[root] = true;
  }
  return marked;
}

void rule_inference_in_training_mode(const TraceAnalysis& a, std::vector<Finding>& out) {
  const TraceModel& m = *a.model;
  const AnalysisContext& ctx = a.context;
  if (ctx.window_ns() <= 0 || m.relations.parent.size() != m.size()) return;
  if (has_training_names(m)) return;
  // Outermost only (dropout -> native_dropout counts once), by kind; their host time per thread
  // never overlaps, being outermost.
  const std::vector<bool> marked = mark_training_mode_calls(m, ctx);
  std::uint64_t dropout_calls = 0, batch_norm_calls = 0;
  std::int64_t host_ns = 0;
  // The outermost marked op at or above `e`, kNoEvent for none.
  auto marked_root = [&](EventIndex e) {
    EventIndex root = kNoEvent;
    for (; e != kNoEvent; e = m.relations.parent[e])
      if (marked[e]) root = e;
    return root;
  };
  // What eval mode leaves of each (the predicted gain): dropout nothing; batch norm one pass over
  // its input (normalise with the running statistics) of the two training mode makes (statistics,
  // then normalisation), so half its time.
  struct Part {
    std::vector<EventIndex> events;
    std::int64_t ns = 0;
  };
  Part dropout_host, batch_norm_host, dropout_device, batch_norm_device;
  for (std::size_t i = 0; i < m.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    if (!marked[i] || marked_root(e) != e) continue;
    const bool batch_norm = is_batch_norm_op(m.name_of(e));
    ++(batch_norm ? batch_norm_calls : dropout_calls);
    host_ns += m.dur_ns[e];
    Part& part = batch_norm ? batch_norm_host : dropout_host;
    part.events.push_back(e);
    part.ns += m.dur_ns[e];
  }
  // Device time: kernels launched under a training-mode op, and batch-norm training kernels by name
  // (a trace without "Concrete Inputs" still names them).
  std::int64_t device_ns = 0;
  std::uint64_t bn_training_kernels = 0;
  const Relations& rel = m.relations;
  for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
    const EventIndex ge = rel.gpu_events[g];
    if (m.kind[ge] != EventKind::kKernel || !ctx.counts_gpu_event(m, ge)) continue;
    const std::int64_t t = m.ts_ns[ge];
    if (t < ctx.window_start_ns || t >= ctx.window_end_ns) continue;
    const EventIndex launch = rel.gpu_launcher[g];
    const EventIndex op = launch != kNoEvent ? rel.parent[launch] : kNoEvent;
    const EventIndex root = op != kNoEvent ? marked_root(op) : kNoEvent;
    const bool under_marked = root != kNoEvent;
    const bool bn_kernel =
        is_batch_norm_training_kernel(m.name_of(ge)) &&
        !op_or_ancestor(m, op, [](std::string_view n) { return n.find("instance_norm") != std::string_view::npos; });
    if (!under_marked && !bn_kernel) continue;
    if (bn_kernel && !under_marked) ++bn_training_kernels;
    device_ns += m.dur_ns[ge];
    Part& part = bn_kernel || is_batch_norm_op(m.name_of(root)) ? batch_norm_device : dropout_device;
    part.events.push_back(ge);
    part.ns += m.dur_ns[ge];
  }
  if (dropout_calls + batch_norm_calls + bn_training_kernels == 0) return;
  const bool on_device = a.hot_spots.gpu_activities > 0;
  const std::int64_t cost_ns = on_device ? device_ns : host_ns;
  const double share = std::min(1.0, static_cast<double>(cost_ns) / static_cast<double>(ctx.window_ns()));
  std::string what;
  if (dropout_calls > 0)
    what = fmt::format("{} dropout call{} drawing masks", dropout_calls, dropout_calls == 1 ? "" : "s");
  if (batch_norm_calls + bn_training_kernels > 0)
    what += fmt::format("{}{} batch norm{} computing batch statistics", what.empty() ? "" : " and ",
                        batch_norm_calls + bn_training_kernels, batch_norm_calls + bn_training_kernels == 1 ? "" : "s");
  Finding f = finding_for("inference-in-training-mode");
  f.layer = Layer::kFramework;
  f.severity = Severity::kMedium;
  f.title = fmt::format(
      "Inference runs in training mode: {} ({} of {} time, {:.1f}% of the {}); outputs change "
      "from call to call",
      what, human_duration(cost_ns), on_device ? "GPU" : "host", share_to_pct(share), window_noun(a));
  f.detail = fmt::format(
      "This {} has no backward pass and no optimizer step, yet the model runs as in training: {}. In eval mode "
      "dropout returns its input untouched and batch norm normalises with its running statistics; in training mode "
      "dropout zeroes random activations and batch norm uses each batch's statistics and overwrites the running "
      "ones, so predictions are noisy and depend on the batch, and the extra work costs {:.2f} ms {} time.",
      window_noun(a), what, ns_to_ms(static_cast<double>(cost_ns)), on_device ? "of GPU" : "of host");
  f.evidence = {{"dropout_calls", static_cast<double>(dropout_calls), "count"},
                {"batch_norm_training_calls", static_cast<double>(batch_norm_calls + bn_training_kernels), "count"},
                {"training_mode_ms", ns_to_ms(static_cast<double>(cost_ns)), "ms"},
                {"training_mode_share_pct", share_to_pct(share), "%"}};
  f.fixes = {"Switch the model to eval mode before serving or evaluating: `model.eval()`",
             "Run inference without autograd as well: `with torch.inference_mode(): out = model(x)` (inference_mode "
             "does not switch dropout or batch norm off: it goes with model.eval(), not instead of it)"};
  f.threshold =
      "any dropout mask or batch-norm statistics update in a window of a trace with no backward pass and no "
      "optimizer step (ferret: wrong results whatever the time)";
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);  // eval mode skips at most all of it
  for (Part* part : {&dropout_host, &batch_norm_host, &dropout_device, &batch_norm_device})
    std::sort(part->events.begin(), part->events.end());
  const double dropout_ns = static_cast<double>(on_device ? dropout_device.ns : dropout_host.ns);
  const double batch_norm_ns = static_cast<double>(on_device ? batch_norm_device.ns : batch_norm_host.ns);
  if (on_device) {
    fix_speeds_up_device_events(f, "dropout in eval mode (none)", dropout_ns, 0.999 * dropout_ns,
                                std::move(dropout_device.events));
    fix_speeds_up_device_events(f, "batch norm in eval mode (one pass of two)", batch_norm_ns, 0.5 * batch_norm_ns,
                                std::move(batch_norm_device.events));
  } else {
    fix_speeds_up_host_events(f, "dropout in eval mode (none)", dropout_ns, 0.999 * dropout_ns,
                              std::move(dropout_host.events));
    fix_speeds_up_host_events(f, "batch norm in eval mode (one pass of two)", batch_norm_ns, 0.5 * batch_norm_ns,
                              std::move(batch_norm_host.events));
  }
  out.push_back(std::move(f));
}

}  // namespace

void rules_operator(const TraceAnalysis& a, std::vector<Finding>& out) {
  rule_gemm_shape(a, out);
  rule_elementwise_chain(a, out);
  rule_inference_in_training_mode(a, out);
}

namespace {
constexpr RuleInfo kOperatorRules[] = {
    RuleInfo{"gemm-shape", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause},
    RuleInfo{"elementwise-chain", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause},
    RuleInfo{"inference-in-training-mode", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause},
};
}  // namespace

FERRET_RULE_FAMILY(operator){"rules_operator", 110, kOperatorRules, rule_run<rules_operator>()};

}  // namespace ferret
