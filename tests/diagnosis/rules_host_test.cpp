#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "base/text.h"
#include "diagnosis/rules.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rules_host_test {

constexpr std::int64_t kMs = 1'000'000;

const Finding* find(const std::vector<Finding>& v, const std::string& id) {
  for (const Finding& f : v)
    if (f.id == id) return &f;
  return nullptr;
}

bool any_fix_contains(const Finding& f, const std::string& text) {
  for (const std::string& fix : fix_texts(f))
    if (fix.find(text) != std::string::npos) return true;
  return false;
}

// The host's rules as diagnose() runs them: rules_host, then hot-operator and host-preprocessing,
// the families that run after it.
std::vector<Finding> run(const TraceAnalysis& a) {
  std::vector<Finding> out;
  rules_host(a, out);
  rules_hot_operator(a, out);
  rules_host_preprocessing(a, out);
  return out;
}

// A 100 ms window with a launch-bound regime: 40 ms of GPU idle while the host issues work,
// launch calls 20 ms (20%: XProf's high level).
TraceAnalysis launch_bound() {
  TraceAnalysis a;
  HostBlockersResult& h = a.host_blockers;
  h.window_ns = 100 * kMs;
  h.has_gpu = true;
  LaunchRegime& l = h.launch;
  l.regime = HostRegime::kLaunchBound;
  l.kernels = 5000;
  l.median_kernel_ns = 4000;
  l.gpu_busy_share = 0.30;
  l.launch_calls = 5000;
  l.launch_call_ns = 20 * kMs;
  l.launch_overhead_share = 0.20;
  l.idle.gpu_idle_ns = 70 * kMs;
  l.idle.launch_ns = 15 * kMs;
  l.idle.op_ns = 25 * kMs;
  return a;
}

