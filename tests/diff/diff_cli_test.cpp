// `ferret diff BASE NEW` through the built binary: exit codes of the CI gate, the three formats,
// unusable input, --steps, generated scenario pairs and the real corpus pair
// (../shared/corpus/diff-pair). Expected numbers are worked out by hand in the comments, read
// from the generator's ground truth, or computed by an independent Python script (quoted below).
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace diff_cli_test {

using nlohmann::json;
using test::run_ferret;
using test::unwrapped;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---- Hand-made traces (the same job as in trace_diff_test.cpp, written to files) ----------------

std::string span(const char* cat, const std::string& name, int pid, int tid, double ts, double dur,
                 const std::string& args = "") {
  char buf[768];
  std::snprintf(buf, sizeof buf, R"({"ph":"X","cat":"%s","name":"%s","pid":%d,"tid":%d,"ts":%.3f,"dur":%.3f%s%s%s})",
                cat, name.c_str(), pid, tid, ts, dur, args.empty() ? "" : ",\"args\":{", args.c_str(),
                args.empty() ? "" : "}");
  return buf;
}

// `steps` steps of `step_us`; per step aten::mm [0, 1000) us launching gemm_kernel
// [1000, 1000 + gemm_us) us (launch call [900, 1000)), plus one host-only op `extra` of
// `extra_us` at 7000 us. Each step's wall time is step_us (the kernel ends inside the step).
std::string job(int steps, double step_us, double gemm_us, const std::string& extra, double extra_us) {
  std::string out = R"({"traceEvents":[)";
  bool first = true;
  auto add = [&](const std::string& event) {
    if (!first) out += ',';
    out += event;
    first = false;
  };
  for (int i = 0; i < steps; ++i) {
    const double t0 = step_us * i;
    const std::string corr = std::to_string(100 + i);
    add(span("user_annotation", "ProfilerStep#" + std::to_string(i), 1, 1, t0, step_us));
    add(span("cpu_op", "aten::mm", 1, 1, t0, 1000, R"("Input Dims":[[64,128],[128,256]])"));
    add(span("cuda_runtime", "cudaLaunchKernel", 1, 1, t0 + 900, 100, "\"correlation\":" + corr));
    add(span("kernel", "gemm_kernel", 0, 7, t0 + 1000, gemm_us, "\"correlation\":" + corr + ",\"stream\":7"));
    add(span("cpu_op", extra, 1, 1, t0 + 7000, extra_us));
  }
  out += "]}";
  return out;
}

// BASE: 5 steps of 10 ms, gemm 4 ms, aten::copy_ 300 us. NEW: 5 steps of 12 ms, gemm 6 ms,
// aten::add_ 500 us (aten::copy_ gone). Step time +20% (12 / 10 - 1); the steps tie within each
// trace, so the U test is the normal approximation: z = 2.88, p = erfc(2.88 / sqrt 2) = 0.00398
// (worked out in trace_diff_test.cpp), significant at 0.05.
struct HandPair {
  std::string base = test::temp_path("diff_base_trace.json");
  std::string next = test::temp_path("diff_new_trace.json");
  HandPair() {
    test::write_file(base, job(5, 10000, 4000, "aten::copy_", 300));
    test::write_file(next, job(5, 12000, 6000, "aten::add_", 500));
  }
  ~HandPair() {
    std::remove(base.c_str());
    std::remove(next.c_str());
  }
  std::string args() const { return base + " " + next; }
};

TEST(DiffCli, HelpListsTheOptions) {
  const auto r = run_ferret("diff --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* option : {"--fail-if-slower", "--json", "--md", "--top", "--steps", "--device"})
    EXPECT_TRUE(contains(r.out, option)) << option << "\n" << r.out;
}

TEST(DiffCli, GateFailsOnASignificantSlowdownBeyondTheAllowance) {
  const HandPair pair;
  const auto r = run_ferret("diff " + pair.args() + " --fail-if-slower 5");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "significantly slower, +20.0%")) << r.out;
  EXPECT_TRUE(contains(r.out, "FAILED: step time is significantly slower by 20.0%")) << r.out;
  EXPECT_TRUE(contains(r.out, "beyond the 5% allowed")) << r.out;
}

