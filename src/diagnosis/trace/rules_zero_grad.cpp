// gradients-zeroed: optimizer.zero_grad() writes zeros into every gradient each step instead of
// dropping them. The whole rule - its registry row, its run, its threshold - is this file.
//
// `zero_grad(set_to_none=False)` (the default before torch 2.0, and what `model.zero_grad()` did
// before 1.7 added the argument) calls `grad.zero_()` on every parameter's gradient: one operator
// and one fill kernel per parameter (`aten::zero_` -> `aten::fill_`), or `aten::_foreach_zero_` per
// group of tensors where the optimizer runs foreach. With `set_to_none=True` (the default since
// torch 2.0) zero_grad only drops the references: nothing runs on the device, and the next backward
// writes each gradient instead of adding it to zeros. PyTorch's own advice ("Performance Tuning
// Guide": use `set_to_none=True`; `torch.optim.Optimizer.zero_grad` docs) names both savings.
#include <algorithm>

#include <fmt/format.h>

#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// Below 1% of the window the fix is not worth a finding (ferret's floor, as the host rules').
constexpr double kMinZeroingShare = 0.01;

bool is_zero_grad_span(std::string_view name) { return name.starts_with("Optimizer.zero_grad"); }

bool is_zeroing_op(std::string_view name) { return name == "aten::zero_" || name == "aten::_foreach_zero_"; }

// A zeroing op that zero_grad itself called: the first enclosing span is zero_grad's, with no other
// operator between. (torch 1.x's record_function made its handle with aten::zeros -> aten::zero_
// inside the same span: that zero_ belongs to aten::zeros, and is not a gradient.)
bool called_by_zero_grad(const TraceModel& m, EventIndex e) {
  for (EventIndex p = m.relations.parent[e]; p != kNoEvent; p = m.relations.parent[p]) {
    if (is_zero_grad_span(m.name_of(p))) return true;
    if (m.kind[p] == EventKind::kCpuOp) return false;
  }
  return false;
}

