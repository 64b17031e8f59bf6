// The ranking policy on whole diagnoses: every corpus trace and every generated scenario. The
// verdict is finding #1, severities never increase down the list, a finding that bounds a gain
// carries its band's severity, no symptom stands beside findings that explain half of it, no rule beside
// the more precise rule of its cause, and no bound exceeds what its model allows.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/verdict.h"
#include "gen/scenarios.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace verdict_policy_test {

namespace fs = std::filesystem;

bool is_window(const Finding& f) {
  const RuleInfo* rule = find_rule(f.id);
  return rule != nullptr && rule->role == RuleRole::kWindow;
}

void expect_policy(const Diagnosis& d, const std::string& input) {
  SCOPED_TRACE(input);
  const std::vector<Finding>& fs = d.findings;
  // The verdict is finding #1, and finding #1 is the verdict whenever it can be one.
  if (!d.verdict.finding_id.empty()) {
    ASSERT_FALSE(fs.empty());
    EXPECT_EQ(d.verdict.finding_id, fs.front().id);
  }
  if (!fs.empty() && (is_window(fs.front()) || fs.front().severity >= Severity::kMedium)) {
    EXPECT_EQ(d.verdict.finding_id, fs.front().id);
  }
  for (std::size_t i = 0; i < fs.size(); ++i) {
    const Finding& f = fs[i];
    const RuleInfo* rule = find_rule(f.id);
    ASSERT_NE(rule, nullptr) << f.id;
    if (i > 0 && !is_window(fs[i - 1])) {
      EXPECT_LE(static_cast<int>(f.severity), static_cast<int>(fs[i - 1].severity))
          << f.id << " after " << fs[i - 1].id;
    }
    if (!is_window(f) && bounds_gain(f)) {
      EXPECT_EQ(f.severity, severity_of_gain(expected_speedup(f))) << f.id;
    }
    // One finding per cause: a symptom stands beside its causes only for the half of its time
    // they do not explain (causes that bound no gain explain all of it).
    double explained = 0;
    for (const Finding& other : fs) {
      EXPECT_NE(other.id, rule->same_cause_as) << f.id << " beside " << other.id;
      const std::span<const std::string_view> causes = causes_of(rule->id);
      if (std::count(causes.begin(), causes.end(), other.id) == 0) continue;
      // A cause re-timed to no gain explains nothing (the step waits on something else).
      if (other.predicted_speedup > 0 && other.predicted_speedup < 1.005) continue;
      explained += bounds_gain(other) ? other.time_share : 1.0;
      const RuleInfo* other_rule = find_rule(other.id);
      if (other_rule->role == RuleRole::kSymptom) {
        EXPECT_LT(other.time_share, 0.5 * f.time_share) << f.id;
      }
    }
    // Under a window verdict nothing bounds a gain (all 1), so causes are not weighed by it.
    if (!is_window(fs.front())) {
      EXPECT_LT(explained, 0.5 * f.time_share + 1e-12) << f.id << " stands beside causes that explain it";
    }
    // The bounds of the models: a CPU precision step halves the matmul time at most (2x); Tensor
    // Cores shrink kernels at most by the largest Tensor/FP32 peak ratio (28x), so the share won
    // back is under 27/28.
    EXPECT_GE(f.max_speedup, 1.0) << f.id;
    // One number per cause: the prediction never exceeds the ceiling beside it.
    if (f.predicted_speedup > 0) {
      EXPECT_LE(f.predicted_speedup, f.max_speedup + 1e-12) << f.id;
    }
    if (f.id == "matmul-dominated" && f.title.find("on the CPU") != std::string::npos) {
      EXPECT_LE(f.max_speedup, 2.0) << f.title;
    }
    if (f.id == "no-tensor-cores" || f.id == "matmul-dominated") {
      EXPECT_LT(f.time_share, 27.0 / 28.0) << f.title;
    }
  }
}

Diagnosis diagnose_events(const std::vector<std::string>& events, const std::string& name) {
  const std::string path = test::temp_path(name + ".json");
  test::write_file(path, test::trace(events));
  Diagnosis d = diagnose(analyze_trace(load_trace(path), {}));
  std::remove(path.c_str());
  return d;
}

TEST(VerdictPolicy, EveryCorpusTrace) {
  FERRET_REQUIRE_CORPUS(corpus, "");
  std::size_t traces = 0;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.find(".json") == std::string::npos) continue;
    const TraceModel model = load_trace(entry.path().string());
    expect_policy(diagnose(analyze_trace(model, {})), name);
    ++traces;
  }
  EXPECT_GE(traces, 20u);  // MANIFEST.md lists 22 single trace files at the top level
}

