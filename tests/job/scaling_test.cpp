// Scaling: the ring model recovered from runs built by hand, and from generated runs whose
// transfer formula is planted (ferret gen scaling).
#include "job/scaling.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace scaling_test {

ScalingRun run_of(int n, double c, double beta, double alpha, std::int64_t compute_ns, bool hosts) {
  ScalingRun r;
  r.source = "ws-" + std::to_string(n);
  r.world_size = n;
  r.ranks = n;
  r.spans_hosts = hosts;
  r.transfer_ns = std::llround(c + beta * 2.0 * (n - 1) / n + alpha * 2.0 * (n - 1));
  r.step_ns = compute_ns + r.transfer_ns / 2;  // half of the transfer exposed
  return r;
}

TEST(Scaling, RingModelIsRecoveredAndProjected) {
  // beta 10 ms, alpha 20 us, c 100 us: transfer(16) = 0.1 + 18.75 + 0.6 = 19.45 ms.
  std::vector<ScalingRun> runs;
  for (int n : {16, 32, 64}) runs.push_back(run_of(n, 100e3, 10e6, 20e3, 40'000'000, true));
  runs.push_back(run_of(4, 0, 1e6, 1e3, 40'000'000, false));  // one host: another link, not fitted
  const ScalingAnalysis r = analyze_scaling(runs, {128});
  ASSERT_TRUE(r.fit.fitted) << r.fit.why_not;
  EXPECT_EQ(r.fit.runs_used, 3);
  EXPECT_NEAR(r.fit.beta_ns, 10e6, 1);
  EXPECT_NEAR(r.fit.alpha_ns, 20e3, 0.01);
  EXPECT_NEAR(r.fit.c_ns, 100e3, 1);
  ASSERT_EQ(r.projections.size(), 1u);
  // transfer(128) = 0.1 + 10 x 254/128 + 0.02 x 254 = 25.0444 ms (rounded to the ns).
  EXPECT_NEAR(static_cast<double>(r.projections[0].transfer_ns), 100e3 + 10e6 * 254.0 / 128 + 20e3 * 254, 1);
  // Step: the 64-rank step plus the extra transfer.
  const ScalingRun& largest = r.runs.back();
  EXPECT_EQ(largest.world_size, 64);
  EXPECT_EQ(r.projections[0].step_ns, largest.step_ns + (r.projections[0].transfer_ns - largest.transfer_ns));
  EXPECT_DOUBLE_EQ(r.runs.front().efficiency, 1.0);  // the smallest run is the base
  EXPECT_DOUBLE_EQ(r.projections[0].efficiency,
                   static_cast<double>(r.runs.front().step_ns) / static_cast<double>(r.projections[0].step_ns));
}

TEST(Scaling, TwoRunsFitWithoutAConstantAndOneRunDoesNotFit) {
  std::vector<ScalingRun> runs = {run_of(8, 0, 5e6, 10e3, 1'000'000, false), run_of(4, 0, 5e6, 10e3, 1'000'000, false)};
  const ScalingAnalysis two = analyze_scaling(runs);
  ASSERT_TRUE(two.fit.fitted);
  EXPECT_NEAR(two.fit.beta_ns, 5e6, 1);
  EXPECT_NEAR(two.fit.alpha_ns, 10e3, 0.01);
  EXPECT_EQ(two.projections.size(), 3u);  // 16, 32, 64
  EXPECT_EQ(two.projections[0].world_size, 16);
  const ScalingAnalysis one = analyze_scaling({runs[0]});
  EXPECT_FALSE(one.fit.fitted);
  EXPECT_FALSE(one.fit.why_not.empty());
  EXPECT_TRUE(one.projections.empty());
}

// ferret gen scaling plants transfer(n) = sum over 13 buckets of ceil(2(n-1)/n x bytes / 50 GB/s)
// + 8 us + 2(n-1) x 1.5 us across hosts: beta = 497,759,232 B / 50 GB/s = 9.955 ms, alpha = 13 x
// 1.5 us = 19.5 us, c = 13 x 8 us = 0.104 ms. Fitted on 16, 32 and 64 ranks, the 128-rank run
// (generated, not used by the fit) checks the projection.
TEST(ScalingCli, GeneratedRunsGiveThePlantedModelAndAHeldOutSize) {
  const std::string dir = test::temp_path("scaling-runs");
  std::filesystem::remove_all(dir);
  const test::CommandResult gen = test::run_ferret("gen scaling -o " + dir + " --world-sizes 16,32,64,128 --steps 3");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const nlohmann::json truth = nlohmann::json::parse(test::read_file(dir + "/scaling_truth.json"));
  const test::CommandResult r =
      test::run_ferret("scaling " + dir + "/ws-16 " + dir + "/ws-32 " + dir + "/ws-64 --project 128 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "ferret.scaling/1");
  ASSERT_EQ(doc["runs"].size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const nlohmann::json& t = truth["by_world_size"][i];
    EXPECT_EQ(doc["runs"][i]["world_size"], t["world_size"]);
    // Measured transfer per step: the shortest duration of each call, summed - the planted value.
    EXPECT_NEAR(doc["runs"][i]["transfer_us"].get<double>(), t["transfer_ns_per_step"].get<double>() / 1e3, 1.0);
  }
  ASSERT_TRUE(doc["fit"]["fitted"].get<bool>());
  EXPECT_NEAR(doc["fit"]["beta_us"].get<double>(), 497759232.0 / 50e9 * 1e6, 10);  // 9955 us, within 0.1%
  EXPECT_NEAR(doc["fit"]["alpha_us"].get<double>(), 19.5, 0.2);
  EXPECT_NEAR(doc["fit"]["c_us"].get<double>(), 104, 10);
  const nlohmann::json& held_out = truth["by_world_size"][3];
  ASSERT_EQ(held_out["world_size"], 128);
  const nlohmann::json& p = doc["projections"][0];
  EXPECT_NEAR(p["transfer_us"].get<double>(), held_out["transfer_ns_per_step"].get<double>() / 1e3, 5);
  // The projected step counts all extra transfer as exposed: at or above the real step, within 3%.
  const double real_step_us = held_out["mean_step_ns"].get<double>() / 1e3;
  EXPECT_GE(p["step_us"].get<double>(), real_step_us * 0.99);
  EXPECT_LE(p["step_us"].get<double>(), real_step_us * 1.03);
}

}  // namespace scaling_test
}  // namespace
}  // namespace ferret
