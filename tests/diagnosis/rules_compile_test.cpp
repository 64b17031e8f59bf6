// compile-in-window and a window mostly spent compiling: hand-made CPU traces of four 100 ms
// steps (us) in which torch.compile compiles, with the compile ids torch 2.x records.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rules_compile_test {

using test::span;

// Steps 0-3 of 100 ms, each an aten::mm of 30 ms at +5 ms (the rest Python, outside operators). Step 2 also compiles
// for `compile_us` at +86 ms under a compiled region "Torch-Compiled Region: 0/R" (R = `compile`), the compile's id
// recorded inside it when `with_id`; the step is then 100 + compile_us long and the later steps move by it.
std::string steps_with_compile(double compile_us, int compile, bool with_id) {
  std::vector<std::string> ev;
  double s = 0;
  for (int k = 0; k < 4; ++k) {
    const double len = 100'000 + (k == 2 ? compile_us : 0);
    ev.push_back(span("user_annotation", fmt::format("ProfilerStep#{}", k), 1, 1, s, len));
    ev.push_back(span("cpu_op", "aten::mm", 1, 1, s + 5'000, 30'000));
    if (k == 2) {
      ev.push_back(
          span("cpu_op", fmt::format("Torch-Compiled Region: 0/{}", compile), 1, 1, s + 86'000, compile_us + 2'000));
      ev.push_back(span("cpu_op", "entire_frame_compile", 1, 1, s + 86'500, compile_us));
      ev.push_back(span("cpu_op", "_compile.compile_inner (dynamo_timed)", 1, 1, s + 86'600, compile_us - 200));
      if (with_id)
        ev.push_back(
            span("user_annotation", fmt::format("dynamo_data: compile_id=0/{}", compile), 1, 1, s + 86'700, 5));
      ev.push_back(span("cpu_op", "aten::relu", 1, 1, s + 86'500 + compile_us + 100, 1'000));
    }
    s += len;
  }
  return test::trace(ev);
}

const Finding* find(const Diagnosis& d, const std::string& id) {
  for (const Finding& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

TEST(RulesCompile, ARecompileInSteadyStepsByHand) {
  // 40 ms of compiling in a 440 ms window: 9.09%, medium; removing it gives 400 ms, 1.10x.
  const TraceModel m = load_trace_text(steps_with_compile(40'000, 1, true));
  const TraceAnalysis a = analyze_trace(m, {});
  const CompileActivity& c = a.window_activity.compile;
  EXPECT_EQ(c.ns, 40'000'000);
  EXPECT_EQ(c.blocks, 1u);
  EXPECT_EQ(c.recompiles, 1u);
  EXPECT_EQ(c.recompile_ns, 40'000'000);
  EXPECT_EQ(c.frames, 1u);
  EXPECT_EQ(c.steps_without, 3u);
  EXPECT_EQ(c.steps_without_mean_ns, 100'000'000);
  EXPECT_EQ(c.first_step_without, 0);
  EXPECT_EQ(c.last_step_without, 3);
  const Diagnosis d = diagnose(a);
  const Finding* f = find(d, "compile-in-window");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(d.verdict.finding_id, "compile-in-window") << d.verdict.headline;
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_NEAR(f->time_share, 40.0 / 440.0, 1e-9);
  EXPECT_NE(f->title.find("1 recompilation took 40.0 ms"), std::string::npos) << f->title;
  EXPECT_NEAR(f->predicted_speedup, 440.0 / 400.0, 0.005) << f->title;
  EXPECT_NE(f->fixes.front().text.find("TORCH_LOGS=recompiles"), std::string::npos);
  // The steps to analyse instead are named, with their mean.
  EXPECT_TRUE(std::ranges::any_of(fix_texts(*f), [](const std::string& s) {
    return s.find("--steps 0-3") != std::string::npos && s.find("100.00 ms") != std::string::npos;
  }));
  // The fixes tune the compile already there: none of them is dropped as "already compiled".
  EXPECT_TRUE(std::ranges::any_of(fix_texts(*f),
                                  [](const std::string& s) { return s.find("dynamic=True") != std::string::npos; }));
}

TEST(RulesCompile, AFirstCompileIsNotCalledARecompile) {
  for (const bool with_id : {true, false}) {
    const TraceModel m = load_trace_text(steps_with_compile(40'000, 0, with_id));
    const Diagnosis d = diagnose(analyze_trace(m, {}));
    const Finding* f = find(d, "compile-in-window");
    ASSERT_NE(f, nullptr) << with_id;
    EXPECT_NE(f->title.find("torch.compile compiled inside the window: 40.0 ms"), std::string::npos) << f->title;
    EXPECT_EQ(f->fixes.front().text.find("TORCH_LOGS=recompiles"), std::string::npos);
  }
  // A compiled region numbered 1 without the compile's id: the region is the caller, not what
  // compiled (a resumed frame compiles inside its caller's region), so no recompile is claimed.
  const TraceModel region_only = load_trace_text(steps_with_compile(40'000, 1, false));
  const Diagnosis d = diagnose(analyze_trace(region_only, {}));
  const Finding* f = find(d, "compile-in-window");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title.find("recompil"), std::string::npos) << f->title;
}

TEST(RulesCompile, AWindowMostlyCompilingSaysSoFirst) {
  // 600 ms of compiling in 1,000: the window verdict, in compile's words and fixes; on a CPU trace
  // no CUDA fix.
  const TraceModel m = load_trace_text(steps_with_compile(600'000, 1, true));
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings.front();
  EXPECT_EQ(f.id, "initialisation-window");
  EXPECT_NE(f.title.find("mostly torch.compile recompiling, not steady state: compiling takes 60% of it (600.0 of "
                         "1000.0 ms)"),
            std::string::npos)
      << f.title;
  EXPECT_EQ(find(d, "compile-in-window"), nullptr);
  EXPECT_NE(f.fixes.front().text.find("TORCH_LOGS=recompiles"), std::string::npos);
  for (const std::string& fix : fix_texts(f)) EXPECT_EQ(fix.find("CUDA"), std::string::npos) << fix;
}

TEST(RulesCompile, LittleCompilingIsNoFinding) {
  // 4 ms of 404: under 5%.
  const TraceModel m = load_trace_text(steps_with_compile(4'000, 1, true));
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  EXPECT_EQ(find(d, "compile-in-window"), nullptr);
}

}  // namespace rules_compile_test
}  // namespace
}  // namespace ferret