TEST(DiffCli, GatePassesWithinTheAllowanceAndWithoutAGate) {
  const HandPair pair;
  const auto within = run_ferret("diff " + pair.args() + " --fail-if-slower 25");
  EXPECT_EQ(within.exit_code, 0) << within.out << within.err;
  // Every step differs by 2 ms: the interval is [+20%, +20%], within 25%.
  EXPECT_TRUE(
      contains(unwrapped(within.out),
               "passed: the change +20.0% (95% CI +20.0% to +20.0%) rules out a slowdown beyond the 25% allowed"))
      << within.out;
  const auto no_gate = run_ferret("diff " + pair.args());
  EXPECT_EQ(no_gate.exit_code, 0) << no_gate.err;
  EXPECT_FALSE(contains(no_gate.out, "--fail-if-slower")) << no_gate.out;
}

TEST(DiffCli, IdenticalTracesPassTheGate) {
  const HandPair pair;
  const auto r = run_ferret("diff " + pair.base + " " + pair.base + " --fail-if-slower 1");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "no significant change")) << r.out;
  // Identical steps: every difference is 0, so the interval is [0, 0], within 1%.
  EXPECT_TRUE(contains(unwrapped(r.out), "passed: the change +0.0% (95% CI +0.0% to +0.0%) rules out")) << r.out;
}

TEST(DiffCli, JsonDocument) {
  const HandPair pair;
  const auto r = run_ferret("diff " + pair.args() + " --json --fail-if-slower 5");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "ferret.diff/2");
  EXPECT_EQ(j["base"]["source"], pair.base);
  EXPECT_EQ(j["base"]["steps"], 5);
  EXPECT_EQ(j["step_time"]["verdict"], "slower");
  EXPECT_DOUBLE_EQ(j["step_time"]["change"]["relative_pct"].get<double>(), 20.0);
  EXPECT_EQ(j["gate"]["outcome"], "fail");
  EXPECT_NEAR(j["step_time"]["test"]["p_value"].get<double>(), 0.00398, 5e-6);
  EXPECT_EQ(j["gate"]["failed"], true);
  EXPECT_DOUBLE_EQ(j["gate"]["threshold_pct"].get<double>(), 5.0);
  EXPECT_EQ(j["exit_code"], 1);
  ASSERT_EQ(j["operators"]["added"].size(), 1u);
  EXPECT_EQ(j["operators"]["added"][0]["name"], "aten::add_");
  ASSERT_EQ(j["operators"]["removed"].size(), 1u);
  EXPECT_EQ(j["operators"]["removed"][0]["name"], "aten::copy_");
  ASSERT_EQ(j["kernels"]["slower"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["kernels"]["slower"][0]["delta_us"].get<double>(), 2000.0);  // 6 ms - 4 ms
}

TEST(DiffCli, MarkdownEscapesFileNamesAndOperatorNames) {
  const HandPair pair;
  const auto r = run_ferret("diff " + pair.args() + " --md");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "diff\\_base\\_trace.json")) << r.out;
  EXPECT_FALSE(contains(r.out, "diff_base_trace")) << r.out;
  EXPECT_TRUE(contains(r.out, "aten::add\\_")) << r.out;
  EXPECT_TRUE(contains(r.out, "| category (mean per step) |")) << r.out;
}

TEST(DiffCli, StepsSelectsTheSameStepsInBoth) {
  const HandPair pair;
  const auto r = run_ferret("diff " + pair.args() + " --steps 1-3");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "3 steps (ProfilerStep#1..#3), mean 10.000 ms")) << r.out;
  EXPECT_TRUE(contains(r.out, "3 steps (ProfilerStep#1..#3), mean 12.000 ms")) << r.out;
  EXPECT_EQ(run_ferret("diff " + pair.args() + " --steps x-y").exit_code, 2);
}

TEST(DiffCli, UnusableInputExitsTwo) {
  const HandPair pair;
  const auto missing = run_ferret("diff " + pair.base + " /nonexistent/new.json");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(contains(missing.err, "NEW")) << missing.err;
  EXPECT_TRUE(missing.out.empty()) << missing.out;
  const std::string metadata_only = test::temp_path("diff_metadata_only.json");
  test::write_file(metadata_only,
                   R"({"traceEvents":[{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"python"}}]})");
  const auto empty = run_ferret("diff " + metadata_only + " " + pair.next + " --fail-if-slower 5");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_TRUE(contains(empty.err, "BASE")) << empty.err;
  EXPECT_TRUE(contains(empty.err, "nothing to analyse")) << empty.err;
  std::remove(metadata_only.c_str());
  EXPECT_EQ(run_ferret("diff " + pair.args() + " --json --md").exit_code, 2);
  EXPECT_EQ(run_ferret("diff - -").exit_code, 2);
  EXPECT_EQ(run_ferret("diff " + pair.base).exit_code, 2);  // NEW missing
}

