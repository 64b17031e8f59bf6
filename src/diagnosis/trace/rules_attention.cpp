// unfused-attention: attention computed op by op (analysis/operator/attention_patterns.h).
#include <fmt/format.h>

#include "analysis/operator/op_cost.h"
#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// The pattern must hold at least this share of the window: below it a fused kernel is not worth a
// finding (the same evidence floor as the kernel-level rules of rules_gpu_efficiency, ferret's).
constexpr double kMinPatternShare = 0.05;

std::string shape_text(const UnfusedAttentionGroup& g) {
  if (g.query_len < 0) return "shapes not recorded (record_shapes=True names them)";
  return fmt::format("scores [{}, {}, {}] (batch x heads, query length, key length), head dim {}", g.batch, g.query_len,
                     g.key_len, g.head_dim);
}

// The least time a fused kernel needs for a group: its roofline, calls x max(2·B·L·S·(D + Dv)
// FLOPs / the dtype's peak, (q + k + v + out) bytes / HBM bandwidth) - the score matrix never
// leaves the chip. bf16/fp16 run on the matrix units (FlashAttention), fp32 on the vector units
// (memory-efficient attention). -1 without shapes, dtype or ceilings.
double fused_roofline_ns(const RooflineResult& r, const UnfusedAttentionGroup& g) {
  if (g.query_len <= 0 || g.key_len <= 0 || g.head_dim <= 0 || g.batch <= 0 || !r.peaks.hbm_tb_per_s) return -1;
  const Dtype dtype = dtype_of_type_name(g.dtype);
  const int element = element_size_of_type_name(g.dtype);
  std::optional<double> peak;
  if (dtype == Dtype::kBf16 || dtype == Dtype::kFp16) peak = r.peaks.matrix(dtype);
  if (dtype == Dtype::kFp32) peak = r.peaks.vector(Dtype::kFp32);
  if (!peak || element <= 0) return -1;
  const double b = static_cast<double>(g.batch), l = static_cast<double>(g.query_len),
               s = static_cast<double>(g.key_len), d = static_cast<double>(g.head_dim),
               dv = static_cast<double>(g.value_dim > 0 ? g.value_dim : g.head_dim);
  const double flops = 2 * b * l * s * (d + dv);
  const double bytes = (b * l * d + b * s * d + b * s * dv + b * l * dv) * element;
  return static_cast<double>(g.calls) * std::max(flops / (*peak * 1e3), bytes / (*r.peaks.hbm_tb_per_s * 1e3));
}

}  // namespace

