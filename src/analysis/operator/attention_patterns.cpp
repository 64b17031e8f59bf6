#include "analysis/operator/attention_patterns.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "analysis/operator/input_shapes.h"

namespace ferret {

namespace {

enum class OpRole { kNone, kMatmul, kSoftmax, kFused, kMath };

OpRole role_of(std::string_view name) {
  if (name == "aten::matmul" || name == "aten::bmm" || name == "aten::baddbmm" || name == "aten::mm")
    return OpRole::kMatmul;
  if (name == "aten::softmax" || name == "aten::_softmax" || name == "aten::_safe_softmax") return OpRole::kSoftmax;
  if (name == "aten::_scaled_dot_product_attention_math") return OpRole::kMath;
  if (name == "aten::_scaled_dot_product_flash_attention" || name == "aten::_scaled_dot_product_efficient_attention" ||
      name == "aten::_scaled_dot_product_cudnn_attention" ||
      name == "aten::_scaled_dot_product_flash_attention_for_cpu" || name == "aten::_flash_attention_forward" ||
      name == "aten::_efficient_attention_forward")
    return OpRole::kFused;
  return OpRole::kNone;
}

struct Candidate {
  EventIndex event;
  OpRole role;
  bool inside_math;
};

// Shapes of an op's tensor inputs; empty when not recorded or not parseable.
std::vector<Shape> shapes_of(const TraceModel& model, EventIndex e) {
  const OpArgs* args = model.op_args_of(e);
  if (args == nullptr || args->input_dims == kEmptyStr) return {};
  std::optional<std::vector<Shape>> shapes = parse_input_dims(model.strings.view(args->input_dims));
  return shapes ? std::move(*shapes) : std::vector<Shape>{};
}

bool shapes_recorded(const TraceModel& model, EventIndex e) {
  const OpArgs* args = model.op_args_of(e);
  return args != nullptr && args->input_dims != kEmptyStr;
}

// Products of stacks of matrices: the attention products are batched over batch x heads.
bool batched(std::string_view name) { return name == "aten::bmm" || name == "aten::baddbmm" || name == "aten::matmul"; }

// The two operands of a matmul-like op: (a, b) of a @ b; baddbmm's first input is the bias.
std::optional<std::pair<Shape, Shape>> operands(const TraceModel& model, EventIndex e) {
  std::vector<Shape> in = shapes_of(model, e);
  const std::size_t first = model.name_of(e) == "aten::baddbmm" ? 1 : 0;
  if (in.size() < first + 2) return std::nullopt;
  Shape& a = in[first];
  Shape& b = in[first + 1];
  if (a.size() < 2 || b.size() < 2 || a.back() != b[b.size() - 2]) return std::nullopt;
  return std::pair{std::move(a), std::move(b)};
}

// GPU time launched per host thread, as prefix sums over its launch calls in time order.
class LaunchedTime {
 public:
  LaunchedTime(const TraceModel& model, const AnalysisContext& ctx) {
    const Relations& r = model.relations;
    for (std::size_t i = 0; i < r.launches.size(); ++i) {
      const EventIndex launch = r.launches[i];
      std::int64_t gpu_ns = 0;
      for (std::uint32_t k = r.launch_gpu_begin[i]; k < r.launch_gpu_begin[i + 1]; ++k) {
        const EventIndex g = r.launch_gpu[k];
        if (model.kind[g] == EventKind::kSync || !ctx.counts_gpu_event(model, g)) continue;
        gpu_ns += model.dur_ns[g];
      }
      if (gpu_ns == 0) continue;
      threads_[{model.pid[launch], model.tid[launch]}].push_back({model.ts_ns[launch], gpu_ns});
    }
    for (auto& [thread, rows] : threads_) {
      std::sort(rows.begin(), rows.end());
      std::int64_t sum = 0;
      for (auto& [ts, ns] : rows) ns = sum += ns;  // now the prefix sum up to and including this launch
    }
  }
  bool any() const { return !threads_.empty(); }
  // GPU time launched on (pid, tid) by calls starting in [from, to].
  std::int64_t between(std::int32_t pid, std::int32_t tid, std::int64_t from, std::int64_t to) const {
    const auto it = threads_.find({pid, tid});
    if (it == threads_.end()) return 0;
    const auto& rows = it->second;
    const auto lo = std::lower_bound(rows.begin(), rows.end(), std::pair{from, INT64_MIN});
    const auto hi = std::upper_bound(rows.begin(), rows.end(), std::pair{to, INT64_MAX});
    if (hi == rows.begin() || lo >= hi) return 0;
    return std::prev(hi)->second - (lo == rows.begin() ? 0 : std::prev(lo)->second);
  }

