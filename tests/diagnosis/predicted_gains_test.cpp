// One number per cause: a finding's gain is the what-if's re-timing of its fix, the Amdahl bound a
// ceiling beside it. Hand-made A100 traces where the two differ by construction, the headline, and
// `ferret whatif --fix` against `ferret analyze` on the same traces.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/causal/whatif.h"
#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace predicted_gains_test {

using test::span;

constexpr const char* kA100 =
    R"({"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920, "computeMajor": 8, )"
    R"("computeMinor": 0, "numSms": 108})";

std::string host(const char* cat, const std::string& name, double ts, double dur, int c = -1) {
  return span(cat, name, 1, 1, ts, dur, c >= 0 ? fmt::format(R"("correlation":{})", c) : "");
}
std::string kernel(const std::string& name, double ts, double dur, int c) {
  return span("kernel", name, 0, 7, ts, dur, fmt::format(R"("correlation":{})", c));
}
std::string document(const std::vector<std::string>& events) {
  std::string out = std::string(R"({"deviceProperties": [)") + kA100 + R"(], "traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i) out += (i ? "," : "") + events[i];
  return out + "]}";
}

// Four steps (us). Each: three aten::mm at +10, +40, +70 launch an fp32 GEMM (`sgemm_128x64_nn`,
// no Tensor Cores) at +15, +45, +75; the kernels run back to back from +25 for `kernel_us` each.
// Hidden (kernel_us 1600, step 10,000): a CPU-only aten::index [+100, +9900) holds the host while
// the GEMMs (4.8 ms) run beside it, then a sync [+9910, +9920) finds them done. Device-bound
// (kernel_us 4000, step 12,040): the sync [+100, +12030) returns 5 us after the last GEMM ends.
std::string gemm_steps(double kernel_us, bool hidden) {
  const double step_us = hidden ? 10'000 : 12'040;
  std::vector<std::string> ev;
  int c = 1;
  for (int k = 0; k < 4; ++k) {
    const double s = k * step_us;
    ev.push_back(host("user_annotation", fmt::format("ProfilerStep#{}", k + 1), s, step_us));
    for (int i = 0; i < 3; ++i, ++c) {
      ev.push_back(host("cpu_op", "aten::mm", s + 10 + 30 * i, 20));
      ev.push_back(host("cuda_runtime", "cudaLaunchKernel", s + 15 + 30 * i, 5, c));
      ev.push_back(kernel("sgemm_128x64_nn", s + 25 + kernel_us * i, kernel_us, c));
    }
    if (hidden) {
      ev.push_back(host("cpu_op", "aten::index", s + 100, 9800));
      ev.push_back(host("cuda_runtime", "cudaDeviceSynchronize", s + 9910, 10));
    } else {
      ev.push_back(host("cuda_runtime", "cudaDeviceSynchronize", s + 100, 25 + 3 * kernel_us + 5 - 100));
    }
  }
  return document(ev);
}

const Finding* find(const Diagnosis& d, const std::string& id) {
  for (const Finding& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

// A100: Tensor / fp32 peak 16, no shapes recorded: the GEMMs keep 1/16 of their time.
// Hidden: the ceiling is Amdahl on their 4.8 of 10 ms, 1 / (1 - 0.48 * 15/16) = 1.818x, but the
// host's aten::index ends each step whatever the GEMMs take: predicted 1.00x, severity info, and
// the verdict is not a precision fix.
TEST(PredictedGains, KernelsHiddenBehindTheHostGainNothing) {
  const TraceModel m = load_trace_text(gemm_steps(1600, true));
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  const Finding* f = find(d, "no-tensor-cores");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->max_speedup, 1.0 / (1.0 - 0.48 * 15.0 / 16.0), 0.01);
  EXPECT_NEAR(f->predicted_speedup, 1.0, 0.002);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NE(d.verdict.finding_id, "no-tensor-cores");
  EXPECT_EQ(d.verdict.headline.find("up to"), std::string::npos) << d.verdict.headline;
}

// Device-bound: the GEMMs shrink from 4000 to 250 us, the sync returns at 25 + 750 + 5 = 780 and
// the step ends 10 us later: 12,040 / 790 = 15.24x predicted, the verdict, and its headline says
// that figure and no ceiling.
TEST(PredictedGains, DeviceBoundStepShrinksWithItsKernels) {
  const TraceModel m = load_trace_text(gemm_steps(4000, false));
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  const Finding* f = find(d, "no-tensor-cores");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->predicted_speedup, 12'040.0 / 790.0, 0.01 * 12'040.0 / 790.0);
  EXPECT_GE(f->max_speedup + 1e-9, f->predicted_speedup);
  EXPECT_EQ(d.verdict.finding_id, "no-tensor-cores");
  EXPECT_NEAR(d.verdict.predicted_speedup, f->predicted_speedup, 1e-12);
  EXPECT_NE(d.verdict.headline.find(fmt::format("predicted to make steps {:.2f}x faster", f->predicted_speedup)),
            std::string::npos)
      << d.verdict.headline;
  EXPECT_EQ(d.verdict.headline.find("up to"), std::string::npos) << d.verdict.headline;
}