void rule_gradients_zeroed(const TraceAnalysis& a, std::vector<Finding>& out) {
  if (a.model == nullptr) return;
  const TraceModel& m = *a.model;
  const AnalysisContext& ctx = a.context;
  const Relations& rel = m.relations;
  if (ctx.window_ns() <= 0 || rel.parent.size() != m.size()) return;

  std::vector<bool> zeroing(m.size(), false);
  std::vector<EventIndex> host_events;
  std::uint64_t per_tensor_calls = 0, foreach_calls = 0;
  std::int64_t host_ns = 0;
  for (std::size_t i = 0; i < m.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    if (m.kind[e] != EventKind::kCpuOp || m.phase[e] != 'X' || !is_zeroing_op(m.name_of(e))) continue;
    if (m.ts_ns[e] < ctx.window_start_ns || m.ts_ns[e] >= ctx.window_end_ns || !called_by_zero_grad(m, e)) continue;
    zeroing[i] = true;
    host_events.push_back(e);
    host_ns += m.dur_ns[e];
    ++(m.name_of(e) == "aten::_foreach_zero_" ? foreach_calls : per_tensor_calls);
  }
  if (host_events.empty()) return;

  // Device work: what the zeroing ops launched (a fill kernel, or a memset).
  std::vector<EventIndex> device_events;
  std::int64_t device_ns = 0;
  for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
    const EventIndex ge = rel.gpu_events[g];
    const EventKind k = m.kind[ge];
    if ((k != EventKind::kKernel && k != EventKind::kMemset) || !ctx.counts_gpu_event(m, ge)) continue;
    const EventIndex launch = rel.gpu_launcher[g];
    bool launched_by_zeroing = false;
    for (EventIndex p = launch != kNoEvent ? rel.parent[launch] : kNoEvent; p != kNoEvent && !launched_by_zeroing;
         p = rel.parent[p])
      launched_by_zeroing = zeroing[p];
    if (!launched_by_zeroing) continue;
    device_events.push_back(ge);
    device_ns += m.dur_ns[ge];
  }
  std::sort(device_events.begin(), device_events.end());

  // The fix removes both sides; the step can shorten by at most the longer of the two.
  const bool on_device = !device_events.empty();
  const std::int64_t cost_ns = std::max(host_ns, device_ns);
  const double share = std::min(1.0, static_cast<double>(cost_ns) / static_cast<double>(ctx.window_ns()));
  if (share < kMinZeroingShare) return;
  const std::uint64_t calls = per_tensor_calls + foreach_calls;
  const std::size_t steps = ctx.has_steps ? ctx.steps.size() : 0;

  Finding f = finding_for("gradients-zeroed");
  f.layer = Layer::kFramework;
  f.title = fmt::format(
      "optimizer.zero_grad() zeroes the gradients instead of dropping them: {} call{}{}, {} of {} time ({:.1f}% of the "
      "{})",
      calls, calls == 1 ? "" : "s",
      steps > 0 ? fmt::format(" ({:.0f} per step)", static_cast<double>(calls) / static_cast<double>(steps)) : "",
      human_duration(cost_ns), host_ns >= device_ns ? "host" : "GPU", share_to_pct(share), window_noun(a));
  f.detail = fmt::format(
      "zero_grad ran with set_to_none=False: {} aten::zero_ call{} (one per gradient){} inside Optimizer.zero_grad "
      "spans, {} of host time{}. With set_to_none=True it only drops the gradients, nothing runs, and the next "
      "backward writes each gradient instead of reading zeros and adding to them.",
      per_tensor_calls, per_tensor_calls == 1 ? "" : "s",
      foreach_calls > 0 ? fmt::format(" and {} aten::_foreach_zero_", foreach_calls) : "", human_duration(host_ns),
      on_device ? fmt::format(" and {} kernel{} with {} of GPU time", device_events.size(),
                              device_events.size() == 1 ? "" : "s", human_duration(device_ns))
                : "");
  f.evidence = {{"zeroing_calls", static_cast<double>(calls), "count"},
                {"zeroing_host_ms", ns_to_ms(static_cast<double>(host_ns)), "ms"},
                {"zeroing_gpu_ms", ns_to_ms(static_cast<double>(device_ns)), "ms"},
                {"zeroing_pct", share_to_pct(share), "%"}};
  f.fixes = {
      "Drop the gradients instead of zeroing them: `optimizer.zero_grad(set_to_none=True)` (the default since torch "
      "2.0; `model.zero_grad(set_to_none=True)` where the model is zeroed; before torch 1.7, `for p in "
      "model.parameters(): p.grad = None`). Code that reads `.grad` between zero_grad and backward then sees None."};
  f.threshold =
      "zero_grad zeroing gradients (aten::zero_ / _foreach_zero_ inside Optimizer.zero_grad) >= 1% of the "
      "window (ferret's floor for a fix that costs nothing)";
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  // The what-if: the zeroing takes a thousandth of its time. On a GPU the step graph re-times the
  // kernels; the calls that launch them keep their host time (a conservative prediction where the
  // host is the bottleneck). On a CPU the calls themselves go.
  if (on_device) {
    const double ns = static_cast<double>(device_ns);
    fix_speeds_up_device_events(f, "gradients dropped, not zeroed", ns, 0.999 * ns, std::move(device_events));
  } else {
    const double ns = static_cast<double>(host_ns);
    fix_speeds_up_host_events(f, "gradients dropped, not zeroed", ns, 0.999 * ns, std::move(host_events));
  }
  out.push_back(std::move(f));
}

// The zeroing is host work the device may wait on, as the host's other causes.
constexpr RuleInfo kZeroGradRules[] = {
    explaining(kExplainsIdleHost,
               RuleInfo{"gradients-zeroed", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause}),
};

}  // namespace

FERRET_RULE_FAMILY(zero_grad){"rule_gradients_zeroed", 115, kZeroGradRules, rule_run<rule_gradients_zeroed>()};

}  // namespace ferret