 private:
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<std::pair<std::int64_t, std::int64_t>>> threads_;
};

using GroupKey = std::tuple<std::string, std::string, std::string, std::int64_t, std::int64_t, std::int64_t,
                            std::int64_t, std::int64_t, bool>;

}  // namespace

AttentionPatternsResult analyze_attention_patterns(const TraceModel& model, const AnalysisContext& ctx) {
  AttentionPatternsResult result;
  const TimeWindow window = ctx.window();
  const Relations& rel = model.relations;

  // The outermost matmul / softmax ops of each thread (an aten::bmm inside aten::matmul is the
  // same product), in time order.
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<Candidate>> threads;
  for (EventIndex e = 0; e < model.size(); ++e) {
    if (model.kind[e] != EventKind::kCpuOp || model.phase[e] != 'X' || !window.contains(model.ts_ns[e])) continue;
    const OpRole role = role_of(model.name_of(e));
    if (role == OpRole::kNone || role == OpRole::kMath) continue;
    if (role == OpRole::kFused) {
      ++result.fused_calls;
      continue;
    }
    bool nested = false, inside_math = false;
    int depth = 0;  // nesting is a tree; the bound only guards against a damaged one
    for (EventIndex p = rel.built && e < rel.parent.size() ? rel.parent[e] : kNoEvent; p != kNoEvent && depth < 64;
         p = p < rel.parent.size() ? rel.parent[p] : kNoEvent, ++depth) {
      const OpRole parent_role = role_of(model.name_of(p));
      if (parent_role == role) nested = true;
      if (parent_role == OpRole::kMath) inside_math = true;
    }
    if (!nested) threads[{model.pid[e], model.tid[e]}].push_back({e, role, inside_math});
  }

  const LaunchedTime launched(model, ctx);
  result.on_gpu = launched.any();
  std::map<GroupKey, UnfusedAttentionGroup> groups;
  for (auto& [thread, ops] : threads) {
    std::stable_sort(ops.begin(), ops.end(), [&](const Candidate& a, const Candidate& b) {
      return model.ts_ns[a.event] < model.ts_ns[b.event];
    });
    for (std::size_t i = 1; i + 1 < ops.size(); ++i) {
      if (ops[i].role != OpRole::kSoftmax) continue;
      const Candidate& scores = ops[i - 1];
      const Candidate& output = ops[i + 1];
      if (scores.role != OpRole::kMatmul || output.role != OpRole::kMatmul) continue;
      std::int64_t L = -1, S = -1, D = -1, Dv = -1, batch = -1;
      if (!shapes_recorded(model, scores.event) && !shapes_recorded(model, ops[i].event) &&
          !shapes_recorded(model, output.event)) {
        // No shapes (record_shapes off, or a torch whose export drops them): the sequence alone,
        // with batched products on both sides (a classifier's mm -> softmax is not attention).
        if (!batched(model.name_of(scores.event)) || !batched(model.name_of(output.event))) continue;
      } else {
        const std::vector<Shape> softmax_in = shapes_of(model, ops[i].event);
        if (softmax_in.empty() || softmax_in[0].size() < 2) continue;
        const Shape& p = softmax_in[0];
        L = p[p.size() - 2];
        S = p.back();
        const auto qk = operands(model, scores.event);
        const auto pv = operands(model, output.event);
        if (!qk || !pv) continue;
        // Q [..., L, D] @ K^T [..., D, S] gives the scores; P [..., L, S] @ V [..., S, Dv] the output.
        const auto& [q, kt] = *qk;
        const auto& [probs, v] = *pv;
        if (q[q.size() - 2] != L || kt.back() != S) continue;
        if (probs[probs.size() - 2] != L || probs.back() != S) continue;
        D = q.back();
        Dv = v.back();
        batch = element_count(p) / std::max<std::int64_t>(1, L * S);
      }

      const EventIndex first = scores.event, last = output.event;
      std::int64_t pattern_ns = 0, matmul_ns = 0;
      if (result.on_gpu) {
        pattern_ns = launched.between(thread.first, thread.second, model.ts_ns[first], model.end_ns(last));
        matmul_ns = launched.between(thread.first, thread.second, model.ts_ns[first], model.end_ns(first)) +
                    launched.between(thread.first, thread.second, model.ts_ns[last], model.end_ns(last));
      } else {
        pattern_ns = model.end_ns(last) - model.ts_ns[first];
        matmul_ns = model.dur_ns[first] + model.dur_ns[last];
      }
      std::string dtype;
      if (const OpArgs* a = model.op_args_of(ops[i].event); a != nullptr && a->input_types != kEmptyStr)
        if (auto types = parse_input_types(model.strings.view(a->input_types)); types && !types->empty())
          dtype = types->front();
      const GroupKey key{std::string(model.name_of(first)),
                         std::string(model.name_of(ops[i].event)),
                         dtype,
                         batch,
                         L,
                         S,
                         D,
                         Dv,
                         ops[i].inside_math};
      UnfusedAttentionGroup& g = groups[key];
      if (g.calls == 0) {
        g.score_op = std::get<0>(key);
        g.softmax_op = std::get<1>(key);
        g.dtype = dtype;
        g.batch = batch;
        g.query_len = L;
        g.key_len = S;
        g.head_dim = D;
        g.value_dim = Dv;
        g.inside_sdpa_math = ops[i].inside_math;
      }
      ++g.calls;
      g.stretches.emplace_back(first, last);
      g.pattern_ns += pattern_ns;
      g.matmul_ns += matmul_ns;
      ++i;  // the output matmul cannot also be the next pattern's score matmul
    }
  }
  for (auto& [key, g] : groups) {
    result.pattern_ns += g.pattern_ns;
    result.matmul_ns += g.matmul_ns;
    result.groups.push_back(std::move(g));
  }
  std::stable_sort(
      result.groups.begin(), result.groups.end(),
      [](const UnfusedAttentionGroup& a, const UnfusedAttentionGroup& b) { return a.pattern_ns > b.pattern_ns; });
  return result;
}

std::vector<EventIndex> attention_stretch_events(const TraceModel& model, const AnalysisContext& ctx,
                                                 const AttentionPatternsResult& patterns) {
  // The stretches per thread, as [start, end] with the level (parent) of their matmuls.
  struct Stretch {
    std::int64_t start, end;
    EventIndex level;
  };
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<Stretch>> threads;
  const Relations& rel = model.relations;
  auto parent_of = [&](EventIndex e) { return rel.built && e < rel.parent.size() ? rel.parent[e] : kNoEvent; };
  for (const UnfusedAttentionGroup& g : patterns.groups)
    for (const auto& [first, last] : g.stretches)
      threads[{model.pid[first], model.tid[first]}].push_back(
          {model.ts_ns[first], model.end_ns(last), parent_of(first)});
  for (auto& [thread, stretches] : threads)
    std::sort(stretches.begin(), stretches.end(), [](const Stretch& a, const Stretch& b) { return a.start < b.start; });
  // The stretch of `thread` holding time t, or nullptr.
  auto holding = [&](std::int32_t pid, std::int32_t tid, std::int64_t t) -> const Stretch* {
    const auto it = threads.find({pid, tid});
    if (it == threads.end()) return nullptr;
    const auto& v = it->second;
    auto s = std::upper_bound(v.begin(), v.end(), t, [](std::int64_t x, const Stretch& st) { return x < st.start; });
    if (s == v.begin()) return nullptr;
    --s;
    return t <= s->end ? &*s : nullptr;
  };
  std::vector<EventIndex> out;
  if (patterns.on_gpu) {
    for (std::size_t i = 0; i < rel.launches.size(); ++i) {
      const EventIndex launch = rel.launches[i];
      if (holding(model.pid[launch], model.tid[launch], model.ts_ns[launch]) == nullptr) continue;
      for (std::uint32_t k = rel.launch_gpu_begin[i]; k < rel.launch_gpu_begin[i + 1]; ++k) {
        const EventIndex g = rel.launch_gpu[k];
        if (model.kind[g] != EventKind::kSync && ctx.counts_gpu_event(model, g)) out.push_back(g);
      }
    }
  } else {
    for (EventIndex e = 0; e < model.size(); ++e) {
      if (model.kind[e] != EventKind::kCpuOp || model.phase[e] != 'X') continue;
      const Stretch* s = holding(model.pid[e], model.tid[e], model.ts_ns[e]);
      if (s != nullptr && model.end_ns(e) <= s->end && parent_of(e) == s->level) out.push_back(e);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace ferret
