// The what-if against real before/after pairs recorded on CPU with PyTorch 1.13
// (tests/data/whatif/record_whatif_pairs.py; docs/ACCURACY.md): the step time predicted from the
// BEFORE trace with the matching change is within 15% of the AFTER trace's median step.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/causal/whatif.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace whatif_pairs_test {

// The accuracy the what-if is held to (issue 15: "hold it under 15% in tests").
constexpr double kMaxPredictionError = 0.15;

std::string pair_path(const std::string& name) { return std::string(FERRET_SOURCE_DIR) + "/tests/data/whatif/" + name; }

struct Prediction {
  std::int64_t before_ns = 0;
  std::int64_t predicted_ns = 0;
  std::int64_t after_ns = 0;
  std::uint64_t touched = 0;
  double error() const {
    return std::abs(static_cast<double>(predicted_ns - after_ns)) / static_cast<double>(after_ns);
  }
};

Prediction predict_pair(const std::string& pair, const RetimeChanges& changes) {
  const TraceModel before = load_trace(pair_path(pair + "-before.json.gz"));
  const TraceModel after = load_trace(pair_path(pair + "-after.json.gz"));
  const WhatIfResult p = analyze_whatif(before, make_analysis_context(before, {}), changes);
  const WhatIfResult a = analyze_whatif(after, make_analysis_context(after, {}), {});
  Prediction out;
  out.before_ns = p.baseline_step_ns;
  out.predicted_ns = p.predicted_step_ns;
  out.after_ns = a.baseline_step_ns;
  out.touched = p.touched.dataloader_spans;
  for (std::uint64_t n : p.touched.speedup_events) out.touched += n;
  return out;
}

// The speedup the recording measured for the op alone (not read from the AFTER trace).
double isolated_speedup(const std::string& pair) {
  const nlohmann::json pairs = nlohmann::json::parse(test::read_file(pair_path("pairs.json")));
  return pairs.at(pair).at("isolated_speedup").get<double>();
}

// The prediction for `pair` with `changes` touches events, the fix matters (the AFTER step is well
// below the BEFORE one, so the check is not vacuous), and the prediction is within the bound.
void expect_accurate(const std::string& pair, const RetimeChanges& changes) {
  const Prediction p = predict_pair(pair, changes);
  EXPECT_GT(p.touched, 0u);
  EXPECT_LT(static_cast<double>(p.after_ns), static_cast<double>(p.before_ns) * 0.8);
  EXPECT_LT(p.error(), kMaxPredictionError)
      << pair << ": before " << p.before_ns << " predicted " << p.predicted_ns << " after " << p.after_ns;
}

TEST(WhatIfPairs, DataLoaderInTheMainProcessToWorkers) {
  RetimeChanges c;
  parse_whatif_removal("dataloader", c);
  expect_accurate("dataloader", c);
}

TEST(WhatIfPairs, Float64ExpToFloat32) {
  RetimeChanges c;
  c.speedups.emplace_back().pattern = "aten::exp";
  c.speedups.back().factor = isolated_speedup("exp-dtype");
  expect_accurate("exp-dtype", c);
}

TEST(WhatIfPairs, Float64ConvolutionToFloat32) {
  RetimeChanges c;
  c.speedups.emplace_back().pattern = "aten::conv2d";
  c.speedups.back().factor = isolated_speedup("conv-dtype");
  expect_accurate("conv-dtype", c);
}

}  // namespace whatif_pairs_test
}  // namespace
}  // namespace ferret
