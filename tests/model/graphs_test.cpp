// Graph relations on the hand-made capture + replay trace of graph_traces.h: which launches were
// captured, which GPU work is replayed, and which captured launch each replayed node maps to.
#include "model/graphs.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "graph_traces.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace graphs_test {

using test::graph_trace;
using test::GraphTraceOptions;

std::vector<EventIndex> all_named(const TraceModel& m, std::string_view name) {
  std::vector<EventIndex> out;
  for (std::size_t e = 0; e < m.size(); ++e)
    if (m.name_of(static_cast<EventIndex>(e)) == name) out.push_back(static_cast<EventIndex>(e));
  return out;
}

// The captured launch of each replay, as the name of the op around it ("" when unmapped).
std::vector<std::string> replay_ops(const TraceModel& m) {
  std::vector<std::string> out;
  for (const GraphReplay& r : m.relations.graph_replays) {
    const EventIndex op = r.captured_launch == kNoEvent ? kNoEvent : m.relations.op_of_launch(r.captured_launch);
    out.push_back(op == kNoEvent ? "" : std::string(m.name_of(op)));
  }
  return out;
}

TEST(GraphNames, GraphLaunchCallsOnly) {
  EXPECT_TRUE(is_graph_launch_name("cudaGraphLaunch"));
  EXPECT_TRUE(is_graph_launch_name("hipGraphLaunch"));
  EXPECT_TRUE(is_graph_launch_name("cuGraphLaunch"));
  EXPECT_FALSE(is_graph_launch_name("cudaGraphInstantiate"));
  EXPECT_FALSE(is_graph_launch_name("cudaLaunchKernel"));
}

// Six replayed kernels with graph id 7 and node ids 11/12/13 land in the side table; the plain
// copy_kernel and the launch calls carry none.
TEST(GraphNodeArgsParsing, GraphAndNodeIdsOnReplayedKernels) {
  const TraceModel m = load_trace_text(graph_trace());
  ASSERT_EQ(m.graph_nodes.size(), 6u);
  const EventIndex gemm = all_named(m, "gemm").front();
  const GraphNodeArgs* g = m.graph_node_of(gemm);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->graph_id, 7);
  EXPECT_EQ(g->node_id, 11);
  EXPECT_EQ(m.graph_node_of(all_named(m, "copy_kernel").front()), nullptr);
  EXPECT_EQ(load_trace_text(graph_trace({.replay_ids = false})).graph_nodes.size(), 0u);
  // With capture-side ids the three captured launch calls carry them too: 6 + 3 rows.
  EXPECT_EQ(load_trace_text(graph_trace({.capture_side_ids = true})).graph_nodes.size(), 9u);
}

// One capture [0, 34) on thread 1 holding the three launches c1..c3 in time order; the graph's node
// ids 11 < 12 < 13 pair with them in that order (no capture-side ids): gemm -> aten::mm, add_k ->
// aten::add, relu_k -> aten::relu, twice.
TEST(GraphRelations, CaptureMappedByLaunchOrder) {
  const TraceModel m = load_trace_text(graph_trace());
  const Relations& r = m.relations;
  ASSERT_EQ(r.graph_captures.size(), 1u);
  const GraphCapture& c = r.graph_captures[0];
  EXPECT_EQ(c.begin, all_named(m, "cudaStreamBeginCapture").front());
  EXPECT_EQ(c.end, all_named(m, "cudaStreamEndCapture").front());
  EXPECT_EQ(c.graph_id, 7);
  EXPECT_EQ(c.mapping, GraphNodeMapping::kLaunchOrder);
  const std::vector<EventIndex> launches = all_named(m, "cudaLaunchKernel");
  ASSERT_EQ(c.launches_end - c.launches_begin, 3u);
  EXPECT_EQ(std::vector<EventIndex>(r.captured_launches.begin() + c.launches_begin,
                                    r.captured_launches.begin() + c.launches_end),
            std::vector<EventIndex>(launches.begin(), launches.begin() + 3));
  ASSERT_EQ(r.graph_replays.size(), 6u);
  EXPECT_EQ(replay_ops(m),
            (std::vector<std::string>{"aten::mm", "aten::add", "aten::relu", "aten::mm", "aten::add", "aten::relu"}));
  const std::vector<EventIndex> graph_launches = all_named(m, "cudaGraphLaunch");
  EXPECT_EQ(r.graph_replays[0].graph_launch, graph_launches[0]);
  EXPECT_EQ(r.graph_replays[5].graph_launch, graph_launches[1]);
  EXPECT_EQ(r.replay_of(all_named(m, "copy_kernel").front()), nullptr);
  EXPECT_EQ(r.replay_of(all_named(m, "relu_k")[1]), &r.graph_replays[5]);
}

// Node ids out of launch order (gemm 13, add_k 11, relu_k 12) named on the captured launches: the
// mapping follows the ids, not the order (by order, add_k's 11 would go to aten::mm).
TEST(GraphRelations, CaptureMappedByNodeIdWhenTheCaptureSideCarriesIt) {
  const TraceModel m = load_trace_text(graph_trace({.capture_side_ids = true, .permuted_node_ids = true}));
  ASSERT_EQ(m.relations.graph_captures.size(), 1u);
  EXPECT_EQ(m.relations.graph_captures[0].mapping, GraphNodeMapping::kNodeId);
  EXPECT_EQ(replay_ops(m),
            (std::vector<std::string>{"aten::mm", "aten::add", "aten::relu", "aten::mm", "aten::add", "aten::relu"}));
}

