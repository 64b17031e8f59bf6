// Each scenario's ground truth is checked against quantities measured directly on the loaded
// model (event columns and relations), never through ferret's analyses.
#include "gen/scenarios.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "ingest/trace_loader.h"
#include "interval_checks.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace scenarios_test {

struct Generated {
  ScenarioResult result;
  nlohmann::json truth;
  TraceModel model;
};

Generated generate(const std::string& name, int steps = 5, std::uint64_t seed = 7) {
  ScenarioOptions options;
  options.name = name;
  options.steps = steps;
  options.seed = seed;
  options.output = test::temp_path(name + ".json");
  Generated g{write_scenario(options), {}, {}};
  g.truth = nlohmann::json::parse(g.result.ground_truth_json);
  // The file carries the same ground truth under its top-level key.
  const auto doc = nlohmann::json::parse(test::read_file(options.output));
  EXPECT_EQ(doc["ferret_ground_truth"], g.truth);
  g.model = load_trace(options.output);
  std::remove(options.output.c_str());
  return g;
}

using test::Interval;
using test::overlap;
using test::union_length;

std::vector<Interval> kernel_intervals(const TraceModel& m, bool nccl) {
  std::vector<Interval> v;
  for (EventIndex e = 0; e < m.size(); ++e) {
    if (m.kind[e] != EventKind::kKernel) continue;
    const bool is_nccl = m.name_of(e).rfind("nccl", 0) == 0;
    if (is_nccl == nccl) v.emplace_back(m.ts_ns[e], m.end_ns(e));
  }
  return v;
}

std::int64_t total_step_ns(const TraceModel& m) {
  std::int64_t total = 0;
  for (const Step& s : m.relations.steps) total += s.end_ns - s.start_ns;
  return total;
}

// Clean, complete, consistent: what every scenario must be before its bottleneck matters.
void expect_well_formed(const Generated& g, int steps) {
  const TraceModel& m = g.model;
  EXPECT_EQ(m.report.repair_count(), 0u);
  EXPECT_EQ(m.report.skip_count(), 0u);
  EXPECT_FALSE(m.report.truncated);
  ASSERT_EQ(m.relations.steps.size(), static_cast<std::size_t>(steps));
  EXPECT_FALSE(m.relations.dropped_step.has_value());
  EXPECT_EQ(m.relations.steps.front().number, g.truth["first_step"].get<std::int64_t>());
  EXPECT_EQ(m.relations.unmatched_gpu, 0u);
  EXPECT_EQ(m.relations.launches_without_gpu, 0u);
  EXPECT_EQ(m.info.generation, FormatGeneration::kKineto2);
  ASSERT_EQ(m.info.devices.size() >= 1, true);
  EXPECT_EQ(m.info.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m.info.devices[0].num_sms, 132);
  EXPECT_TRUE(m.info.base_time_ns.has_value());
  EXPECT_EQ(g.result.events, m.size());
  // Every GPU activity finishes inside the step that launched it.
  for (const Step& s : m.relations.steps) EXPECT_EQ(s.end_ns, s.cpu_end_ns) << "step " << s.number;
  std::uint64_t kernels = 0;
  for (EventIndex e = 0; e < m.size(); ++e) kernels += m.kind[e] == EventKind::kKernel;
  EXPECT_EQ(g.truth["kernels"].get<std::uint64_t>(), kernels);
  // Ground-truth GPU utilization = |union of kernels| / sum of step windows.
  std::vector<Interval> all = kernel_intervals(m, false), nccl = kernel_intervals(m, true);
  all.insert(all.end(), nccl.begin(), nccl.end());
  EXPECT_NEAR(g.truth["gpu_busy_share"].get<double>(),
              static_cast<double>(union_length(all)) / static_cast<double>(total_step_ns(m)), 1e-5);
}

TEST(ScenarioList, NamesTheFiveScenarios) {
  EXPECT_EQ(scenario_names(), (std::vector<std::string>{"input-bound", "launch-bound", "compute-bound",
                                                        "communication-heavy", "fragmented-memory"}));
}