TEST(RulesHost, LaunchBound) {
  const std::vector<Finding> out = run(launch_bound());
  const Finding* f = find(out, "launch-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kHigh);  // launch calls 20% >= 15%
  EXPECT_EQ(f->dimension, Dimension::kCompute);
  EXPECT_EQ(f->layer, Layer::kFramework);
  EXPECT_NEAR(f->time_share, 0.40, 1e-12);  // (15 + 25) / 100 ms
  EXPECT_NEAR(f->max_speedup, amdahl_speedup(0.40), 1e-12);
  EXPECT_NE(f->title.find("40%"), std::string::npos);
  EXPECT_TRUE(any_fix_contains(*f, "mode=\"reduce-overhead\""));
  EXPECT_TRUE(any_fix_contains(*f, "torch.cuda.graph"));
  EXPECT_TRUE(any_fix_contains(*f, "batch size"));
}

TEST(RulesHost, LaunchBoundModerateAndOtherRegimesSilent) {
  TraceAnalysis a = launch_bound();
  a.host_blockers.launch.launch_overhead_share = 0.05;
  const std::vector<Finding> out = run(a);
  const Finding* f = find(out, "launch-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kMedium);
  for (HostRegime r : {HostRegime::kGpuBound, HostRegime::kCpuBound, HostRegime::kOther, HostRegime::kTooFew}) {
    a.host_blockers.launch.regime = r;
    EXPECT_EQ(find(run(a), "launch-bound"), nullptr);
  }
}

TraceAnalysis with_syncs(std::int64_t stall_ns) {
  TraceAnalysis a;
  HostBlockersResult& h = a.host_blockers;
  h.window_ns = 100 * kMs;
  h.has_gpu = true;
  h.syncs.count = 10;
  h.syncs.total_ns = 30 * kMs;
  h.syncs.gpu_stall_ns = stall_ns;
  h.syncs.by_name = {{"aten::item", 10, 30 * kMs}};
  h.syncs.callers = {{"train.py(42): train_step", 10, 30 * kMs}};
  h.syncs.reads = {10, 30 * kMs, {{"train.py(42): train_step", 10, 30 * kMs}}};
  return a;
}

// The cost is the GPU stall, not the 30 ms the host was blocked: 0.9 ms (< 1%) is no finding,
// 2 ms is low, 5 ms medium, 20 ms high.
TEST(RulesHost, HostSyncThresholds) {
  EXPECT_EQ(find(run(with_syncs(900'000)), "host-sync"), nullptr);
  const std::pair<std::int64_t, Severity> cases[] = {
      {2 * kMs, Severity::kLow}, {5 * kMs, Severity::kMedium}, {20 * kMs, Severity::kHigh}};
  for (const auto& [stall, severity] : cases) {
    const std::vector<Finding> out = run(with_syncs(stall));
    const Finding* f = find(out, "host-sync");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->severity, severity);
    EXPECT_NEAR(f->time_share, static_cast<double>(stall) / (100 * kMs), 1e-12);
    EXPECT_NE(f->detail.find("train.py(42): train_step"), std::string::npos);
    // The Python frame already names the line: the sync debug mode is left out.
    EXPECT_FALSE(any_fix_contains(*f, "torch.cuda.set_sync_debug_mode(\"warn\")"));
    EXPECT_TRUE(any_fix_contains(*f, ".item()"));
  }
}

// The fixes follow the kinds of sync the trace has, the longest first, each naming its calls;
// the others are left out with why.
TEST(RulesHost, HostSyncFixesFitTheSyncs) {
  TraceAnalysis a = with_syncs(20 * kMs);
  HostSyncs& s = a.host_blockers.syncs;
  s.callers = {{"aten::nonzero", 6, 20 * kMs}, {"(top level)", 4, 10 * kMs}};
  s.reads = {};
  s.data_dependent = {6, 20 * kMs, {{"aten::nonzero", 6, 20 * kMs}}};
  s.explicit_calls = {4, 10 * kMs, {{"cudaDeviceSynchronize", 4, 10 * kMs}}};
  const std::vector<Finding> out = run(a);
  const Finding* f = find(out, "host-sync");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->fixes.size(), 3u);
  EXPECT_TRUE(contains(f->fixes[0].text, "torch.nonzero_static")) << f->fixes[0].text;
  EXPECT_EQ(f->fixes[0].because, std::vector<std::string>{"6 syncs, 20.00 ms: aten::nonzero (6x, 20.00 ms)"});
  EXPECT_TRUE(contains(f->fixes[1].text, "torch.cuda.synchronize()")) << f->fixes[1].text;
  EXPECT_EQ(f->fixes[1].because, std::vector<std::string>{"4 syncs, 10.00 ms: cudaDeviceSynchronize (4x, 10.00 ms)"});
  // No frame names a line: the sync debug mode finds them.
  EXPECT_TRUE(contains(f->fixes[2].text, "set_sync_debug_mode"));
  std::vector<std::string> left;
  for (const Finding::LeftOut& l : f->fixes_left_out) left.push_back(l.because);
  EXPECT_EQ(left,
            (std::vector<std::string>{"no value is read on the host (aten::item, a blocking copy) among the syncs",
                                      "no op syncs by itself", "no blocking device-to-host copy among the syncs"}));
}

// CPU-only: .item() in every step is reported as info (it syncs once the loop runs on a GPU); in
// one step of five it is not.
TEST(RulesHost, HostSyncOnCpuOnlyTraces) {
  TraceAnalysis a = with_syncs(0);
  a.host_blockers.has_gpu = false;
  a.host_blockers.syncs.per_step = {{1, 2, 1000}, {2, 2, 1000}, {3, 2, 1000}, {4, 2, 1000}, {5, 2, 1000}};
  a.host_blockers.syncs.steps_with_syncs = 5;
  const std::vector<Finding> out = run(a);
  const Finding* f = find(out, "host-sync");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  a.host_blockers.syncs.steps_with_syncs = 1;
  EXPECT_EQ(find(run(a), "host-sync"), nullptr);
  // Every read is the optimizer's own step counter (a CPU tensor on a GPU job too): no finding.
  a.host_blockers.syncs.steps_with_syncs = 5;
  a.host_blockers.syncs.callers = {{"torch/optim/optimizer.py(97): _get_value", 10, 30 * kMs}};
  EXPECT_EQ(find(run(a), "host-sync"), nullptr);
  // One read of the ten elsewhere: the finding stands.
  a.host_blockers.syncs.callers = {{"torch/optim/optimizer.py(97): _get_value", 9, 27 * kMs},
                                   {"train.py(42): train_step", 1, 3 * kMs}};
  EXPECT_NE(find(run(a), "host-sync"), nullptr);
}

// The caller of a read is the Python frame around the built-in's own frame, which names the call
// itself and an object address.
TEST(RulesHost, ASyncsCallerIsTheFrameAroundTheBuiltIn) {
  std::vector<std::string> ev;
  for (int k = 0; k < 3; ++k) {
    const double s = k * 1000.0;
    ev.push_back(test::span("user_annotation", "ProfilerStep#" + std::to_string(k), 1, 1, s, 1000));
    ev.push_back(test::span("python_function", "train.py(12): <module>", 1, 1, s + 10, 900));
    ev.push_back(
        test::span("python_function", "<built-in method item of Tensor object at 0x7f0a1b2c>", 1, 1, s + 20, 100));
    ev.push_back(test::span("cpu_op", "aten::item", 1, 1, s + 30, 50));
  }
  const TraceModel m = load_trace_text(test::trace(ev));
  const TraceAnalysis a = analyze_trace(m, {});
  ASSERT_EQ(a.host_blockers.syncs.callers.size(), 1u);
  EXPECT_EQ(a.host_blockers.syncs.callers.front().name, "train.py(12): <module>");
  EXPECT_EQ(a.host_blockers.syncs.callers.front().count, 3u);
}

TraceAnalysis with_allocator(std::uint64_t steady_calls, std::int64_t steady_ns) {
  TraceAnalysis a;
  HostBlockersResult& h = a.host_blockers;
  h.window_ns = 500 * kMs;
  AllocatorCalls& al = h.allocator;
  al.steady_state_known = true;
  al.steady_steps = 4;
  al.steady_window_ns = 400 * kMs;
  al.steady_count = steady_calls;
  al.steady_ns = steady_ns;
  al.count = steady_calls + 10;
  al.by_name = {{"cudaMalloc", steady_calls, steady_ns}};
  return a;
}

// Steady state = 4 steps, 400 ms. One cheap call in 4 steps: silent. One call per step (4 calls,
// 0.4 ms): low. 20 ms (5%): medium.
TEST(RulesHost, AllocatorInSteadyState) {
  EXPECT_EQ(find(run(with_allocator(0, 0)), "allocator-in-steady-state"), nullptr);
  EXPECT_EQ(find(run(with_allocator(1, 100'000)), "allocator-in-steady-state"), nullptr);
  const std::vector<Finding> low = run(with_allocator(4, 400'000));
  const Finding* f = find(low, "allocator-in-steady-state");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kLow);
  const std::vector<Finding> out = run(with_allocator(8, 20 * kMs));
  f = find(out, "allocator-in-steady-state");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_NEAR(f->time_share, 0.05, 1e-12);
  EXPECT_TRUE(any_fix_contains(*f, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
  EXPECT_TRUE(any_fix_contains(*f, "empty_cache"));
}

TEST(RulesHost, PageableAndSyncCopies) {
  TraceAnalysis a;
  HostBlockersResult& h = a.host_blockers;
  h.window_ns = 100 * kMs;
  h.copies.pageable_copies = 6;
  h.copies.pageable_cost_ns = 500'000;  // 0.5%: below the 1% floor
  h.copies.sync_copy_calls = 3;
  h.copies.sync_copy_ns = 500'000;
  std::vector<Finding> out = run(a);
  EXPECT_EQ(find(out, "pageable-copy"), nullptr);
  EXPECT_EQ(find(out, "sync-copy"), nullptr);
  h.copies.pageable_cost_ns = 4 * kMs;
  h.copies.sync_copy_ns = 16 * kMs;
  out = run(a);
  const Finding* p = find(out, "pageable-copy");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->severity, Severity::kMedium);
  EXPECT_EQ(p->layer, Layer::kHardware);
  EXPECT_TRUE(any_fix_contains(*p, "pin_memory=True"));
  EXPECT_TRUE(any_fix_contains(*p, "non_blocking=True"));
  const Finding* s = find(out, "sync-copy");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->severity, Severity::kHigh);
  EXPECT_NEAR(s->max_speedup, amdahl_speedup(0.16), 1e-12);
  EXPECT_TRUE(any_fix_contains(*s, "cudaMemcpyAsync"));
}

TraceAnalysis with_ops(std::vector<OpStat> ops, std::int64_t attributed, std::int64_t window) {
  TraceAnalysis a;
  a.hot_spots.window_ns = window;
  a.hot_spots.attributed_device_ns = attributed;
  a.hot_spots.ops_by_device = std::move(ops);
  DeviceMetrics gpu;  // the fixes speak of the device's matrix units: an A100's Tensor Cores
  gpu.device = 0;
  gpu.name = "NVIDIA A100-SXM4-80GB";
  gpu.compute_major = 8;
  gpu.kernel_ns = attributed;
  a.gpu_metrics.devices.push_back(gpu);
  return a;
}

OpStat op(const std::string& name, std::int64_t device_self) {
  OpStat s;
  s.name = name;
  s.calls = 10;
  s.device_self_ns = device_self;
  return s;
}

// aten::mm with 40 of 100 ms of op GPU time (40%), window 200 ms: low, matmul fixes. At 60%,
// medium. aten::add at 20%: silent. A collective on top is skipped for the next op. An op at 30% of
// a GPU that ran 1 ms in a 1 s window (0.03%): silent.
TEST(RulesHost, HotOperator) {
  std::vector<Finding> out = run(with_ops({op("aten::mm", 40 * kMs), op("aten::add", 20 * kMs)}, 100 * kMs, 200 * kMs));
  const Finding* f = find(out, "hot-operator");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kLow);
  EXPECT_EQ(f->layer, Layer::kOperator);
  EXPECT_NEAR(f->time_share, 0.20, 1e-12);
  EXPECT_TRUE(any_fix_contains(*f, "torch.autocast"));
  EXPECT_TRUE(any_fix_contains(*f, "allow_tf32"));
  out = run(with_ops({op("aten::mm", 60 * kMs)}, 100 * kMs, 200 * kMs));
  ASSERT_NE(find(out, "hot-operator"), nullptr);
  EXPECT_EQ(find(out, "hot-operator")->severity, Severity::kMedium);
  EXPECT_EQ(find(run(with_ops({op("aten::add", 20 * kMs)}, 100 * kMs, 200 * kMs)), "hot-operator"), nullptr);
  out = run(with_ops({op("record_param_comms", 70 * kMs), op("aten::add", 30 * kMs)}, 100 * kMs, 200 * kMs));
  f = find(out, "hot-operator");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("aten::add"), std::string::npos);
  EXPECT_TRUE(any_fix_contains(*f, "torch.compile"));
  EXPECT_EQ(find(run(with_ops({op("aten::mm", 300'000)}, 1 * kMs, 1000 * kMs)), "hot-operator"), nullptr);
}

// A graph-replay row (70 of 100 ms, its capturing ops unknown) is many ops' work: skipped for the
// next op, aten::add at 30%. An op whose time is replays of nodes it captured says so: 40 of its
// 60 ms = 67%.
TEST(RulesHost, HotOperatorSkipsGraphReplayRows) {
  OpStat row = op("CUDA graph replay (graph 3)", 70 * kMs);
  row.graph_replay = true;
  std::vector<Finding> out = run(with_ops({row, op("aten::add", 30 * kMs)}, 100 * kMs, 200 * kMs));
  const Finding* f = find(out, "hot-operator");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("aten::add"), std::string::npos) << f->title;
  OpStat mm = op("aten::mm", 60 * kMs);
  mm.device_replayed_ns = 40 * kMs;
  out = run(with_ops({mm}, 100 * kMs, 200 * kMs));
  f = find(out, "hot-operator");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->detail.find("(67% of it replays of graph nodes it captured)"), std::string::npos) << f->detail;
}

TEST(RulesHost, NothingToSayOnAnEmptyAnalysis) { EXPECT_TRUE(run(TraceAnalysis{}).empty()); }

// --- Corpus: the rules over ferret's own analyses of real traces. ---

std::vector<Finding> run_on(const std::string& path) {
  const TraceModel m = load_trace(path);
  TraceAnalysis a;
  a.model = &m;
  a.context = make_analysis_context(m, {});
  a.hot_spots = analyze_hot_spots(m, a.context);
  a.host_blockers = analyze_host_blockers(m, a.context);
  return run(a);
}

// event-sync: aten::item, cudaEventSynchronize and cudaDeviceSynchronize. The GPU idles for as long
// as aten::item lasted after it returns (45 us before the next kernel, 1.4% of the 3154 us step);
// the two syncs at the step's end are followed by no GPU work and cost nothing.
TEST(CorpusRulesHost, EventSyncIsAHostSync) {
  FERRET_REQUIRE_CORPUS(path, "event-sync.json.gz");
  const std::vector<Finding> out = run_on(path);
  const Finding* f = find(out, "host-sync");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kLow);
  EXPECT_NE(f->detail.find("cudaEventSynchronize"), std::string::npos);
}

// PARAM add: its 21 syncs cost the GPU 0.7 ms of a 41.6 s trace - no host-sync finding - but
// cudaFree/cudaMalloc take 20.7% of the trace (no steps: reported as medium, warm-up included).
TEST(CorpusRulesHost, ParamSyncAllocatorNotSyncs) {
  FERRET_REQUIRE_CORPUS(path, "param-simple-add-a100-sync.json.gz");
  const std::vector<Finding> out = run_on(path);
  EXPECT_EQ(find(out, "host-sync"), nullptr);
  const Finding* f = find(out, "allocator-in-steady-state");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_NEAR(f->time_share, 0.207, 0.001);
}

TEST(CorpusRulesHost, EagerB200IsLaunchBound) {
  FERRET_REQUIRE_CORPUS(path, "b200-eager-rank0of8.json.gz");
  const std::vector<Finding> out = run_on(path);
  const Finding* f = find(out, "launch-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kMedium);  // launch calls 10.1% of the window: >= 3%, < 15%
  EXPECT_GT(f->time_share, 0.5);
}

TEST(CorpusRulesHost, ImageClassifierLaunchBoundWithHotAddmm) {
  FERRET_REQUIRE_CORPUS(path, "h100-image-classifier-inference.json.gz");
  const std::vector<Finding> out = run_on(path);
  EXPECT_NE(find(out, "launch-bound"), nullptr);
  const Finding* f = find(out, "hot-operator");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("aten::addmm"), std::string::npos);
}

// ResNet50: 12 pageable input copies cost 1.1% of the window (low); no launch-bound finding (the GPU
// waits for the DataLoader, not for launches).
TEST(CorpusRulesHost, ResNet50PageableInputs) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const std::vector<Finding> out = run_on(path);
  const Finding* f = find(out, "pageable-copy");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kLow);
  EXPECT_EQ(find(out, "launch-bound"), nullptr);
  EXPECT_EQ(find(out, "host-sync"), nullptr);
}

// Qwen inference, GPU busy 92%: nothing host-side to fix.
TEST(CorpusRulesHost, BusyGpuHasNoHostFindings) {
  FERRET_REQUIRE_CORPUS(path, "h100-qwen0.5b-inference-torch2.json.gz");
  EXPECT_TRUE(run_on(path).empty());
}

TEST(CorpusRulesHost, CpuOnlyTraces) {
  FERRET_REQUIRE_CORPUS(path, "cpu-only.pt.trace.json.gz");
  EXPECT_TRUE(run_on(path).empty());
  const std::vector<Finding> out = run_on(std::string(FERRET_SOURCE_DIR) + "/examples/traces/cpu-host-sync.json.gz");
  const Finding* f = find(out, "host-sync");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NE(f->title.find("100"), std::string::npos);
}

// The fusion fix of launch-bound names the operators whose short kernels it would merge, counted
// from the sample's generator (gen/scenario_launch_bound.cpp) by hand: over the 4 analysed steps,
// the per-parameter SGD update runs aten::add_ on each of 200 parameters (800), each of the 100
// blocks runs aten::mul forward and again in MulBackward0 (800), and aten::add forward once (400).
TEST(LaunchBound, TheFusionFixNamesTheOperatorsOfTheShortKernels) {
  const TraceModel m = load_trace(std::string(FERRET_SOURCE_DIR) + "/examples/traces/synthetic-launch-bound.json.gz");
  const TraceAnalysis a = analyze_trace(m, {});
  ASSERT_EQ(a.context.steps.size(), 4u);
  std::vector<Finding> out;
  rules_host(a, out);
  const Finding* f = nullptr;
  for (const Finding& x : out)
    if (x.id == "launch-bound") f = &x;
  ASSERT_NE(f, nullptr);
  const Fix* fuse = nullptr;
  for (const Fix& fix : f->fixes)
    if (fix.text.starts_with("Fuse small kernels")) fuse = &fix;
  ASSERT_NE(fuse, nullptr);
  ASSERT_FALSE(fuse->because.empty());
  const std::string& why = fuse->because.front();
  EXPECT_EQ(why.rfind("the operators launching the most short kernels: aten::add_ (800 short kernels, mean ", 0), 0u)
      << why;
  EXPECT_NE(why.find("aten::mul (800 short kernels"), std::string::npos) << why;
  EXPECT_NE(why.find("aten::add (400 short kernels"), std::string::npos) << why;
}

}  // namespace rules_host_test
}  // namespace
}  // namespace ferret
