#include "analysis/timeline/workload.h"

#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"

namespace ferret {

const char* workload_name(Workload w) {
  switch (w) {
    case Workload::kTraining: return "training";
    case Workload::kInference: return "inference";
    case Workload::kServing: return "serving";
    case Workload::kMicrobenchmark: return "microbenchmark";
    case Workload::kUnknown: break;
  }
  return "unknown";
}

namespace {

enum NameRole : std::int8_t { kUnclassified = -1, kOther, kBackward, kOptimizer };

NameRole role_of(std::string_view name) {
  // Autograd's backward functions ("autograd::engine::evaluate_function: MmBackward0",
  // "MmBackward0") and the ops they run ("aten::convolution_backward").
  if (contains(name, "Backward") || contains(name, "_backward")) return kBackward;
  if (name.rfind("Optimizer.step#", 0) == 0 || name.rfind("aten::_fused_adam", 0) == 0 ||
      name.rfind("aten::_fused_sgd", 0) == 0)
    return kOptimizer;
  return kOther;
}

// Serving engines other than the ones window_activity names, by their packages' names in op,
// annotation and Python frame strings.
std::string other_server(const TraceModel& model) {
  for (std::size_t id = 0; id < model.strings.size(); ++id) {
    const std::string_view s = model.strings.view(static_cast<StrId>(id));
    if (contains(s, "text_generation_server")) return "Text Generation Inference";
    if (contains(s, "tensorrt_llm")) return "TensorRT-LLM";
  }
  return "";
}

}  // namespace

WorkloadResult analyze_workload(const TraceModel& model, const AnalysisContext& ctx,
                                const WindowActivityResult& window) {
  WorkloadResult r;
  const TimeWindow w = ctx.window();
  std::vector<std::int8_t> role(model.strings.size(), kUnclassified);
  for (std::size_t i = 0; i < model.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    const EventKind k = model.kind[e];
    if ((k != EventKind::kCpuOp && k != EventKind::kUserAnnotation) || model.phase[e] != 'X' ||
        !w.contains(model.ts_ns[e]))
      continue;
    std::int8_t& r_of = role[model.name[e]];
    if (r_of == kUnclassified) r_of = role_of(model.name_of(e));
    if (r_of == kBackward) ++r.backward_ops;
    if (r_of == kOptimizer) ++r.optimizer_steps;
    if (r_of == kOther && k == EventKind::kCpuOp) ++r.forward_ops;
  }
  r.server = window.inference_server.empty() ? other_server(model) : window.inference_server;
  if (window.activity == WindowActivity::kMicrobenchmark) {
    r.kind = Workload::kMicrobenchmark;
    r.evidence = "a loop of a few operators with the device mostly idle";
  } else if (!r.server.empty()) {
    r.kind = Workload::kServing;
    r.evidence = r.server + " by name";
  } else if (r.backward_ops > 0 || r.optimizer_steps > 0) {
    r.kind = Workload::kTraining;
    r.evidence = fmt::format("{} backward op{}, {} optimizer step{}", r.backward_ops, r.backward_ops == 1 ? "" : "s",
                             r.optimizer_steps, r.optimizer_steps == 1 ? "" : "s");
  } else if (r.forward_ops > 0) {
    r.kind = Workload::kInference;
    r.evidence = fmt::format("{} operators, no backward or optimizer op", r.forward_ops);
  } else {
    r.evidence = "no operators recorded";
  }
  return r;
}

}  // namespace ferret