TEST(Scenario, InputBoundWaitsFortyPercentInTheDataLoader) {
  const Generated g = generate("input-bound");
  expect_well_formed(g, 5);
  const TraceModel& m = g.model;
  std::int64_t loader_ns = 0;
  std::vector<Interval> loader;
  for (EventIndex e = 0; e < m.size(); ++e) {
    if (m.name_of(e).rfind("enumerate(DataLoader)#", 0) != 0) continue;
    EXPECT_EQ(m.name_of(e), "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    loader_ns += m.dur_ns[e];
    loader.emplace_back(m.ts_ns[e], m.end_ns(e));
  }
  EXPECT_EQ(loader.size(), 5u);
  const double share = static_cast<double>(loader_ns) / static_cast<double>(total_step_ns(m));
  EXPECT_DOUBLE_EQ(g.truth["dataloader_share"].get<double>(), 0.4);  // exact by construction
  EXPECT_NEAR(share, g.truth["dataloader_share"].get<double>(), 0.02);
  EXPECT_NEAR(share, 0.4, 1e-6);
  // The GPU idles while the loader works: no kernel or copy overlaps a DataLoader span.
  std::vector<Interval> gpu;
  for (EventIndex e = 0; e < m.size(); ++e)
    if (is_gpu_activity(m.kind[e])) gpu.emplace_back(m.ts_ns[e], m.end_ns(e));
  EXPECT_EQ(overlap(loader, gpu), 0);
  EXPECT_TRUE(g.truth["gpu_idle_during_dataloader"].get<bool>());
}

TEST(Scenario, LaunchBoundHasThousandsOfTinyKernels) {
  const Generated g = generate("launch-bound");
  expect_well_formed(g, 5);
  const TraceModel& m = g.model;
  for (const Step& s : m.relations.steps) {
    EXPECT_GT(s.kernels, 1000u);
    EXPECT_EQ(s.kernels, g.truth["kernels_per_step"].get<std::uint64_t>());
  }
  std::vector<std::int64_t> kernel_ns, launch_ns;
  for (EventIndex e = 0; e < m.size(); ++e) {
    if (m.kind[e] == EventKind::kKernel) kernel_ns.push_back(m.dur_ns[e]);
    if (m.kind[e] == EventKind::kCudaRuntime && m.name_of(e) == "cudaLaunchKernel") launch_ns.push_back(m.dur_ns[e]);
  }
  std::sort(kernel_ns.begin(), kernel_ns.end());
  std::sort(launch_ns.begin(), launch_ns.end());
  const std::int64_t median_kernel = kernel_ns[(kernel_ns.size() - 1) / 2];
  EXPECT_LT(median_kernel, 5000);
  EXPECT_EQ(median_kernel, g.truth["median_kernel_ns"].get<std::int64_t>());
  EXPECT_GE(kernel_ns.front(), 2000);
  EXPECT_LE(kernel_ns.back(), 4999);
  EXPECT_EQ(launch_ns[(launch_ns.size() - 1) / 2], g.truth["median_launch_ns"].get<std::int64_t>());
  EXPECT_GE(launch_ns.front(), 10000);
  EXPECT_LE(launch_ns.back(), 20000);
  // Mostly idle GPU: each 2-5 us kernel waits behind a 10-20 us launch.
  EXPECT_LT(g.truth["gpu_busy_share"].get<double>(), 0.3);
}

TEST(Scenario, ComputeBoundKeepsTheGpuBusyInSimtSgemm) {
  const Generated g = generate("compute-bound");
  expect_well_formed(g, 5);
  const TraceModel& m = g.model;
  // Busy share inside step windows, measured per step.
  std::int64_t busy = 0;
  for (const Step& s : m.relations.steps) {
    std::vector<Interval> in_step;
    for (const Interval& k : kernel_intervals(m, false)) {
      const std::int64_t lo = std::max(k.first, s.start_ns), hi = std::min(k.second, s.end_ns);
      if (hi > lo) in_step.emplace_back(lo, hi);
    }
    busy += union_length(in_step);
  }
  const double share = static_cast<double>(busy) / static_cast<double>(total_step_ns(m));
  EXPECT_GT(share, 0.9);
  EXPECT_NEAR(share, g.truth["gpu_busy_share"].get<double>(), 1e-5);
  std::int64_t kernel_ns = 0, sgemm_ns = 0;
  for (EventIndex e = 0; e < m.size(); ++e) {
    if (m.kind[e] != EventKind::kKernel) continue;
    const std::string_view name = m.name_of(e);
    kernel_ns += m.dur_ns[e];
    if (name.find("sgemm") != std::string_view::npos) sgemm_ns += m.dur_ns[e];
    // No Tensor Core kernel names (the reference tools' definitions's patterns).
    for (const char* tc : {"xmma", "gmma", "h884", "s884", "1688", "16816", "hmma", "tensorop"})
      EXPECT_EQ(name.find(tc), std::string_view::npos) << name;
  }
  EXPECT_NEAR(static_cast<double>(sgemm_ns) / static_cast<double>(kernel_ns),
              g.truth["sgemm_share_of_kernel_time"].get<double>(), 1e-5);
  EXPECT_GT(g.truth["sgemm_share_of_kernel_time"].get<double>(), 0.9);
}

TEST(Scenario, CommunicationHeavySpendsAThirdOfTheStepInExposedAllReduce) {
  const Generated g = generate("communication-heavy");
  expect_well_formed(g, 5);
  const TraceModel& m = g.model;
  EXPECT_EQ(m.info.distributed.world_size, 16);
  const std::vector<Interval> nccl = kernel_intervals(m, true), compute = kernel_intervals(m, false);
  ASSERT_EQ(nccl.size(), 15u);  // three buckets per step
  std::int64_t nccl_ns = 0;
  for (const auto& [s, e] : nccl) nccl_ns += e - s;
  const double share = static_cast<double>(nccl_ns) / static_cast<double>(total_step_ns(m));
  EXPECT_NEAR(share, g.truth["nccl_share"].get<double>(), 0.02);
  EXPECT_NEAR(share, 0.35, 0.03);
  const double overlapped = static_cast<double>(overlap(nccl, compute)) / static_cast<double>(nccl_ns);
  EXPECT_NEAR(overlapped, g.truth["comm_overlap_share"].get<double>(), 1e-5);
  EXPECT_LT(overlapped, 0.5);  // mostly exposed
  EXPECT_GT(overlapped, 0.0);  // the first bucket does overlap backward
  // record_param_comms ops and NCCL kernels carry the collective's args.
  std::int64_t op_elements = 0, kernel_rows = 0;
  for (const CollectiveArgs& c : m.collective_args) {
    EXPECT_EQ(m.strings.view(c.collective_name), "allreduce");
    EXPECT_EQ(c.group_size, 16);
    EXPECT_EQ(m.strings.view(c.dtype), "Float");
    if (m.kind[c.event] == EventKind::kCpuOp)
      op_elements += c.in_msg_nelems;
    else
      ++kernel_rows;
  }
  EXPECT_EQ(kernel_rows, 15);
  EXPECT_EQ(op_elements * 4, 5 * g.truth["allreduce_bytes_per_step"].get<std::int64_t>());
  // busbw = bytes * 2(n-1)/n / time, the nccl-tests convention.
  const double busbw = static_cast<double>(op_elements) * 4 * 2 * 15 / 16 / static_cast<double>(nccl_ns);
  EXPECT_NEAR(busbw, g.truth["busbw_gbps"].get<double>(), 0.01);
}

TEST(Scenario, FragmentedMemoryReservesFarMoreThanItAllocates) {
  const Generated g = generate("fragmented-memory");
  expect_well_formed(g, 5);
  const TraceModel& m = g.model;
  ASSERT_FALSE(m.memory_args.empty());
  EXPECT_EQ(m.memory_args.size(), g.truth["memory_events"].get<std::size_t>());
  const MemoryArgs* peak = &m.memory_args[0];
  for (const MemoryArgs& a : m.memory_args) {
    EXPECT_LE(a.total_allocated, a.total_reserved);
    EXPECT_LE(a.total_reserved, 85018279936);
    EXPECT_EQ(a.device_type, 1);
    if (a.total_reserved > peak->total_reserved) peak = &a;  // the first event at the maximum
  }
  const double fragmentation =
      static_cast<double>(peak->total_reserved - peak->total_allocated) / static_cast<double>(peak->total_reserved);
  EXPECT_GT(fragmentation, 0.4);
  EXPECT_NEAR(fragmentation, g.truth["fragmentation_at_peak_reserved"].get<double>(), 1e-5);
  EXPECT_EQ(peak->total_reserved, g.truth["peak_reserved_bytes"].get<std::int64_t>());
  // Reserved grows during the trace: the first profiled steps still see new, longer sequences.
  EXPECT_GT(peak->total_reserved, m.memory_args[0].total_reserved);
  EXPECT_GT(g.truth["fragmentation_at_peak_allocated"].get<double>(), 0.4);
  std::int64_t mallocs = 0;
  for (EventIndex e = 0; e < m.size(); ++e)
    mallocs += m.kind[e] == EventKind::kCudaRuntime && m.name_of(e) == "cudaMalloc";
  EXPECT_EQ(mallocs, g.truth["cuda_malloc_calls"].get<std::int64_t>());
}

TEST(Scenario, GroundTruthHoldsAcrossSeeds) {
  // Cheap: only the declared values, which the tests above tie to the trace contents.
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    for (const int steps : {1, 3, 8}) {
      ScenarioOptions options;
      options.steps = steps;
      options.seed = seed;
      options.output = test::temp_path("seeds.json");
      options.name = "fragmented-memory";
      auto truth = nlohmann::json::parse(write_scenario(options).ground_truth_json);
      EXPECT_GT(truth["fragmentation_at_peak_reserved"].get<double>(), 0.4) << "seed " << seed << " steps " << steps;
      EXPECT_GT(truth["fragmentation_at_peak_allocated"].get<double>(), 0.4) << "seed " << seed << " steps " << steps;
      options.name = "communication-heavy";
      truth = nlohmann::json::parse(write_scenario(options).ground_truth_json);
      EXPECT_NEAR(truth["nccl_share"].get<double>(), 0.35, 0.03) << "seed " << seed;
      EXPECT_LT(truth["comm_overlap_share"].get<double>(), 0.3) << "seed " << seed;
      options.name = "compute-bound";
      truth = nlohmann::json::parse(write_scenario(options).ground_truth_json);
      EXPECT_GT(truth["gpu_busy_share"].get<double>(), 0.9) << "seed " << seed;
      std::remove(options.output.c_str());
    }
  }
}