// ---- Generated scenarios ------------------------------------------------------------------------

struct Generated {
  std::string path;
  json ground_truth;
  Generated(const std::string& scenario, int seed, const std::string& name) : path(test::temp_path(name)) {
    const auto r = run_ferret("gen scenario " + scenario + " --steps 12 --seed " + std::to_string(seed) + " -o " +
                              path + " --no-gzip");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ground_truth = json::parse(test::read_file(path))["ferret_ground_truth"];
  }
  ~Generated() { std::remove(path.c_str()); }
};

TEST(DiffCli, SameScenarioAndSeedTwiceIsNoChange) {
  const Generated a("compute-bound", 3, "diff_gen_a.json"), b("compute-bound", 3, "diff_gen_b.json");
  ASSERT_EQ(test::read_file(a.path), test::read_file(b.path));  // the generator is deterministic
  // The same 12 steps on both sides, but they vary (the generator's noise): the shift is 0, yet its
  // interval (the differences between steps of the same trace) reaches beyond 1%, so a 1% gate
  // cannot rule out a 1% slowdown: inconclusive, exit 3, with the steps that would settle it. A 5%
  // gate passes.
  const auto r = run_ferret("diff " + a.path + " " + b.path + " --json --fail-if-slower 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["gate"]["outcome"], "inconclusive");
  EXPECT_GT(j["step_time"]["change"]["ci"]["high_pct"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["step_time"]["change"]["ci"]["low_pct"].get<double>(),
                   -j["step_time"]["change"]["ci"]["high_pct"].get<double>());  // a against a: symmetric
  EXPECT_GT(j["gate"]["steps_needed"].get<double>(), 12.0);
  EXPECT_EQ(run_ferret("diff " + a.path + " " + b.path + " --fail-if-slower 5").exit_code, 0);
  EXPECT_EQ(j["step_time"]["verdict"], "no-significant-change");
  EXPECT_DOUBLE_EQ(j["step_time"]["change"]["relative_pct"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["step_time"]["test"]["p_value"].get<double>(), 1.0);  // U = n^2 / 2 exactly
  for (const char* list : {"added", "removed", "slower", "faster"}) {
    EXPECT_EQ(j["operators"]["counts"][list], 0) << list;
    EXPECT_EQ(j["kernels"]["counts"][list], 0) << list;
  }
  EXPECT_TRUE(j["findings"]["appeared"].empty());
  EXPECT_TRUE(j["findings"]["resolved"].empty());
}

TEST(DiffCli, ComputeBoundToLaunchBoundAndBack) {
  const Generated compute("compute-bound", 1, "diff_gen_compute.json"),
      launch("launch-bound", 1, "diff_gen_launch.json");
  // Mean step times from the generator's ground truth (step_ns, docs/GEN.md), in us.
  const double compute_us = compute.ground_truth["step_ns"].get<double>() / 1000;
  const double launch_us = launch.ground_truth["step_ns"].get<double>() / 1000;
  ASSERT_GT(compute_us, 2 * launch_us);  // the steps of the two scenarios do not overlap

  // launch-bound -> compute-bound: every NEW step is longer than every BASE step, no ties, 12 and
  // 12 samples: exact U test, p = 2 / C(24, 12) = 7.396e-07 (Python: 2 / math.comb(24, 12)).
  const auto slower = run_ferret("diff " + launch.path + " " + compute.path + " --json --fail-if-slower 1");
  EXPECT_EQ(slower.exit_code, 1) << slower.err;
  const json s = json::parse(slower.out);
  EXPECT_NEAR(s["base"]["mean_step_us"].get<double>(), launch_us, 0.002);
  EXPECT_NEAR(s["new"]["mean_step_us"].get<double>(), compute_us, 0.002);
  EXPECT_EQ(s["step_time"]["verdict"], "slower");
  EXPECT_EQ(s["step_time"]["test"]["method"], "exact");
  EXPECT_NEAR(s["step_time"]["test"]["p_value"].get<double>(), 7.396023e-07, 1e-12);
  EXPECT_EQ(s["gate"]["failed"], true);
  // The ground truth names the dominant kernel of compute-bound: it is new in NEW.
  bool dominant_added = false;
  for (const json& k : s["kernels"]["added"]) dominant_added |= k["name"] == compute.ground_truth["dominant_kernel"];
  EXPECT_TRUE(dominant_added) << s["kernels"]["added"].dump();

  // compute-bound -> launch-bound: faster, the gate passes; launch-bound's finding appears.
  const auto faster = run_ferret("diff " + compute.path + " " + launch.path + " --json --fail-if-slower 1");
  EXPECT_EQ(faster.exit_code, 0) << faster.err;
  const json f = json::parse(faster.out);
  EXPECT_EQ(f["step_time"]["verdict"], "faster");
  bool launch_bound_appeared = false;
  for (const json& x : f["findings"]["appeared"]) launch_bound_appeared |= x["id"] == "launch-bound";
  EXPECT_TRUE(launch_bound_appeared) << f["findings"].dump();
}

// ---- The real pair: ../shared/corpus/diff-pair ---------------------------------------------------
//
// Expected values from an independent Python script (system python3, json + gzip only), which
// rebuilds the analysed windows from the documented rules (docs/ARCHITECTURE.md, relations):
// steps are the ProfilerStep#N spans, each extended to the end of the GPU work launched by the
// cuda_runtime calls inside it (matched by args.correlation), starting no earlier than the
// previous step's end; a last step with < 80% of the previous step's kernels is dropped; the
// operators are the cpu_op events starting in [first step start, last step end):
//
//   steps, prev_end = [], None
//   for s in sorted(ProfilerStep spans, key=ts):
//       start, end, kernels = s.ts, s.ts + s.dur, 0
//       if prev_end is not None: start = max(start, prev_end)
//       for r in cuda_runtime events with s.ts <= r.ts < s.ts + s.dur:
//           for g in GPU events with g.correlation == r.correlation:
//               end = max(end, g.ts + g.dur); kernels += g.cat == "kernel"
//       steps.append((s.name, start, end, kernels)); prev_end = end
//   if len(steps) >= 2 and steps[-1].kernels < 0.8 * steps[-2].kernels: steps.pop()
//
// Output (us since the epoch):
//   base: ProfilerStep#1009 [1661938466265087, 1661938466422495) 1 kernel,
//         ProfilerStep#1010 [1661938466422495, 1661938466539623) 1 kernel
//         cpu_ops in the window: aten::empty 2 calls 2 us, aten::as_strided 2 calls 0 us
//   test: ProfilerStep#1009 [1661938466265087, 1661938466422495) 1 kernel; #1010 launched 0
//         kernels (test.json.gz lacks the kernel of correlation 1972583) and is dropped
//         cpu_ops in the window: aten::empty 2 calls 2 us, All2All_Pooled_Req 1 call 311 us,
//         aten::as_strided 1 call 0 us
//   cpu_op names added in the whole file: AddmmBackward0, All2All_Pooled_Req, CatBackward0;
//   removed: none. In the analysed windows: added All2All_Pooled_Req only (CatBackward0 at
//   ...466464402 and AddmmBackward0 at ...466464757 start after NEW's window ends at
//   ...466422495, in the dropped step); removed: none.
// Per step: aten::empty 2 us / 2 steps = 1 us in BASE, 2 us / 1 step = 2 us in NEW (slower);
// All2All_Pooled_Req 311 us / 1 step (host self: it has no child spans).

TEST(DiffCorpus, DiffPairOpsAddedAndRemoved) {
  FERRET_REQUIRE_CORPUS(base, "diff-pair/base.json.gz");
  FERRET_REQUIRE_CORPUS(next, "diff-pair/test.json.gz");
  const auto r = run_ferret("diff " + base + " " + next + " --json --fail-if-slower 5");
  // 2 and 1 steps: too few to test. The change, +14.7% (the shift: the differences 157408 - 157408 = 0
  // and 157408 - 117128 = 40280 us, median 20140 us, over BASE's median 137268 us), is beyond 5% but
  // cannot be confirmed: inconclusive, exit 3 (it passed before).
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["base"]["steps"], 2);
  EXPECT_EQ(j["base"]["first_step"], 1009);
  EXPECT_EQ(j["base"]["last_step"], 1010);
  EXPECT_EQ(j["new"]["steps"], 1);
  EXPECT_EQ(j["step_time"]["verdict"], "too-few-samples");
  EXPECT_TRUE(j["step_time"]["test"].is_null());
  EXPECT_EQ(j["gate"]["failed"], false);
  EXPECT_EQ(j["gate"]["outcome"], "inconclusive");
  EXPECT_NEAR(j["step_time"]["change"]["relative_pct"].get<double>(), 100.0 * 20140 / 137268, 1e-3);
  EXPECT_TRUE(contains(j["gate"]["reason"].get<std::string>(), "too few to confirm")) << j["gate"].dump();
  // Step wall times (us) from the windows above: 422495 - 265087 = 157408, 539623 - 422495 = 117128.
  EXPECT_EQ(j["base"]["step_us"], json::parse("[157408.0, 117128.0]"));
  EXPECT_EQ(j["new"]["step_us"], json::parse("[157408.0]"));

  // Counted: All2All_Pooled_Req added (311 us per step), aten::empty slower (1 -> 2 us per step),
  // aten::as_strided unchanged (0 us in both). Listed: none, since both changes are under the
  // floor of 1% of BASE's median step (1372.68 us), and with 2 and 1 steps they are untested.
  const json& ops = j["operators"];
  EXPECT_EQ(ops["counts"]["added"], 1);
  EXPECT_EQ(ops["counts"]["slower"], 1);
  EXPECT_EQ(ops["counts"]["removed"], 0);
  EXPECT_EQ(ops["counts"]["unchanged"], 1);
  EXPECT_DOUBLE_EQ(ops["floor_us"].get<double>(), 1372.68);
  EXPECT_EQ(ops["tested"], false);
  EXPECT_EQ(ops["listed"], 0);
  EXPECT_EQ(ops["not_listed"]["below_floor"], 2);
  EXPECT_TRUE(ops["added"].empty()) << ops.dump();
  EXPECT_TRUE(ops["slower"].empty()) << ops.dump();
  const auto text = run_ferret("diff " + base + " " + next);
  EXPECT_TRUE(contains(unwrapped(text.out),
                       "no change listed, and 2 smaller or not-significant changes (below the floor "
                       "of 1.373 ms per step: 2)"))
      << text.out;
  // The same three kernel names run in both windows.
  EXPECT_EQ(j["kernels"]["counts"]["added"], 0);
  EXPECT_EQ(j["kernels"]["counts"]["removed"], 0);
  // The reader is told why the windows differ.
  bool dropped_note = false;
  for (const json& n : j["new"]["notes"]) dropped_note |= contains(n.get<std::string>(), "ProfilerStep#1010");
  EXPECT_TRUE(dropped_note) << j["new"]["notes"].dump();
  EXPECT_FALSE(j["warnings"].empty());
}

TEST(DiffCorpus, DiffPairSameStepInBoth) {
  FERRET_REQUIRE_CORPUS(base, "diff-pair/base.json.gz");
  FERRET_REQUIRE_CORPUS(next, "diff-pair/test.json.gz");
  // --steps 1009: both windows are [...466265087, ...466422495) (the script above); the cpu_ops
  // starting in it: BASE aten::empty x2, aten::as_strided x1; NEW the same plus
  // All2All_Pooled_Req. So one op added, two unchanged, none removed.
  const auto r = run_ferret("diff " + base + " " + next + " --json --steps 1009");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["base"]["steps"], 1);
  EXPECT_EQ(j["new"]["steps"], 1);
  // All2All_Pooled_Req (311 us) is under the floor (1% of 157408 us): counted, not listed.
  const json& ops = j["operators"];
  EXPECT_EQ(ops["counts"]["added"], 1);
  EXPECT_TRUE(ops["added"].empty()) << ops.dump();
  EXPECT_EQ(ops["not_listed"]["below_floor"], 1);
  EXPECT_EQ(ops["counts"]["removed"], 0);
  EXPECT_EQ(ops["counts"]["slower"], 0);
  EXPECT_EQ(ops["counts"]["faster"], 0);
  EXPECT_EQ(ops["counts"]["unchanged"], 2);
  EXPECT_DOUBLE_EQ(j["step_time"]["change"]["relative_pct"].get<double>(), 0.0);  // 157408 us in both
}

}  // namespace diff_cli_test
}  // namespace
}  // namespace ferret