// The same, with the ids on zero-length GPU records of the captured launches instead of on the
// calls: those records mark the launches as captured (not run), and give the node ids.
TEST(GraphRelations, CaptureMappedByNodeIdFromCaptureTimeGpuRecords) {
  const TraceModel m = load_trace_text(graph_trace({.permuted_node_ids = true, .capture_gpu_records = true}));
  ASSERT_EQ(m.relations.graph_captures.size(), 1u);
  const GraphCapture& c = m.relations.graph_captures[0];
  EXPECT_EQ(c.launches_end - c.launches_begin, 3u);
  EXPECT_EQ(c.mapping, GraphNodeMapping::kNodeId);
  EXPECT_EQ(m.relations.graph_replays.size(), 6u);  // the records are not replays
  EXPECT_EQ(replay_ops(m),
            (std::vector<std::string>{"aten::mm", "aten::add", "aten::relu", "aten::mm", "aten::add", "aten::relu"}));
}

// A launch inside the capture whose kernel ran then (no graph id) was not captured: still three
// captured launches, and the order mapping holds.
TEST(GraphRelations, WorkThatRanDuringTheCaptureIsNotCaptured) {
  const TraceModel m = load_trace_text(graph_trace({.eager_kernel_in_capture = true}));
  ASSERT_EQ(m.relations.graph_captures.size(), 1u);
  const GraphCapture& c = m.relations.graph_captures[0];
  EXPECT_EQ(c.launches_end - c.launches_begin, 3u);
  EXPECT_EQ(c.mapping, GraphNodeMapping::kLaunchOrder);
  EXPECT_EQ(replay_ops(m)[0], "aten::mm");
}

// Older torch: no graph ids, so the replays cannot be told apart by node; they stay with their
// cudaGraphLaunch, and the capture is matched to no graph.
TEST(GraphRelations, WithoutGraphIdsReplaysStayWithTheirGraphLaunch) {
  const TraceModel m = load_trace_text(graph_trace({.replay_ids = false}));
  const Relations& r = m.relations;
  ASSERT_EQ(r.graph_replays.size(), 6u);
  EXPECT_EQ(replay_ops(m), std::vector<std::string>(6, ""));
  EXPECT_EQ(r.graph_replays[0].graph_id, kNoId);
  ASSERT_EQ(r.graph_captures.size(), 1u);
  EXPECT_EQ(r.graph_captures[0].graph_id, kNoId);
  EXPECT_EQ(r.graph_captures[0].mapping, GraphNodeMapping::kNone);
}

// Each replay runs 4 nodes (a memset node 14 too) against 3 captured launches: the counts differ,
// so no order can be trusted and nothing is mapped.
TEST(GraphRelations, NodeCountMismatchLeavesReplaysUnmapped) {
  const TraceModel m = load_trace_text(graph_trace({.extra_replay_node = true}));
  ASSERT_EQ(m.relations.graph_replays.size(), 8u);
  EXPECT_EQ(replay_ops(m), std::vector<std::string>(8, ""));
  EXPECT_EQ(m.relations.graph_captures[0].graph_id, kNoId);
}

TEST(GraphRelations, HipNamesAlike) {
  const TraceModel m = load_trace_text(graph_trace({.hip = true}));
  ASSERT_EQ(m.relations.graph_captures.size(), 1u);
  EXPECT_EQ(m.relations.graph_captures[0].begin, all_named(m, "hipStreamBeginCapture").front());
  EXPECT_EQ(m.relations.graph_replays.size(), 6u);
  EXPECT_EQ(replay_ops(m)[2], "aten::relu");
}

// A kernel with a graph id whose correlation matches no call is still a replay (of an unknown launch).
TEST(GraphRelations, GraphIdWithoutLaunchCallIsAReplay) {
  const TraceModel m =
      load_trace_text(R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":2,)"
                      R"("args":{"correlation":99,"graph id":3,"graph node id":1}}]})");
  ASSERT_EQ(m.relations.graph_replays.size(), 1u);
  EXPECT_EQ(m.relations.graph_replays[0].graph_launch, kNoEvent);
  EXPECT_EQ(m.relations.graph_replays[0].graph_id, 3);
}

TEST(GraphRelations, PlainTraceHasNone) {
  const TraceModel m = load_trace_text(
      R"({"traceEvents":[{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":2,)"
      R"("args":{"correlation":1}},{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":2,)"
      R"("args":{"correlation":1}}]})");
  EXPECT_TRUE(m.relations.graph_replays.empty());
  EXPECT_TRUE(m.relations.graph_captures.empty());
  EXPECT_EQ(m.graph_nodes.size(), 0u);
}

// vLLM decode on MI300X: one hipStreamBeginCapture .. hipStreamEndCapture on thread 851 holding 421
// launch calls without GPU work (252 hipModuleLaunchKernel, 97 hipLaunchKernel, 72
// hipExtModuleLaunchKernel, counted with Python), and no graph launch: nothing replayed or mapped.
TEST(GraphRelationsCorpus, VllmCaptureWithoutReplays) {
  FERRET_REQUIRE_CORPUS(path, "mi300-vllm-decode-graph-capture.pt.trace.json.gz");
  const TraceModel m = load_trace(path);
  const Relations& r = m.relations;
  ASSERT_EQ(r.graph_captures.size(), 1u);
  const GraphCapture& c = r.graph_captures[0];
  EXPECT_EQ(m.name_of(c.begin), "hipStreamBeginCapture");
  ASSERT_NE(c.end, kNoEvent);
  EXPECT_EQ(m.name_of(c.end), "hipStreamEndCapture");
  EXPECT_EQ(m.pid[c.begin], 851);
  EXPECT_EQ(c.launches_end - c.launches_begin, 421u);
  EXPECT_EQ(c.graph_id, kNoId);
  EXPECT_EQ(c.mapping, GraphNodeMapping::kNone);
  EXPECT_TRUE(r.graph_replays.empty());
}

}  // namespace graphs_test
}  // namespace
}  // namespace ferret
