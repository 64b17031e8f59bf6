// The what-if on generated traces of random launch and queue patterns: removing nothing re-times
// each step as recorded (within 1%), no removal predicts a step below the device's own work or
// above the step as it was, and a faster kernel never makes a step slower.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/analysis_options.h"
#include "analysis/causal/whatif.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace whatif_property_test {

using test::span;

struct Generated {
  std::string json;
  std::vector<double> step_us;  // as recorded: each step's span (its last sync drains the device)
  double device_work_us = 0;    // busy time of the device over all steps (streams may overlap)
};

// Steps of host work on pid 1 tid 1: an optional DataLoader wait, then operators that each launch
// a kernel on one of two streams (random host gaps, kernel lengths from 5 us to 3 ms, so that some
// steps keep a deep queue and others starve the device), an optional mid-step stream sync, and a
// final device sync that returns once both streams drain. Kernels start at the later of their
// launch plus a latency and their stream's previous end, as a device runs them.
Generated generate(std::uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  Generated g;
  std::vector<std::string> ev;
  double t = 0;
  double stream_end[2] = {0, 0};
  std::vector<std::pair<double, double>> busy;
  int corr = 1;
  const int steps = 3 + static_cast<int>(rng() % 4);
  const bool long_kernels = chance(0.5);
  // As many launches each step: a last step with fewer than 80% of the previous one's kernels is
  // left out as incomplete.
  const int ops = 5 + static_cast<int>(rng() % 40);
  for (int s = 0; s < steps; ++s) {
    const double step_start = t;
    std::vector<std::string> step_events;
    t += uniform(1, 20);
    if (chance(0.4)) {
      const double wait = uniform(50, 3000);
      step_events.push_back(
          span("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1, 1, t, wait));
      t += wait + uniform(1, 10);
    }
    for (int i = 0; i < ops; ++i) {
      const double op_start = t;
      const double before_launch = uniform(2, 30);
      const double launch_us = uniform(3, 8);
      const int stream = chance(0.8) ? 0 : 1;
      const double launch_at = op_start + before_launch;
      const double kernel_us = long_kernels ? uniform(50, 3000) : uniform(5, 200);
      const double kernel_start = std::max(launch_at + launch_us + uniform(2, 6), stream_end[stream]);
      stream_end[stream] = kernel_start + kernel_us;
      busy.push_back({kernel_start, stream_end[stream]});
      const double op_end = launch_at + launch_us + uniform(2, 30);
      step_events.push_back(span("cpu_op", "aten::op" + std::to_string(i % 7), 1, 1, op_start, op_end - op_start));
      step_events.push_back(span("cuda_runtime", "cudaLaunchKernel", 1, 1, launch_at, launch_us, test::corr(corr)));
      step_events.push_back(
          span("kernel", "kernel_" + std::to_string(i % 5), 0, 7 + stream, kernel_start, kernel_us, test::corr(corr)));
      ++corr;
      t = op_end + (chance(0.2) ? uniform(100, 2000) : uniform(1, 20));
      if (chance(0.05)) {  // a stream sync on stream 0 mid-step
        const double end = std::max(t + 3, stream_end[0] + 3);
        step_events.push_back(span("cuda_runtime", "cudaStreamSynchronize", 1, 1, t, end - t));
        t = end + uniform(1, 10);
      }
    }
    const double drained = std::max({t + 3, stream_end[0] + 3, stream_end[1] + 3});
    step_events.push_back(span("cuda_runtime", "cudaDeviceSynchronize", 1, 1, t, drained - t));
    t = drained + uniform(1, 10);
    ev.push_back(span("user_annotation", "ProfilerStep#" + std::to_string(s + 1), 1, 1, step_start, t - step_start));
    ev.insert(ev.end(), step_events.begin(), step_events.end());
    g.step_us.push_back(t - step_start);
    t += 0.5;
  }
  std::sort(busy.begin(), busy.end());
  double covered_to = -1;
  for (const auto& [a, b] : busy) {
    const double from = std::max(a, covered_to);
    if (b > from) g.device_work_us += b - from;
    covered_to = std::max(covered_to, b);
  }
  g.json = test::trace(ev);
  return g;
}

TEST(WhatIfProperty, RandomLaunchAndQueuePatterns) {
  constexpr int kTraces = test::kUnderSanitizer ? 40 : 200;
  for (std::uint32_t seed = 1; seed <= kTraces; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    const Generated g = generate(seed);
    const TraceModel m = load_trace_text(g.json);
    const AnalysisContext ctx = make_analysis_context(m, {});
    ASSERT_EQ(ctx.steps.size(), g.step_us.size());

    const WhatIfResult none = analyze_whatif(m, ctx, RetimeChanges{});
    ASSERT_EQ(none.steps.size(), g.step_us.size());
    for (std::size_t s = 0; s < none.steps.size(); ++s) {
      EXPECT_EQ(none.steps[s].predicted_ns, none.steps[s].baseline_ns);
      EXPECT_NEAR(static_cast<double>(none.steps[s].baseline_ns), g.step_us[s] * 1e3, 0.01 * g.step_us[s] * 1e3)
          << "step " << s;
    }

    const double steps = static_cast<double>(g.step_us.size());
    std::vector<std::int64_t> launch_free, overhead_free;
    for (const WhatIfRemoval& removal : whatif_removal_table()) {
      RetimeChanges c;
      c.*removal.flag = true;
      const WhatIfResult w = analyze_whatif(m, ctx, c);
      // The stated bound is the device's own work per step, and it is what the generator made.
      EXPECT_NEAR(static_cast<double>(w.device_floor_ns), g.device_work_us * 1e3 / steps, 1e3) << removal.name;
      // A step shorter than the bound as recorded (the device's work is a mean over the steps) keeps
      // its time; every other step stays at or above the bound.
      for (const WhatIfStep& s : w.steps) {
        EXPECT_LE(s.predicted_ns, s.baseline_ns) << removal.name;
        EXPECT_GE(s.predicted_ns, std::min(s.baseline_ns, w.device_floor_ns)) << removal.name;
        if (removal.name == "launch-overhead") launch_free.push_back(s.predicted_ns);
        if (removal.name == "host-overhead") overhead_free.push_back(s.predicted_ns);
      }
    }
    // Removing all the host's overhead removes its launch calls' time and more: no step is longer
    // than with the launch calls alone removed (1 us: rounding of the re-timed clocks).
    ASSERT_EQ(launch_free.size(), overhead_free.size());
    for (std::size_t s = 0; s < launch_free.size(); ++s) EXPECT_LE(overhead_free[s], launch_free[s] + 1'000) << s;

    // Every kernel twice as fast: no step gets slower, and none beats half the device's work.
    RetimeChanges faster;
    RetimeChanges::Speedup& k = faster.speedups.emplace_back();
    k.pattern = "kernel_";
    k.factor = 2;
    const WhatIfResult w = analyze_whatif(m, ctx, faster);
    for (const WhatIfStep& s : w.steps) EXPECT_LE(s.predicted_ns, s.baseline_ns + 1'000);
    EXPECT_GE(w.predicted_mean_ns, 0.5 * g.device_work_us * 1e3 / steps - 1e3);
  }
}

}  // namespace whatif_property_test
}  // namespace
}  // namespace ferret