// The causal split decides device-bound: the device-bound steps' device works 12,000 of 12,040 us
// (99.7%) and never waits on the host, so device-bound stands beside the precision finding that
// carries the gain (and after it: it bounds none); the hidden steps' device works 48% and it does
// not fire.
TEST(PredictedGains, DeviceBoundFromTheCausalSplit) {
  const TraceModel bound = load_trace_text(gemm_steps(4000, false));
  const Diagnosis d = diagnose(analyze_trace(bound, {}));
  const Finding* f = find(d, "device-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->time_share, 48'000.0 / 48'160.0, 0.002);
  EXPECT_EQ(f->max_speedup, 1.0);
  EXPECT_EQ(d.findings.front().id, "no-tensor-cores");
  EXPECT_NE(f->title.find("sgemm_128x64_nn 100%"), std::string::npos) << f->title;
  const TraceModel hidden = load_trace_text(gemm_steps(1600, true));
  EXPECT_EQ(find(diagnose(analyze_trace(hidden, {})), "device-bound"), nullptr);
}

// The MTIA inference loop whose device works 94% of the window with a 6 ms queue: device-bound is
// its verdict (it was "no bottleneck", and before the causal model "CPU-bound").
TEST(PredictedGains, BusyAcceleratorIsDeviceBound) {
  FERRET_REQUIRE_CORPUS(path, "mtia-inference-backlog.json.gz");
  const TraceModel m = load_trace(path);
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  EXPECT_EQ(d.verdict.finding_id, "device-bound") << d.verdict.headline;
}

// Selected events, not names: a speedup naming two of the four GEMMs of step 1 scales those two
// only (the same kernel name elsewhere keeps its time).
// Four steps of 1240 us (us from each step's start). Ten aten::add [10 + 100i, +90) each launch
// [20 + 100i, +5) a 10 us kernel starting 15 us after the launch call; then a CPU-only aten::index [1010, 1210) and
// a sync [1220, 1230) that finds the device done. The device idles 1140 of 1240 us waiting on the
// host: CPU-bound, ceiling Amdahl's. With the host's overhead gone (a captured graph's replay):
// the launches all issue at the step's start, the kernels run 15 us after it and 4 us apart
// ([15,25), [29,39) ... [141,151)), aten::index keeps its 200 us [0,200) and the sync its 10 us:
// each step 210 us, predicted 1240 / 210 = 5.905x.
std::string host_bound_steps() {
  std::vector<std::string> ev;
  int c = 1;
  for (int k = 0; k < 4; ++k) {
    const double s = k * 1240.0;
    ev.push_back(host("user_annotation", fmt::format("ProfilerStep#{}", k + 1), s, 1240));
    for (int i = 0; i < 10; ++i, ++c) {
      ev.push_back(host("cpu_op", "aten::add", s + 10 + 100 * i, 90));
      ev.push_back(host("cuda_runtime", "cudaLaunchKernel", s + 20 + 100 * i, 5, c));
      ev.push_back(kernel("vectorized_elementwise_kernel", s + 35 + 100 * i, 10, c));
    }
    ev.push_back(host("cpu_op", "aten::index", s + 1010, 200));
    ev.push_back(host("cuda_runtime", "cudaDeviceSynchronize", s + 1220, 10));
  }
  return document(ev);
}

TEST(PredictedGains, CpuBoundPredictsTheHostOverheadGone) {
  const TraceModel m = load_trace_text(host_bound_steps());
  const TraceAnalysis a = analyze_trace(m, {});
  const Diagnosis d = diagnose(a);
  const Finding* f = find(d, "cpu-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->predicted_speedup, 1240.0 / 210.0, 1e-6);
  // The ceiling: the 1140 us of each step the device waits, Amdahl's 1 / (1 - 1140/1240) = 12.4x.
  EXPECT_NEAR(f->max_speedup, 1240.0 / 100.0, 0.2);
  EXPECT_EQ(d.verdict.predicted_speedup, f->predicted_speedup);
  RetimeChanges c;
  parse_whatif_removal("host-overhead", c);
  const WhatIfResult w = analyze_whatif(m, a.context, c);
  EXPECT_EQ(w.predicted_step_ns, 210'000);
  EXPECT_EQ(w.touched.host_overhead_spans, 40u);  // the aten::add spans (each launch inside its op)
  EXPECT_FALSE(w.floor_binds);
}

TEST(PredictedGains, EventSpeedupTouchesOnlyItsEvents) {
  const TraceModel m = load_trace_text(gemm_steps(4000, false));
  const AnalysisContext ctx = make_analysis_context(m, {});
  std::vector<EventIndex> gemms;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == EventKind::kKernel) gemms.push_back(static_cast<EventIndex>(i));
  ASSERT_EQ(gemms.size(), 12u);
  RetimeChanges changes;
  RetimeChanges::Speedup& s = changes.speedups.emplace_back();
  s.pattern = "two GEMMs";
  s.factor = 2;
  s.events = std::make_shared<const std::vector<EventIndex>>(std::vector<EventIndex>{gemms[0], gemms[1]});
  const WhatIfResult w = analyze_whatif(m, ctx, changes);
  ASSERT_EQ(w.touched.speedup_events.size(), 1u);
  EXPECT_EQ(w.touched.speedup_events[0], 2u);
  ASSERT_EQ(w.steps.size(), 4u);
  // Step 1: 4000 us less on the path (two 4000 us kernels halved); the others as they were.
  EXPECT_EQ(w.steps[0].baseline_ns - w.steps[0].predicted_ns, 4'000'000);
  for (std::size_t k = 1; k < 4; ++k) EXPECT_EQ(w.steps[k].predicted_ns, w.steps[k].baseline_ns);
  // Removing nothing re-times each step as recorded.
  for (const WhatIfStep& step : w.steps) EXPECT_EQ(step.baseline_ns, 12'040'000);
}

// `ferret whatif --fix ID` and `ferret analyze` give one number for one cause: every predicted
// finding of these traces, the CLI's JSON `speedup` equal to the finding's `predicted_speedup`.
TEST(PredictedGains, WhatIfFixMatchesAnalyze) {
  std::vector<std::string> traces;
  const std::string device_bound = test::temp_path("predicted-device-bound.json");
  test::write_file(device_bound, gemm_steps(4000, false));
  traces.push_back(device_bound);
  // The sample's unfused attention is re-timed through its host ops (a CPU-only trace).
  traces.push_back(std::string(FERRET_SOURCE_DIR) + "/examples/traces/cpu-unfused-attention.json.gz");
  bool corpus = true;
  for (const char* name : {"resnet-ddp-v100-2024-ns.pt.trace.json.gz", "a100-rank3of8-2022.json.gz",
                           "cnn-ddp-a100-rank0of2-nccl.json.gz", "resnet50-v100-torch19-dataloader.pt.trace.json.gz"}) {
    const std::string path = test::corpus_path(name);
    if (path.empty()) {
      std::fprintf(stderr, "SKIPPED (corpus trace %s absent)\n", name);
      corpus = false;
      continue;
    }
    traces.push_back(path);
  }
  std::set<std::string> compared_ids;
  int compared = 0;
  for (const std::string& t : traces) {
    SCOPED_TRACE(t);
    const test::CommandResult a = test::run_ferret("analyze " + t + " --json");
    ASSERT_EQ(a.exit_code, 0) << a.err;
    const nlohmann::json doc = nlohmann::json::parse(a.out);
    for (const nlohmann::json& f : doc["traces"][0]["findings"]) {
      if (f["predicted_speedup"].is_null()) continue;
      const std::string id = f["id"];
      const test::CommandResult w = test::run_ferret("whatif " + t + " --fix " + id + " --json");
      ASSERT_EQ(w.exit_code, 0) << id << ": " << w.err;
      EXPECT_DOUBLE_EQ(nlohmann::json::parse(w.out)["speedup"].get<double>(), f["predicted_speedup"].get<double>())
          << id;
      ++compared;
      compared_ids.insert(id);
    }
  }
  EXPECT_GE(compared, 1);
  EXPECT_TRUE(compared_ids.count("unfused-attention"));
  // The A100 rank's misaligned GEMM groups, re-timed by their own kernels.
  if (corpus) {
    EXPECT_TRUE(compared_ids.count("gemm-shape"));
  }
  // The DDP rank's host-bound steps, re-timed with the host's overhead gone.
  if (corpus) {
    EXPECT_TRUE(compared_ids.count("cpu-bound"));
    EXPECT_TRUE(compared_ids.count("pageable-copy"));  // the V100's blocking uploads, pinned
  }
  // An id without a prediction is a usage error that names the ids with one.
  const test::CommandResult bad = test::run_ferret("whatif " + device_bound + " --fix no-such-finding");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no-tensor-cores"), std::string::npos) << bad.err;
}

}  // namespace predicted_gains_test
}  // namespace
}  // namespace ferret
