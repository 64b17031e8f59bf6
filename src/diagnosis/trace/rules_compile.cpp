// compile-in-window. torch.compile compiles (or recompiles) inside the analysed steps: the time is
// the host's, paid once per new shape, and a profile of it says nothing of the compiled step. A
// recompile in steady steps means a guard failed and will fail again with the next new shape.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/timeline/window_activity.h"
#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// Threshold: compiling covers at least 5% of the window - XProf's moderate level for time that is
// not the step's work, as for exposed communication. A window that is mostly one-time work is an
// initialisation window (rules_window), which says so first.
constexpr double kCompileShare = 0.05;
constexpr double kCompileHigh = 0.20;

}  // namespace

std::vector<Fix> compile_fixes(const CompileActivity& c) {
  std::vector<Fix> fixes;
  if (c.recompiles > 0)
    fixes.emplace_back(
        "See which guard failed: `TORCH_LOGS=recompiles python train.py`; for a dimension that varies (batch, "
        "sequence length), mark it dynamic before the first call - `torch._dynamo.mark_dynamic(x, 0)` - or compile "
        "with `torch.compile(model, dynamic=True)`, or pad inputs to a few fixed sizes");
  if (c.frames > 1)
    fixes.emplace_back(
        "Find the graph breaks: `TORCH_LOGS=graph_breaks python train.py` names each (a print, .item(), data-dependent "
        "control flow); `torch.compile(model, fullgraph=True)` turns them into errors");
  fixes.emplace_back(
      "Profile after compiling: run each input shape once before recording, e.g. "
      "`torch.profiler.schedule(wait=1, warmup=2, active=5)` with warm-up steps that see every shape");
  if (c.steps_without > 0)
    fixes.push_back(
        fmt::format("Analyse the steps without compiling: `ferret analyze --steps {}-{} TRACE` ({} of them, "
                    "{:.2f} ms on average; steps in between that compiled are left in)",
                    c.first_step_without, c.last_step_without, c.steps_without, ns_to_ms(c.steps_without_mean_ns)));
  fixes.emplace_back(
      "Keep compiled artifacts between runs: Inductor's FX graph cache (on by default in torch 2.x) in a persistent "
      "`TORCHINDUCTOR_CACHE_DIR` turns a restart's compile into a cache load");
  return fixes;
}

std::string compile_detail(const CompileActivity& c) {
  std::string out = fmt::format("{} stretch{} of compiling", c.blocks, c.blocks == 1 ? "" : "es");
  if (c.recompiles > 0)
    out += fmt::format(
        ", {} recompilation{} among them (compile ids F/R with R >= 1: frame F compiled again "
        "because a guard failed)",
        c.recompiles, c.recompiles == 1 ? "" : "s");
  if (c.frames > 1)
    out += fmt::format(
        "; the window calls {} compiled frames: graph breaks (or separately compiled functions) "
        "split the model, and Python runs between them",
        c.frames);
  if (c.steps_without > 0)
    out += fmt::format("; the {} step{} without compiling take {:.2f} ms on average", c.steps_without,
                       c.steps_without == 1 ? "" : "s", ns_to_ms(c.steps_without_mean_ns));
  return out;
}

void rules_compile(const TraceAnalysis& a, std::vector<Finding>& out) {
  const WindowActivityResult& w = a.window_activity;
  const CompileActivity& c = w.compile;
  if (w.window_ns <= 0 || c.ns <= 0 || w.activity == WindowActivity::kInitialisation) return;
  const double share = static_cast<double>(c.ns) / static_cast<double>(w.window_ns);
  if (share < kCompileShare) return;
  Finding f = finding_for("compile-in-window");
  f.layer = Layer::kFramework;
  f.severity = share >= kCompileHigh ? Severity::kHigh : Severity::kMedium;
  const bool recompiled = c.recompiles > 0;
  f.title = recompiled ? fmt::format(
                             "torch.compile recompiled inside the window: {} recompilation{} took {:.1f} ms (a guard "
                             "failed: a new shape, dtype or specialised value); compiling takes {:.0f}% of the window",
                             c.recompiles, c.recompiles == 1 ? "" : "s", ns_to_ms(c.recompile_ns), 100 * share)
                       : fmt::format("torch.compile compiled inside the window: {:.1f} ms, {:.0f}% of it",
                                     ns_to_ms(c.ns), 100 * share);
  f.detail = fmt::format(
      "Dynamo and Inductor compiled for {:.1f} ms {} ({}). Compiling is paid once per frame and input signature, "
      "not every step: these steps are not the compiled model's steady state.",
      ns_to_ms(c.ns), a.context.has_steps ? "in the analysed steps" : std::string("in the ") + window_noun(a),
      compile_detail(c));
  f.evidence = {{"compile_ms", ns_to_ms(c.ns), "ms"},
                {"compile_share_pct", 100 * share, "%"},
                {"recompiles", static_cast<double>(c.recompiles), "count"},
                {"compiled_frames", static_cast<double>(c.frames), "count"}};
  if (c.steps_without > 0)
    f.evidence.push_back({"steps_without_compiling_mean_ms", ns_to_ms(c.steps_without_mean_ns), "ms"});
  f.fixes = compile_fixes(c);
  // The what-if: the compile spans take no time; the compiled code they produced still runs.
  const double compile_ns = static_cast<double>(c.ns);
  std::vector<EventIndex> spans = c.outermost;
  std::sort(spans.begin(), spans.end());  // the step graph looks events up by index
  fix_speeds_up_host_events(f, "torch.compile compiling", compile_ns, compile_ns * (1.0 - 1e-3), std::move(spans));
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  f.threshold = "torch.compile compiling >= 5% of the window, >= 20% high (ferret, on XProf's levels)";
  out.push_back(std::move(f));
}

namespace {
constexpr RuleInfo kCompileRules[] = {
    explaining(kExplainsIdleHost,
               RuleInfo{"compile-in-window", RuleSource::kTrace, Dimension::kCompute, RuleRole::kCause}),
};
}  // namespace

FERRET_RULE_FAMILY(compile){"rules_compile", 130, kCompileRules, rule_run<rules_compile>()};

}  // namespace ferret
