#include "analysis/operator/elementwise_chains.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/operator/op_cost.h"
#include "analysis/operator/tensor_cores.h"
#include "base/text.h"

namespace ferret {

namespace {

enum class KernelRole : std::uint8_t { kOther, kMatrix, kMemory, kFused };

KernelRole role_of_kind(OpKind k) {
  switch (k) {
    case OpKind::kGemm:
    case OpKind::kConvolution:
    case OpKind::kAttention: return KernelRole::kMatrix;
    case OpKind::kElementwise:
    case OpKind::kReduction:
    case OpKind::kNorm:
    case OpKind::kSoftmax: return KernelRole::kMemory;
    case OpKind::kInductor: return KernelRole::kFused;
    case OpKind::kNone: break;
  }
  return KernelRole::kOther;
}

KernelRole role_of_kernel_name(std::string_view n) {
  if (n.starts_with("triton_") || contains(n, "triton_poi") || contains(n, "triton_red") || contains(n, "triton_per"))
    return KernelRole::kFused;
  if (is_tensor_core_kernel(n) || contains(n, "gemm") || contains(n, "Gemm") || contains(n, "gemv") ||
      contains(n, "conv") || contains(n, "flash") || contains(n, "fmha"))
    return KernelRole::kMatrix;
  if (contains(n, "elementwise_kernel") || contains(n, "reduce_kernel") || contains(n, "softmax") ||
      contains(n, "layer_norm") || contains(n, "batch_norm") || contains(n, "rms_norm"))
    return KernelRole::kMemory;
  return KernelRole::kOther;
}

struct ChainKernel {
  std::int32_t device, stream;
  std::int64_t ts, dur;
  KernelRole role;
  StrId op_name;  // kEmptyStr when no op launched it
  EventIndex event;
};

constexpr std::size_t kPatternNames = 6;

std::string pattern_text(const TraceModel& model, const std::vector<StrId>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kPatternNames; ++i) {
    if (i > 0) out += " > ";
    out += names[i] == kEmptyStr ? std::string("(kernel)") : std::string(model.strings.view(names[i]));
  }
  if (names.size() > kPatternNames) out += fmt::format(" ... (+{})", names.size() - kPatternNames);
  return out;
}

}  // namespace

ElementwiseChainsResult analyze_elementwise_chains(const TraceModel& model, const AnalysisContext& ctx) {
  ElementwiseChainsResult result;
  const Relations& rel = model.relations;
  if (!rel.built) return result;
  std::unordered_map<StrId, KernelRole> role_by_op, role_by_kernel;
  auto op_role = [&](EventIndex op) {
    // The innermost op around the launch that has a cost model decides; none: kOther.
    for (EventIndex p = op; p != kNoEvent; p = rel.parent.empty() ? kNoEvent : rel.parent[p]) {
      if (model.kind[p] != EventKind::kCpuOp) continue;
      if (!model.inductor_kernels.empty() && model.inductor_kernel_of(p) != nullptr) return KernelRole::kFused;
      auto [it, fresh] = role_by_op.try_emplace(model.name[p], KernelRole::kOther);
      if (fresh) it->second = role_of_kind(op_kind_of(model.strings.view(model.name[p])));
      if (it->second != KernelRole::kOther) return it->second;
    }
    return KernelRole::kOther;
  };

  std::vector<ChainKernel> kernels;
  for (std::size_t i = 0; i < rel.gpu_events.size(); ++i) {
    const EventIndex g = rel.gpu_events[i];
    if (model.kind[g] != EventKind::kKernel || !ctx.counts_gpu_event(model, g)) continue;
    if (!ctx.window().contains(model.ts_ns[g])) continue;
    if (!rel.graph_replays.empty() && rel.replay_of(g) != nullptr) continue;
    const EventIndex launch = rel.gpu_launcher[i];
    const EventIndex op = launch != kNoEvent ? rel.op_of_launch(launch) : kNoEvent;
    KernelRole role = op != kNoEvent ? op_role(op) : KernelRole::kOther;
    if (role == KernelRole::kOther || role == KernelRole::kMatrix) {
      auto [it, fresh] = role_by_kernel.try_emplace(model.name[g], KernelRole::kOther);
      if (fresh) it->second = role_of_kernel_name(model.strings.view(model.name[g]));
      // A kernel's own name wins for fused and matrix kernels; a memory-bound name only fills in
      // for kernels no op with a cost model launched.
      if (it->second == KernelRole::kFused || it->second == KernelRole::kMatrix ||
          (role == KernelRole::kOther && it->second == KernelRole::kMemory))
        role = it->second;
    }
    if (role == KernelRole::kFused) result.compiled = true;
    StrId op_name = kEmptyStr;
    if (op != kNoEvent) op_name = model.name[op];
    kernels.push_back(
        {model.pid[g], model.tid[g], model.ts_ns[g], std::max<std::int64_t>(0, model.dur_ns[g]), role, op_name, g});
  }
  std::sort(kernels.begin(), kernels.end(), [](const ChainKernel& a, const ChainKernel& b) {
    return std::tie(a.device, a.stream, a.ts) < std::tie(b.device, b.stream, b.ts);
  });

  std::map<std::vector<StrId>, ElementwiseChainPattern> patterns;
  std::size_t i = 0;
  while (i < kernels.size()) {
    if (kernels[i].role != KernelRole::kMatrix) {
      ++i;
      continue;
    }
    // A run of memory-bound kernels after this matrix kernel, on its stream, up to the next one.
    std::size_t j = i + 1;
    while (j < kernels.size() && kernels[j].device == kernels[i].device && kernels[j].stream == kernels[i].stream &&
           kernels[j].role == KernelRole::kMemory)
      ++j;
    const bool closed = j < kernels.size() && kernels[j].device == kernels[i].device &&
                        kernels[j].stream == kernels[i].stream && kernels[j].role == KernelRole::kMatrix;
    const std::size_t length = j - i - 1;
    if (closed && length >= kMinChainKernels) {
      std::vector<StrId> names;
      std::int64_t ns = 0;
      for (std::size_t k = i + 1; k < j; ++k) {
        names.push_back(kernels[k].op_name);
        ns += kernels[k].dur;
        result.chain_kernels.push_back(kernels[k].event);
      }
      const std::int64_t fused = (kernels[i + 1].dur + kernels[j - 1].dur) / 2;
      ElementwiseChainPattern& p = patterns[names];
      ++p.occurrences;
      p.kernels = length;
      p.kernel_ns += ns;
      p.fused_ns += std::min(fused, ns);
      ++result.chains;
      result.kernels += length;
      result.kernel_ns += ns;
      result.fused_ns += std::min(fused, ns);
    }
    i = j;  // the closing matrix kernel opens the next chain
  }
  std::sort(result.chain_kernels.begin(), result.chain_kernels.end());
  for (auto& [names, p] : patterns) {
    p.ops = pattern_text(model, names);
    result.patterns.push_back(std::move(p));
  }
  std::sort(result.patterns.begin(), result.patterns.end(),
            [](const ElementwiseChainPattern& a, const ElementwiseChainPattern& b) {
              return std::tie(b.kernel_ns, a.ops) < std::tie(a.kernel_ns, b.ops);
            });
  std::stable_sort(
      result.patterns.begin(), result.patterns.end(),
      [](const ElementwiseChainPattern& a, const ElementwiseChainPattern& b) { return a.saved_ns() > b.saved_ns(); });
  return result;
}

}  // namespace ferret