void rules_attention(const TraceAnalysis& a, std::vector<Finding>& out) {
  const AttentionPatternsResult& at = a.attention;
  const std::int64_t window_ns = a.context.window_ns();
  if (at.groups.empty() || window_ns <= 0) return;
  const double share = static_cast<double>(at.pattern_ns) / static_cast<double>(window_ns);
  if (share < kMinPatternShare) return;
  const UnfusedAttentionGroup& top = at.groups.front();
  std::uint64_t calls = 0;
  bool math_fallback = false;
  for (const UnfusedAttentionGroup& g : at.groups) {
    calls += g.calls;
    math_fallback = math_fallback || g.inside_sdpa_math;
  }
  const char* time_kind = at.on_gpu ? "GPU time" : "host time";

  Finding f = finding_for("unfused-attention");
  f.layer = Layer::kOperator;
  f.title = fmt::format("Unfused attention: matmul -> softmax -> matmul takes {:.0f}% of the analysed time{}",
                        100 * share, math_fallback ? " (scaled_dot_product_attention fell back to its math path)" : "");
  f.detail = fmt::format(
      "{} attention call{} compute the score matrix with {}, normalise it with {} and multiply by the values in "
      "separate operators: {} of {} in the {} ({:.1f}%), of which the two matmuls are {}. The largest: {}, {} "
      "call{}. Each call writes the full score matrix to memory and reads it back; a fused attention kernel "
      "(FlashAttention, memory-efficient or cuDNN attention{}) keeps it {}.",
      calls, calls == 1 ? "" : "s", top.score_op, top.softmax_op, human_duration(at.pattern_ns), time_kind,
      a.context.label, 100 * share, human_duration(at.matmul_ns), shape_text(top), top.calls, top.calls == 1 ? "" : "s",
      at.on_gpu ? "" : "; on CPUs, torch 2.x's flash attention for CPU",
      at.on_gpu ? "on chip" : "in cache, a block at a time");
  f.evidence = {{"attention_ms", ns_to_ms(static_cast<double>(at.pattern_ns)), "ms"},
                {"attention_pct", 100 * share, "%"},
                {"matmul_ms", ns_to_ms(static_cast<double>(at.matmul_ns)), "ms"},
                {"calls", static_cast<double>(calls), ""}};
  if (top.query_len >= 0) {
    f.evidence.push_back({"query_len", static_cast<double>(top.query_len), ""});
    f.evidence.push_back({"key_len", static_cast<double>(top.key_len), ""});
    f.evidence.push_back({"head_dim", static_cast<double>(top.head_dim), ""});
  }
  if (math_fallback)
    f.fixes.push_back(
        "`scaled_dot_product_attention` ran its math fallback (the matmuls and softmax above are inside "
        "`aten::_scaled_dot_product_attention_math`): the fused kernels need fp16/bf16 inputs (flash), a head dim "
        "they support and, for flash, no arbitrary `attn_mask`; run under `with "
        "torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION):` to have torch say why it refuses");
  f.fixes.push_back(
      "One fused call instead of matmul-softmax-matmul: `out = torch.nn.functional.scaled_dot_product_attention(q, "
      "k, v, attn_mask=mask, dropout_p=p if self.training else 0.0, is_causal=causal)`");
  f.fixes.push_back(
      "Hugging Face models: `AutoModel.from_pretrained(name, attn_implementation=\"sdpa\")` (or "
      "`\"flash_attention_2\"` with the flash-attn package, fp16/bf16)");
  // The bound: on a GPU whose ceilings are known and with shapes recorded, the fused kernel at its
  // roofline (fused_roofline_ns): no fused attention is faster, so the pattern's time above it is
  // the most fusion wins back. Otherwise the operators between the two matmuls (scale, mask,
  // softmax, dropout) vanish and the matmuls stay as fast as measured - a lower estimate: a fused
  // kernel also skips the score matrix's round trips through memory (FlashAttention: 2-4x on the
  // attention itself, Dao et al. 2022).
  double fused_ns = 0;
  bool all_bounded = at.on_gpu;
  for (const UnfusedAttentionGroup& g : at.groups) {
    const double floor = at.on_gpu ? fused_roofline_ns(a.roofline, g) : -1;
    if (floor < 0) {
      all_bounded = false;
      break;
    }
    fused_ns += std::min(floor, static_cast<double>(g.pattern_ns));
  }
  double removable = static_cast<double>(std::max<std::int64_t>(0, at.pattern_ns - at.matmul_ns));
  if (all_bounded) {
    removable = static_cast<double>(at.pattern_ns) - fused_ns;
    f.evidence.push_back({"fused_roofline_ms", ns_to_ms(fused_ns), "ms"});
  }
  f.time_share = std::min(1.0, removable / static_cast<double>(window_ns));
  f.max_speedup = amdahl_speedup(f.time_share);
  // The what-if: the stretches' work (GPU activities, or host ops on a CPU) shrunk by the removable
  // part, re-timed in the step.
  if (a.model != nullptr) {
    std::vector<EventIndex> events = attention_stretch_events(*a.model, a.context, at);
    if (at.on_gpu)
      fix_speeds_up_device_events(f, "attention fused", static_cast<double>(at.pattern_ns), removable,
                                  std::move(events));
    else
      fix_speeds_up_host_events(f, "attention fused", static_cast<double>(at.pattern_ns), removable, std::move(events));
  }
  f.threshold = "matmul -> softmax -> matmul on attention shapes >= 5% of the window (ferret)";
  out.push_back(std::move(f));
}

namespace {
constexpr RuleInfo kAttentionRules[] = {
    RuleInfo{"unfused-attention", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause},
};
}  // namespace

FERRET_RULE_FAMILY(attention){"rules_attention", 100, kAttentionRules, rule_run<rules_attention>()};

}  // namespace ferret