TEST(Scenario, SameSeedSameBytesOtherSeedOtherBytes) {
  for (const std::string& name : scenario_names()) {
    ScenarioOptions options;
    options.name = name;
    options.steps = 2;
    options.seed = 42;
    options.output = test::temp_path("det-a.json");
    write_scenario(options);
    options.output = test::temp_path("det-b.json");
    write_scenario(options);
    options.seed = 43;
    options.output = test::temp_path("det-c.json");
    write_scenario(options);
    const std::string a = test::read_file(test::temp_path("det-a.json"));
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, test::read_file(test::temp_path("det-b.json"))) << name;
    EXPECT_NE(a, test::read_file(test::temp_path("det-c.json"))) << name;
  }
  for (const char* f : {"det-a.json", "det-b.json", "det-c.json"}) std::remove(test::temp_path(f).c_str());
}

TEST(Scenario, GzipOutputLoadsLikePlain) {
  ScenarioOptions options;
  options.name = "launch-bound";
  options.steps = 2;
  options.output = test::temp_path("gz-scenario.json.gz");
  options.compression = OutputCompression::kGzip;
  const ScenarioResult gz = write_scenario(options);
  EXPECT_LT(gz.file_bytes, gz.json_bytes / 4);
  const TraceModel m = load_trace(options.output);
  EXPECT_EQ(m.info.compression, "gzip");
  EXPECT_EQ(m.size(), gz.events);
  EXPECT_EQ(m.relations.steps.size(), 2u);
  std::remove(options.output.c_str());
}

