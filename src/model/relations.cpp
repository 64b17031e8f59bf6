#include "model/relations.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

namespace ferret {

std::int64_t profiler_step_number(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return -1;
  std::int64_t n = 0;
  const std::string_view digits = name.substr(kPrefix.size());
  if (digits.empty() || digits.size() > 18) return -1;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

namespace {

// Nesting by interval containment per (pid, tid). Spans are visited by start time (longer
// first on ties); a stack holds the open ancestors. A child that ends after its parent keeps
// the parent (it started inside it) and is clamped to the parent's end for nesting purposes
// only - its recorded duration is untouched. Each such case is counted as a repair.
void build_nesting(TraceModel& model) {
  Relations& rel = model.relations;
  const std::size_t n = model.size();
  rel.parent.assign(n, kNoEvent);
  std::vector<EventIndex> spans;
  for (std::size_t e = 0; e < n; ++e)
    if (model.phase[e] == 'X' && is_host_span(model.kind[e])) spans.push_back(static_cast<EventIndex>(e));
  std::sort(spans.begin(), spans.end(), [&](EventIndex a, EventIndex b) {
    if (model.pid[a] != model.pid[b]) return model.pid[a] < model.pid[b];
    if (model.tid[a] != model.tid[b]) return model.tid[a] < model.tid[b];
    if (model.ts_ns[a] != model.ts_ns[b]) return model.ts_ns[a] < model.ts_ns[b];
    if (model.dur_ns[a] != model.dur_ns[b]) return model.dur_ns[a] > model.dur_ns[b];
    return a < b;
  });
  struct Open {
    EventIndex event;
    std::int64_t end;  // nesting end: min(own end, parent's nesting end)
  };
  std::vector<Open> stack;
  std::string first_repair;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const EventIndex e = spans[i];
    if (i > 0 && (model.pid[e] != model.pid[spans[i - 1]] || model.tid[e] != model.tid[spans[i - 1]])) stack.clear();
    const std::int64_t start = model.ts_ns[e];
    std::int64_t end = model.end_ns(e);
    while (!stack.empty() && stack.back().end <= start) stack.pop_back();
    if (!stack.empty()) {
      rel.parent[e] = stack.back().event;
      if (end > stack.back().end) {
        if (rel.nesting_repairs++ == 0)
          first_repair = fmt::format("event #{} \"{}\"", e, model.name_of(e));
        end = stack.back().end;
      }
    }
    stack.push_back({e, end});
  }
  if (rel.nesting_repairs > 0)
    model.report.repair("span outlives its parent: nested under the span it starts in", first_repair, rel.nesting_repairs);
}

bool is_kernel_launch_name(std::string_view name) {
  return name.find("LaunchKernel") != std::string_view::npos || name.find("GraphLaunch") != std::string_view::npos ||
         name.find("LaunchCooperativeKernel") != std::string_view::npos ||
         name.find("ModuleLaunchKernel") != std::string_view::npos;
}

void build_correlation(TraceModel& model) {
  Relations& rel = model.relations;
  const std::size_t n = model.size();
  std::unordered_map<std::int64_t, std::uint32_t> launch_by_corr;
  for (std::size_t e = 0; e < n; ++e) {
    const EventKind k = model.kind[e];
    if (is_launch_api(k) && model.correlation[e] != kNoId) {
      launch_by_corr.emplace(model.correlation[e], static_cast<std::uint32_t>(rel.launches.size()));
      rel.launches.push_back(static_cast<EventIndex>(e));
    }
  }
  std::vector<std::uint32_t> count(rel.launches.size() + 1, 0);
  for (std::size_t e = 0; e < n; ++e) {
    const EventKind k = model.kind[e];
    if (k != EventKind::kKernel && k != EventKind::kMemcpy && k != EventKind::kMemset && k != EventKind::kSync) continue;
    rel.gpu_events.push_back(static_cast<EventIndex>(e));
    EventIndex launcher = kNoEvent;
    if (model.correlation[e] != kNoId) {
      auto it = launch_by_corr.find(model.correlation[e]);
      if (it != launch_by_corr.end()) {
        launcher = rel.launches[it->second];
        ++count[it->second];
      }
    }
    if (launcher == kNoEvent && k != EventKind::kSync) ++rel.unmatched_gpu;
    rel.gpu_launcher.push_back(launcher);
  }
  // CSR of launch -> GPU activities.
  rel.launch_gpu_begin.assign(rel.launches.size() + 1, 0);
  for (std::size_t i = 0; i < rel.launches.size(); ++i) rel.launch_gpu_begin[i + 1] = rel.launch_gpu_begin[i] + count[i];
  rel.launch_gpu.assign(rel.launch_gpu_begin.back(), kNoEvent);
  std::vector<std::uint32_t> fill(rel.launch_gpu_begin.begin(), rel.launch_gpu_begin.end() - 1);
  for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
    const EventIndex launcher = rel.gpu_launcher[g];
    if (launcher == kNoEvent) continue;
    const std::uint32_t li = launch_by_corr.at(model.correlation[launcher]);
    rel.launch_gpu[fill[li]++] = rel.gpu_events[g];
  }
  for (std::size_t i = 0; i < rel.launches.size(); ++i)
    if (count[i] == 0 && is_kernel_launch_name(model.name_of(rel.launches[i]))) ++rel.launches_without_gpu;

  // Launch -> the CPU op it serves: innermost enclosing cpu_op, else user annotation, else the
  // op with the same External id.
  std::unordered_map<std::int64_t, EventIndex> op_by_external;
  for (std::size_t e = 0; e < n; ++e)
    if (model.kind[e] == EventKind::kCpuOp && model.external_id[e] != kNoId)
      op_by_external.emplace(model.external_id[e], static_cast<EventIndex>(e));
  rel.launch_op.assign(rel.launches.size(), kNoEvent);
  for (std::size_t i = 0; i < rel.launches.size(); ++i) {
    EventIndex annotation = kNoEvent;
    for (EventIndex p = rel.parent[rel.launches[i]]; p != kNoEvent; p = rel.parent[p]) {
      if (model.kind[p] == EventKind::kCpuOp) {
        rel.launch_op[i] = p;
        break;
      }
      if (annotation == kNoEvent && model.kind[p] == EventKind::kUserAnnotation &&
          profiler_step_number(model.name_of(p)) < 0)
        annotation = p;
    }
    if (rel.launch_op[i] != kNoEvent) continue;
    const std::int64_t ext = model.external_id[rel.launches[i]];
    if (ext != kNoId) {
      auto it = op_by_external.find(ext);
      if (it != op_by_external.end()) {
        rel.launch_op[i] = it->second;
        continue;
      }
    }
    rel.launch_op[i] = annotation;
  }
}

void build_steps(TraceModel& model) {
  Relations& rel = model.relations;
  std::vector<Step> steps;
  for (std::size_t e = 0; e < model.size(); ++e) {
    if (model.phase[e] != 'X' || !is_host_span(model.kind[e])) continue;
    const std::int64_t number = profiler_step_number(model.name_of(static_cast<EventIndex>(e)));
    if (number < 0) continue;
    Step s;
    s.number = number;
    s.event = static_cast<EventIndex>(e);
    s.start_ns = model.ts_ns[e];
    s.cpu_end_ns = s.end_ns = model.end_ns(static_cast<EventIndex>(e));
    steps.push_back(s);
  }
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
  if (steps.empty()) return;
  // GPU work belongs to the step whose CPU span contains its launch call.
  for (std::size_t i = 0; i < rel.launches.size(); ++i) {
    const EventIndex launch = rel.launches[i];
    const std::int64_t t = model.ts_ns[launch];
    auto it = std::upper_bound(steps.begin(), steps.end(), t, [](std::int64_t x, const Step& s) { return x < s.start_ns; });
    if (it == steps.begin()) continue;
    Step& step = *(it - 1);
    if (t >= step.cpu_end_ns) continue;
    for (std::uint32_t g = rel.launch_gpu_begin[i]; g < rel.launch_gpu_begin[i + 1]; ++g) {
      const EventIndex gpu = rel.launch_gpu[g];
      step.end_ns = std::max(step.end_ns, model.end_ns(gpu));
      if (model.kind[gpu] == EventKind::kKernel) ++step.kernels;
    }
  }
  // Steps never overlap: a step starts no earlier than the previous one's (GPU-extended) end,
  // as in the TensorBoard plugin, so per-step times sum to the wall time they cover.
  for (std::size_t i = 1; i < steps.size(); ++i) {
    steps[i].start_ns = std::max(steps[i].start_ns, steps[i - 1].end_ns);
    steps[i].end_ns = std::max(steps[i].end_ns, steps[i].start_ns);
  }
  if (steps.size() >= 2) {
    const Step& last = steps.back();
    const Step& prev = steps[steps.size() - 2];
    if (static_cast<double>(last.kernels) < kIncompleteStepKernelShare * static_cast<double>(prev.kernels)) {
      rel.dropped_step = last;
      model.report.notes.push_back(fmt::format(
          "last step ProfilerStep#{} launched {} kernels, under 80% of the previous step's {}: "
          "excluded as incomplete",
          last.number, last.kernels, prev.kernels));
      steps.pop_back();
    }
  }
  rel.steps = std::move(steps);
}

}  // namespace

void build_relations(TraceModel& model) {
  model.relations = Relations{};
  build_nesting(model);
  build_correlation(model);
  build_steps(model);
  model.relations.built = true;
}

}  // namespace ferret
