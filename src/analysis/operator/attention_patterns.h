// Attention computed op by op: a batched matmul producing a score matrix [..., L, S], a softmax
// over it (with scale, mask and dropout ops between), and a matmul of the probabilities with the
// values [..., S, Dv]. A fused kernel (FlashAttention, memory-efficient or cuDNN attention via
// torch.nn.functional.scaled_dot_product_attention) computes the same without writing the L x S
// matrix to memory; the eager pattern writes and reads it several times (Dao et al., 2022,
// "FlashAttention", arXiv:2205.14135, section 3).
//
// Recognised from the CPU operators of one thread, in time order, by their recorded shapes
// (record_shapes=True); a trace without shapes is read by the sequence alone, batched products
// (bmm, baddbmm, matmul) on both sides of the softmax. The pattern's time is the GPU time
// its operators launched (from the first matmul's start to the second's end on that thread), or,
// on a CPU-only trace, the host time of that stretch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace ferret {

struct UnfusedAttentionGroup {
  std::string score_op;    // the matmul producing the scores: "aten::bmm", "aten::matmul", ...
  std::string softmax_op;  // "aten::softmax", "aten::_softmax", "aten::_safe_softmax"
  std::string dtype;       // the softmax input's "Input type" ("c10::BFloat16"), "" when not recorded
  // -1 each when the trace recorded no shapes (then the pattern is recognised by its sequence of
  // batched products alone).
  std::int64_t batch = -1;        // product of the score matrix's leading dims (batch x heads)
  std::int64_t query_len = -1;    // L
  std::int64_t key_len = -1;      // S
  std::int64_t head_dim = -1;     // D: the inner dim of the score matmul
  std::int64_t value_dim = -1;    // Dv: the last dim of the values
  bool inside_sdpa_math = false;  // under aten::_scaled_dot_product_attention_math: SDPA fell back
  std::uint64_t calls = 0;
  std::int64_t pattern_ns = 0;  // GPU time launched by the stretch (host time without GPU work)
  std::int64_t matmul_ns = 0;   // the part launched by the two matmuls
  // Each call's score and output matmul ops (their thread, and the stretch from one to the other).
  std::vector<std::pair<EventIndex, EventIndex>> stretches;
};

struct AttentionPatternsResult {
  bool on_gpu = false;                        // times are GPU time (else host time of a CPU-only trace)
  std::vector<UnfusedAttentionGroup> groups;  // by pattern time, descending
  std::int64_t pattern_ns = 0;                // summed over groups
  std::int64_t matmul_ns = 0;
  std::uint64_t fused_calls = 0;  // scaled_dot_product_attention / flash / efficient / cudnn calls
};

AttentionPatternsResult analyze_attention_patterns(const TraceModel& model, const AnalysisContext& ctx);

// What fusing the groups' stretches re-times: on a GPU the activities launched from the stretches'
// threads between the score matmul's start and the output matmul's end; on a CPU-only trace the
// host ops of that thread in it at the matmuls' level (the outermost ops there). Ascending.
std::vector<EventIndex> attention_stretch_events(const TraceModel& model, const AnalysisContext& ctx,
                                                 const AttentionPatternsResult& patterns);

}  // namespace ferret
