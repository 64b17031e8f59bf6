// CUDA/HIP graph replays in the analyses, on the capture + two replays trace of graph_traces.h:
//   captured  aten::mm -> gemm 20 us, aten::add -> add_k 5 us, aten::relu -> relu_k 8 us
//   replayed  twice by cudaGraphLaunch [202,212) and [302,312) (10 us calls) inside model_step
//   eager     aten::copy_: cudaLaunchKernel [102,104) -> copy_kernel [106,107)
// GPU busy time: replays 2 x (20 + 5 + 8) = 66 us, no overlap, + copy_kernel 1 us = 67 us.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/operator/gpu_metrics.h"
#include "analysis/operator/hot_spots.h"
#include "analysis/timeline/gpu_timeline.h"
#include "graph_traces.h"
#include "ingest/trace_loader.h"

namespace ferret {
namespace {
namespace graph_replays_test {

using test::graph_trace;
using test::GraphTraceOptions;

const OpStat* find_op(const std::vector<OpStat>& v, const std::string& name) {
  for (const OpStat& s : v)
    if (s.name == name) return &s;
  return nullptr;
}

HotSpotsResult hot_spots_of(const GraphTraceOptions& o) {
  const TraceModel m = load_trace_text(graph_trace(o));
  return analyze_hot_spots(m, make_analysis_context(m, {}));
}

GpuTimelineResult timeline_of(const GraphTraceOptions& o) {
  const TraceModel m = load_trace_text(graph_trace(o));
  return analyze_gpu_timeline(m, make_analysis_context(m, {}));
}

// With graph ids the capture maps node by node: aten::mm 2 x 20 = 40 us, aten::relu 2 x 8 = 16 us,
// aten::add 2 x 5 = 10 us, all replayed; aten::copy_ 1 us eager. model_step, around the two
// cudaGraphLaunch calls, gets none of it (self and total 0).
TEST(GraphReplayHotSpots, ReplaysCountForTheCapturingOps) {
  const HotSpotsResult r = hot_spots_of({});
  ASSERT_GE(r.ops_by_device.size(), 4u);
  EXPECT_EQ(r.ops_by_device[0].name, "aten::mm");
  EXPECT_EQ(r.ops_by_device[1].name, "aten::relu");
  EXPECT_EQ(r.ops_by_device[2].name, "aten::add");
  EXPECT_EQ(r.ops_by_device[3].name, "aten::copy_");
  const OpStat& mm = r.ops_by_device[0];
  EXPECT_EQ(mm.device_self_ns, 40'000);
  EXPECT_EQ(mm.device_total_ns, 40'000);
  EXPECT_EQ(mm.device_replayed_ns, 40'000);
  EXPECT_EQ(mm.kernels, 2u);
  EXPECT_EQ(mm.calls, 1u);
  EXPECT_FALSE(mm.graph_replay);
  EXPECT_EQ(r.ops_by_device[1].device_self_ns, 16'000);
  EXPECT_EQ(r.ops_by_device[2].device_self_ns, 10'000);
  EXPECT_EQ(r.ops_by_device[3].device_self_ns, 1'000);
  EXPECT_EQ(r.ops_by_device[3].device_replayed_ns, 0);
  const OpStat* step = find_op(r.ops_by_device, "model_step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->device_self_ns, 0);
  EXPECT_EQ(step->device_total_ns, 0);
  for (const OpStat& op : r.ops_by_device) EXPECT_FALSE(op.graph_replay) << op.name;
  EXPECT_EQ(r.replayed_device_ns, 66'000);
  EXPECT_EQ(r.replayed_unattributed_ns, 0);
  EXPECT_EQ(r.device_ns, 67'000);
  EXPECT_EQ(r.attributed_device_ns, 67'000);
  // The kernel table names the capturing op and keeps the graph launch as the launch call.
  ASSERT_FALSE(r.kernels.empty());
  EXPECT_EQ(r.kernels[0].name, "gemm");
  ASSERT_EQ(r.kernels[0].launched_by.size(), 1u);
  EXPECT_EQ(r.kernels[0].launched_by[0].op, "aten::mm");
  EXPECT_EQ(r.kernels[0].launched_by[0].runtime, "cudaGraphLaunch");
}

// Node ids out of launch order, named on the capture side: attribution follows them, so the same
// per-op numbers come out.
TEST(GraphReplayHotSpots, ByNodeIdWhenTheCaptureSideCarriesIt) {
  const HotSpotsResult r = hot_spots_of({.capture_side_ids = true, .permuted_node_ids = true});
  const OpStat* mm = find_op(r.ops_by_device, "aten::mm");
  const OpStat* add = find_op(r.ops_by_device, "aten::add");
  ASSERT_NE(mm, nullptr);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(mm->device_self_ns, 40'000);
  EXPECT_EQ(add->device_self_ns, 10'000);
}

// Older torch (no graph ids): the six replayed kernels, 66 us, form one labelled row with the two
// graph launches as its calls; no op gets them, model_step included.
TEST(GraphReplayHotSpots, WithoutGraphIdsALabelledReplayRow) {
  const HotSpotsResult r = hot_spots_of({.replay_ids = false});
  ASSERT_FALSE(r.ops_by_device.empty());
  const OpStat& row = r.ops_by_device[0];
  EXPECT_EQ(row.name, "CUDA graph replay (graph id not recorded)");
  EXPECT_TRUE(row.graph_replay);
  EXPECT_EQ(row.device_self_ns, 66'000);
  EXPECT_EQ(row.device_replayed_ns, 66'000);
  EXPECT_EQ(row.kernels, 6u);
  EXPECT_EQ(row.calls, 2u);
  EXPECT_EQ(find_op(r.ops_by_device, "aten::mm")->device_self_ns, 0);
  EXPECT_EQ(find_op(r.ops_by_device, "model_step")->device_self_ns, 0);
  EXPECT_EQ(r.replayed_unattributed_ns, 66'000);
  EXPECT_EQ(r.attributed_device_ns, 67'000);
  EXPECT_EQ(find_op(r.ops_by_host, "CUDA graph replay (graph id not recorded)"), nullptr);  // no host time
}

// 4 replayed nodes per launch against 3 captured launches: not mapped, one row for graph 7 with
// 66 + 2 x 1 us (the memset node) = 68 us.
TEST(GraphReplayHotSpots, UnmatchedCaptureGivesARowPerGraph) {
  const HotSpotsResult r = hot_spots_of({.extra_replay_node = true});
  ASSERT_FALSE(r.ops_by_device.empty());
  EXPECT_EQ(r.ops_by_device[0].name, "CUDA graph replay (graph 7)");
  EXPECT_EQ(r.ops_by_device[0].device_self_ns, 68'000);
  EXPECT_EQ(r.ops_by_device[0].kernels, 8u);
}

TEST(GraphReplayHotSpots, HipNames) {
  const HotSpotsResult unmapped = hot_spots_of({.hip = true, .replay_ids = false});
  ASSERT_FALSE(unmapped.ops_by_device.empty());
  EXPECT_EQ(unmapped.ops_by_device[0].name, "HIP graph replay (graph id not recorded)");
  EXPECT_EQ(unmapped.ops_by_device[0].device_self_ns, 66'000);
  const HotSpotsResult mapped = hot_spots_of({.hip = true});
  ASSERT_FALSE(mapped.ops_by_device.empty());
  EXPECT_EQ(mapped.ops_by_device[0].name, "aten::mm");
  EXPECT_EQ(mapped.ops_by_device[0].device_self_ns, 40'000);
}

// A window [150, 400) us holds both replays but not the capture (or aten::copy_ and its kernel): the
// capturing ops are still credited, with 0 calls in the window, and stay out of the host ranking.
TEST(GraphReplayHotSpots, CaptureBeforeTheWindow) {
  const TraceModel m = load_trace_text(graph_trace());
  AnalysisContext ctx = make_analysis_context(m, {});
  ctx.has_steps = true;
  ctx.window_start_ns = 150'000;
  ctx.window_end_ns = 400'000;
  const HotSpotsResult r = analyze_hot_spots(m, ctx);
  const OpStat* mm = find_op(r.ops_by_device, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->device_self_ns, 40'000);
  EXPECT_EQ(mm->calls, 0u);
  EXPECT_EQ(find_op(r.ops_by_device, "aten::copy_"), nullptr);
  EXPECT_EQ(find_op(r.ops_by_host, "aten::mm"), nullptr);
  EXPECT_EQ(r.replayed_device_ns, 66'000);
  EXPECT_EQ(r.attributed_device_ns, 66'000);
}

// Replayed share: 66 / 67 us of busy time = 98.507%. Launch statistics keep only the eager launch:
// delay 106 - 104 = 2 us; it is short (call 2 us <= 50, kernel 1 us < 2). Counting the replays
// against their 10 us graph launch calls would add four short kernels (add_k 5 us, relu_k 8 us, x2).
TEST(GraphReplayTimeline, ReplayedShareAndLaunchStatsWithoutReplays) {
  for (const bool ids : {true, false}) {
    SCOPED_TRACE(ids ? "with graph ids" : "without graph ids");
    const GpuTimelineResult t = timeline_of({.replay_ids = ids});
    EXPECT_EQ(t.overall.busy_ns, 67'000);
    EXPECT_EQ(t.graph_replayed_ns, 66'000);
    EXPECT_NEAR(t.graph_replayed_pct(), 100.0 * 66 / 67, 1e-9);
    ASSERT_EQ(t.devices.size(), 1u);
    EXPECT_NEAR(t.devices[0].graph_replayed_pct(), 100.0 * 66 / 67, 1e-9);
    EXPECT_EQ(t.launch.launches, 1u);
    EXPECT_EQ(t.launch.short_kernels, 1u);
    EXPECT_EQ(t.launch.median_delay_ns, 2'000);
    EXPECT_EQ(t.launch.graph_launches, 2u);
    EXPECT_EQ(t.launch.graph_activities, 6u);
    EXPECT_EQ(t.launch.graph_kernels, 6u);
  }
}

// The memset node counts as replayed activity but not as a kernel: 8 activities, 6 kernels, and
// 66 + 2 = 68 of 69 us busy.
TEST(GraphReplayTimeline, ReplayedCopiesAndFillsCountAsActivities) {
  const GpuTimelineResult t = timeline_of({.extra_replay_node = true});
  EXPECT_EQ(t.launch.graph_activities, 8u);
  EXPECT_EQ(t.launch.graph_kernels, 6u);
  EXPECT_EQ(t.graph_replayed_ns, 68'000);
  EXPECT_EQ(t.overall.busy_ns, 69'000);
}

// Capture-time GPU records of the three captured launches (0 us each, 1 us after 2 us calls) did
// not run then: no launch delay, no short kernel from them, and they are no replays.
TEST(GraphReplayTimeline, CaptureTimeRecordsStayOutOfLaunchStats) {
  const GpuTimelineResult t = timeline_of({.capture_gpu_records = true});
  EXPECT_EQ(t.launch.launches, 1u);
  EXPECT_EQ(t.launch.short_kernels, 1u);
  EXPECT_EQ(t.launch.median_delay_ns, 2'000);
  EXPECT_EQ(t.launch.graph_activities, 6u);
}

TEST(GraphReplayTimeline, Hip) {
  const GpuTimelineResult t = timeline_of({.hip = true});
  EXPECT_EQ(t.launch.launches, 1u);  // hipLaunchKernel, eager
  EXPECT_EQ(t.launch.graph_launches, 2u);
  EXPECT_EQ(t.graph_replayed_ns, 66'000);
}

// The Tensor-Core-eligible share follows the capturing op: both gemm replays (2 x 20 us) were
// captured by aten::mm. Without the mapping they belong to model_step, which is not eligible.
TEST(GraphReplayGpuMetrics, EligibleOpsByCapture) {
  for (const bool ids : {true, false}) {
    const TraceModel m = load_trace_text(graph_trace({.replay_ids = ids}));
    const GpuMetricsResult g = analyze_gpu_metrics(m, make_analysis_context(m, {}));
    ASSERT_EQ(g.devices.size(), 1u);
    EXPECT_EQ(g.devices[0].tc_eligible_ns, ids ? 40'000 : 0) << (ids ? "with ids" : "without ids");
  }
}

}  // namespace graph_replays_test
}  // namespace
}  // namespace ferret
