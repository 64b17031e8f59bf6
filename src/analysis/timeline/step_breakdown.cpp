#include "analysis/timeline/step_breakdown.h"

#include <algorithm>

#include "analysis/classify.h"
#include "analysis/intervals.h"
#include "model/relations.h"

namespace ferret {

const char* step_category_label(StepCategory c) {
  switch (c) {
    case StepCategory::kKernel: return "Kernel";
    case StepCategory::kMemcpy: return "Memcpy";
    case StepCategory::kMemset: return "Memset";
    case StepCategory::kCommunication: return "Communication";
    case StepCategory::kRuntime: return "Runtime";
    case StepCategory::kDataLoader: return "DataLoader";
    case StepCategory::kCpuExec: return "CPU Exec";
    case StepCategory::kOther: return "Other";
  }
  return "Other";
}

const char* step_category_key(StepCategory c) {
  switch (c) {
    case StepCategory::kKernel: return "kernel";
    case StepCategory::kMemcpy: return "memcpy";
    case StepCategory::kMemset: return "memset";
    case StepCategory::kCommunication: return "communication";
    case StepCategory::kRuntime: return "runtime";
    case StepCategory::kDataLoader: return "dataloader";
    case StepCategory::kCpuExec: return "cpu_exec";
    case StepCategory::kOther: return "other";
  }
  return "other";
}

namespace {

constexpr std::int8_t kSkip = -1;
constexpr std::int8_t kUnknown = -2;

std::int8_t code(StepCategory c) { return static_cast<std::int8_t>(c); }

// Category of a host span from its name. Names repeat millions of times and the tests are string
// scans, so the answer is memoised per interned name.
std::int8_t host_span_category(std::string_view name) {
  if (profiler_step_number(name) >= 0) return kSkip;  // the step itself is the window, not work
  if (is_dataloader_span(name)) return code(StepCategory::kDataLoader);
  // gloo collectives run on the CPU inside this span: it is the communication itself.
  if (name.rfind("gloo:", 0) == 0) return code(StepCategory::kCommunication);
  return code(StepCategory::kCpuExec);
}

std::int8_t kernel_category(std::string_view name) {
  return code(is_communication_kernel(name) ? StepCategory::kCommunication : StepCategory::kKernel);
}

// Sorts (skipped when the spans already arrive in time order) and merges
// overlapping or touching intervals in place.
void merge_sorted_or_not(std::vector<Interval>& spans) {
  auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  if (!std::is_sorted(spans.begin(), spans.end(), by_start)) std::sort(spans.begin(), spans.end(), by_start);
  std::size_t out = 0;
  for (const Interval& span : spans) {
    if (out > 0 && span.start <= spans[out - 1].end)
      spans[out - 1].end = std::max(spans[out - 1].end, span.end);
    else
      spans[out++] = span;
  }
  spans.resize(out);
}

}  // namespace

StepBreakdownResult analyze_step_breakdown(const TraceModel& model, const AnalysisContext& ctx) {
  StepBreakdownResult result;
  result.has_steps = ctx.has_steps;

  // The steps to fill: the selected ones, or one pseudo-step over the whole trace.
  if (ctx.has_steps) {
    for (const Step& s : ctx.steps) {
      StepCost cost;
      cost.number = s.number;
      cost.start_ns = s.start_ns;
      cost.duration_ns = std::max<std::int64_t>(0, s.end_ns - s.start_ns);
      result.steps.push_back(cost);
    }
  } else if (ctx.window_ns() > 0) {
    StepCost cost;
    cost.start_ns = ctx.window_start_ns;
    cost.duration_ns = ctx.window_ns();
    result.steps.push_back(cost);
  }
  if (result.steps.empty()) return result;

  const std::int64_t lo = result.steps.front().start_ns;
  const std::int64_t hi = result.steps.back().start_ns + result.steps.back().duration_ns;

  // One pass over the model: each span that meets the window goes to its category's list.
  std::array<std::vector<Interval>, kStepCategoryCount - 1> by_category;
  std::vector<std::int8_t> host_memo(model.strings.size(), kUnknown);
  std::vector<std::int8_t> kernel_memo(model.strings.size(), kUnknown);
  auto host_category = [&](EventIndex e) {
    std::int8_t& memo = host_memo[model.name[e]];
    if (memo == kUnknown) memo = host_span_category(model.strings.view(model.name[e]));
    return memo;
  };
  const bool nested = model.relations.built;
  const std::size_t n = model.size();
  for (std::size_t i = 0; i < n; ++i) {
    const EventKind kind = model.kind[i];
    std::int8_t category = kSkip;
    switch (kind) {
      case EventKind::kKernel:
      case EventKind::kMemcpy:
      case EventKind::kMemset:
        if (!ctx.counts_gpu_event(model, static_cast<EventIndex>(i))) continue;
        if (kind == EventKind::kMemcpy) {
          category = code(StepCategory::kMemcpy);
        } else if (kind == EventKind::kMemset) {
          category = code(StepCategory::kMemset);
        } else {
          std::int8_t& memo = kernel_memo[model.name[i]];
          if (memo == kUnknown) memo = kernel_category(model.strings.view(model.name[i]));
          category = memo;
        }
        break;
      case EventKind::kCudaRuntime:
      case EventKind::kCudaDriver: category = code(StepCategory::kRuntime); break;
      case EventKind::kCpuOp:
      case EventKind::kUserAnnotation: category = host_category(static_cast<EventIndex>(i)); break;
      default: continue;  // python_function, overhead, GPU-side annotations, instants, flows: Other
    }
    if (category == kSkip || model.phase[i] != 'X') continue;
    const std::int64_t start = model.ts_ns[i];
    const std::int64_t end = start + model.dur_ns[i];
    if (end <= lo || start >= hi || end <= start) continue;
    // A span inside a span of its own category adds nothing to the union: most CPU ops are
    // children of other CPU ops, so this keeps the CPU Exec list a fraction of the op count.
    if (nested && (kind == EventKind::kCpuOp || kind == EventKind::kUserAnnotation)) {
      const EventIndex parent = model.relations.parent[i];
      const EventKind parent_kind = parent != kNoEvent ? model.kind[parent] : EventKind::kOther;
      if ((parent_kind == EventKind::kCpuOp || parent_kind == EventKind::kUserAnnotation) &&
          host_category(parent) == category && end <= model.end_ns(parent))
        continue;
    }
    by_category[category].push_back({start, end});
  }
  for (std::vector<Interval>& spans : by_category) merge_sorted_or_not(spans);

  // Sweep each step from its start to its end. At time t the first category (in priority order)
  // with an interval covering t owns the time until that interval ends or a higher-priority
  // category starts, whichever is first; when none covers t, Other owns it until one starts.
  // Lists and steps are both in time order, so one cursor per list only moves forward: the
  // whole sweep is linear in the number of merged intervals.
  std::array<std::size_t, kStepCategoryCount - 1> cursor{};
  for (StepCost& s : result.steps) {
    const std::int64_t step_end = s.start_ns + s.duration_ns;
    for (std::int64_t t = s.start_ns; t < step_end;) {
      int owner = static_cast<int>(StepCategory::kOther);
      std::int64_t next = step_end;
      for (int c = 0; c < kStepCategoryCount - 1; ++c) {
        const std::vector<Interval>& spans = by_category[c];
        std::size_t& at = cursor[c];
        while (at < spans.size() && spans[at].end <= t) ++at;
        if (at == spans.size()) continue;
        if (spans[at].start <= t) {
          owner = c;
          next = std::min(next, spans[at].end);
          break;
        }
        next = std::min(next, spans[at].start);
      }
      s.ns[owner] += next - t;
      t = next;
    }
  }

  // The mean step and the shares of it (sum over steps / number of steps; the shares are sums
  // over sums, so they add to 100 exactly as the nanoseconds add to the step time).
  double total_duration = 0;
  for (const StepCost& s : result.steps) {
    total_duration += static_cast<double>(s.duration_ns);
    for (int c = 0; c < kStepCategoryCount; ++c) result.average_ns[c] += static_cast<double>(s.ns[c]);
  }
  const double count = static_cast<double>(result.steps.size());
  result.average_duration_ns = total_duration / count;
  for (int c = 0; c < kStepCategoryCount; ++c) {
    result.average_pct[c] = total_duration > 0 ? 100.0 * result.average_ns[c] / total_duration : 0.0;
    result.average_ns[c] /= count;
  }
  return result;
}

}  // namespace ferret