TEST(Scenario, RejectsUnknownNamesAndBadStepCounts) {
  ScenarioOptions options;
  options.output = test::temp_path("bad.json");
  options.name = "gpu-on-fire";
  EXPECT_THROW(write_scenario(options), std::invalid_argument);
  options.name = "input-bound";
  options.steps = 0;
  EXPECT_THROW(write_scenario(options), std::invalid_argument);
  std::remove(options.output.c_str());
}

TEST(GenCli, ScenarioAndInflateRunFromTheCommandLine) {
  const std::string scenario = test::temp_path("cli-input-bound.json");
  test::CommandResult r = test::run_ferret("gen scenario input-bound --steps 2 --seed 3 -o " + scenario);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ground truth"), std::string::npos);
  EXPECT_EQ(load_trace(scenario).relations.steps.size(), 2u);

  const std::string inflated = test::temp_path("cli-inflated.json.gz");
  r = test::run_ferret("gen inflate --from " + scenario + " --copies 3 -o " + inflated);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const TraceModel m = load_trace(inflated);
  EXPECT_EQ(m.info.compression, "gzip");
  EXPECT_EQ(m.relations.steps.size(), 6u);

  r = test::run_ferret("gen inflate --from " + scenario + " --size 3MiB --no-gzip -o " + inflated);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(test::read_file(inflated).size(), 3u << 20);

  EXPECT_EQ(test::run_ferret("gen scenario no-such-thing -o " + scenario).exit_code, 2);
  EXPECT_EQ(test::run_ferret("gen inflate --from " + scenario + " --size 12XB -o " + inflated).exit_code, 2);
  EXPECT_EQ(test::run_ferret("gen inflate --from " + scenario + " -o " + inflated).exit_code, 2);
  r = test::run_ferret("gen scenario --list");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("fragmented-memory"), std::string::npos);
  std::remove(scenario.c_str());
  std::remove(inflated.c_str());
}

}  // namespace scenarios_test
}  // namespace
}  // namespace ferret
