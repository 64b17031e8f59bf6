// A re-timing from a saved sweep order (StepGraphOrder, as the diagnosis's what-ifs use it) equals
// one that collects and sorts the nodes itself, for every removal, on the example traces and the
// whatif pairs' BEFORE traces.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/causal/step_graph.h"
#include "analysis/causal/whatif.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace step_graph_order_test {

namespace fs = std::filesystem;

TEST(StepGraphOrder, SavedOrderRetimesLikeAFreshSort) {
  std::vector<std::string> paths;
  for (const char* dir : {"/examples/traces", "/tests/data/whatif"})
    for (const auto& e : fs::recursive_directory_iterator(std::string(FERRET_SOURCE_DIR) + dir))
      if (e.is_regular_file() && e.path().string().find(".json") != std::string::npos)
        paths.push_back(e.path().string());
  ASSERT_GE(paths.size(), 5u);
  for (const std::string& path : paths) {
    const TraceModel model = load_trace(path);
    const AnalysisContext ctx = make_analysis_context(model, {});
    StepGraphOrder order;
    const RetimeResult baseline = retime_steps(model, ctx, {}, nullptr, &order);
    if (baseline.steps.empty()) continue;
    ASSERT_TRUE(order.built) << path;
    std::vector<std::int64_t> base;
    for (const RetimedStep& s : baseline.steps) base.push_back(s.duration_ns());
    for (int change = 0; change < 4; ++change) {
      RetimeChanges c;
      c.remove_dataloader = change == 0;
      c.remove_host_sync = change == 1;
      c.remove_launch_overhead = change == 2;
      c.remove_exposed_communication = change == 3;
      const WhatIfResult fresh = analyze_whatif(model, ctx, c);
      const WhatIfResult saved = analyze_whatif(model, ctx, c, base, &order);
      ASSERT_EQ(fresh.steps.size(), saved.steps.size()) << path;
      for (std::size_t s = 0; s < fresh.steps.size(); ++s) {
        EXPECT_EQ(fresh.steps[s].baseline_ns, saved.steps[s].baseline_ns) << path << " step " << s;
        EXPECT_EQ(fresh.steps[s].predicted_ns, saved.steps[s].predicted_ns) << path << " change " << change;
      }
    }
  }
}

}  // namespace step_graph_order_test
}  // namespace
}  // namespace ferret