TEST(VerdictPolicy, EveryGeneratedScenario) {
  for (const std::string& name : scenario_names()) {
    ScenarioOptions options;
    options.name = name;
    options.output = test::temp_path("policy-" + name + ".json");
    options.steps = 5;
    options.seed = 3;
    write_scenario(options);
    const TraceModel model = load_trace(options.output);
    expect_policy(diagnose(analyze_trace(model, {})), name);
    std::remove(options.output.c_str());
  }
}

// The CPU matmul case: with no GPU, matmul/conv self time at 90% of the window once bounded the
// gain at 1/(1-0.9) = 10x, as if the matmuls could vanish. bf16 on AVX-512 BF16 at most halves
// them: 1/(1-0.45) = 1.82x.
TEST(VerdictPolicy, CpuMatmulsAreBoundedByAPrecisionStepNotRemoval) {
  std::vector<std::string> events;
  for (int step = 0; step < 4; ++step) {
    const double t0 = step * 1000.0;
    events.push_back(test::span("user_annotation", "ProfilerStep#" + std::to_string(step), 1, 1, t0, 1000));
    events.push_back(test::span("cpu_op", "aten::addmm", 1, 1, t0 + 10, 900));
    events.push_back(test::span("cpu_op", "aten::relu", 1, 1, t0 + 920, 50));
  }
  const Diagnosis d = diagnose_events(events, "cpu-matmul");
  const auto it =
      std::find_if(d.findings.begin(), d.findings.end(), [](const Finding& f) { return f.id == "matmul-dominated"; });
  ASSERT_NE(it, d.findings.end());
  EXPECT_NEAR(it->time_share, 0.45, 1e-9);
  EXPECT_NEAR(it->max_speedup, 1.0 / 0.55, 1e-9);
  EXPECT_EQ(it->severity, Severity::kHigh);  // 1.82x >= 1.25x
  EXPECT_EQ(d.verdict.finding_id, "matmul-dominated");
  EXPECT_EQ(d.findings.front().id, "matmul-dominated");
  expect_policy(d, "cpu-matmul");
}

// "(minor findings below)" only when findings follow the headline.
TEST(VerdictPolicy, HeadlineMentionsMinorFindingsOnlyWhenSomeFollow) {
  std::vector<std::string> quiet, reads;
  for (int step = 0; step < 4; ++step) {
    const double t0 = step * 1000.0;
    for (std::vector<std::string>* events : {&quiet, &reads}) {
      events->push_back(test::span("user_annotation", "ProfilerStep#" + std::to_string(step), 1, 1, t0, 1000));
      events->push_back(test::span("cpu_op", "aten::relu", 1, 1, t0 + 10, 100));
    }
    // A CPU-only loop reading a tensor every step: host-sync at info (no GPU waits on it yet).
    reads.push_back(test::span("cpu_op", "aten::item", 1, 1, t0 + 200, 20));
    reads.push_back(test::span("cpu_op", "aten::_local_scalar_dense", 1, 1, t0 + 205, 10));
  }
  const Diagnosis none = diagnose_events(quiet, "quiet");
  // No rule fires; the largest cost is named all the same (top-cost), and is no minor finding.
  ASSERT_EQ(none.findings.size(), 1u);
  EXPECT_EQ(none.findings.front().id, "top-cost");
  EXPECT_FALSE(none.verdict.bottleneck_found);
  EXPECT_EQ(none.verdict.headline.find("minor findings"), std::string::npos) << none.verdict.headline;
  // 900 of each 1,000 us pass in no operator: that is the largest cost, the op named beside it.
  EXPECT_NE(none.verdict.headline.find("the largest cost is host time outside every operator: 90%"), std::string::npos)
      << none.verdict.headline;
  EXPECT_NE(none.verdict.headline.find("more than aten::relu"), std::string::npos) << none.verdict.headline;

  const Diagnosis minor = diagnose_events(reads, "reads");
  ASSERT_FALSE(minor.findings.empty());
  EXPECT_EQ(minor.findings.front().id, "host-sync");
  EXPECT_EQ(minor.findings.front().severity, Severity::kInfo);
  EXPECT_DOUBLE_EQ(minor.findings.front().max_speedup, 1.0);  // nothing waits on the reads on a CPU
  EXPECT_FALSE(minor.verdict.bottleneck_found);
  EXPECT_NE(minor.verdict.headline.find("(minor findings below)"), std::string::npos) << minor.verdict.headline;
}

}  // namespace verdict_policy_test
}  // namespace
}  // namespace ferret
