// Relations on Kineto 2025-2026 traces: launches found without flow events, and the Python call
// tree from python_function ids. Fixtures are hand-written; times are microseconds.
#include <gtest/gtest.h>

#include "analysis/timeline/trace_summary.h"
#include "ingest/trace_loader.h"
#include "model/relations.h"

namespace ferret {
namespace {
namespace kineto_drift_relations_test {

EventIndex find(const TraceModel& m, std::string_view name) {
  for (std::size_t e = 0; e < m.size(); ++e)
    if (m.name_of(static_cast<EventIndex>(e)) == name) return static_cast<EventIndex>(e);
  ADD_FAILURE() << "no event named " << name;
  return kNoEvent;
}

// aten::mm [0,100) launches a kernel through cudaLaunchKernel [10,20); the trace has no ac2g
// flow events at all (Kineto drops them for some launches), only args.correlation 5 on both sides.
// A second launch outside any op finds its op by External id.
const char* kNoFlows = R"J({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100,
   "args": {"External id": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 10,
   "args": {"External id": 3, "cbid": 211, "correlation": 5}},
  {"ph": "X", "cat": "kernel", "name": "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8", "pid": 0, "tid": 7,
   "ts": 30, "dur": 40, "args": {"External id": 3, "device": 0, "stream": 7, "correlation": 5}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 1, "tid": 1, "ts": 200, "dur": 10,
   "args": {"External id": 4}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 205, "dur": 3,
   "args": {"External id": 4, "cbid": 211, "correlation": 6}},
  {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "pid": 0, "tid": 7, "ts": 220, "dur": 5,
   "args": {"External id": 4, "device": 0, "stream": 7, "correlation": 6}}
]})J";

TEST(KinetoDriftRelations, KernelWithoutFlowEventsIsAttributedByCorrelation) {
  const TraceModel m = load_trace_text(kNoFlows);
  const Relations& rel = m.relations;
  EXPECT_EQ(rel.unmatched_gpu, 0u);
  EXPECT_EQ(rel.launches_without_gpu, 0u);
  const EventIndex gemm = find(m, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8");
  const EventIndex launch = rel.launcher_of(gemm);
  ASSERT_NE(launch, kNoEvent);
  EXPECT_EQ(m.name_of(launch), "cudaLaunchKernel");
  EXPECT_EQ(m.ts_ns[launch], 10000);
  EXPECT_EQ(rel.op_of_launch(launch), find(m, "aten::mm"));  // the enclosing op

  const EventIndex add_kernel = find(m, "vectorized_elementwise_kernel");
  const EventIndex add_launch = rel.launcher_of(add_kernel);
  ASSERT_NE(add_launch, kNoEvent);
  EXPECT_EQ(m.ts_ns[add_launch], 205000);
  EXPECT_EQ(rel.op_of_launch(add_launch), find(m, "aten::add_"));  // other thread: by External id
}

// Five frames on one thread (with_stack=True). Ids as torch writes them; "train.py" calls
// "model.py(10): forward", which calls _call_impl and helper. The first frame's caller (id 3)
// started before the profiler, so it is not in the trace; "<built-in function len>" has no parent
// id at all. helper lies inside _call_impl's time span but names forward as its parent: the tree
// follows the ids, not the nesting.
const char* kPythonFrames = R"J({"traceEvents": [
  {"ph": "X", "cat": "python_function", "name": "train.py(42): main", "pid": 7, "tid": 7, "ts": 0, "dur": 100,
   "args": {"Python parent id": 3, "Python id": 10, "Ev Idx": 100}},
  {"ph": "X", "cat": "python_function", "name": "model.py(10): forward", "pid": 7, "tid": 7, "ts": 10, "dur": 80,
   "args": {"Python parent id": 10, "Python id": 11, "Ev Idx": 101}},
  {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1736): _call_impl", "pid": 7, "tid": 7,
   "ts": 20, "dur": 50, "args": {"Python parent id": 11, "Python id": 12, "Ev Idx": 102}},
  {"ph": "X", "cat": "python_function", "name": "model.py(12): helper", "pid": 7, "tid": 7, "ts": 30, "dur": 5,
   "args": {"Python parent id": 11, "Python id": 13, "Ev Idx": 103}},
  {"ph": "X", "cat": "python_function", "name": "<built-in function len>", "pid": 7, "tid": 7, "ts": 95, "dur": 1,
   "args": {"Python id": 14, "Ev Idx": 104}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 40, "dur": 5,
   "args": {"Python id": 99}}
]})J";

TEST(KinetoDriftPythonTree, ParentsFromPythonIdsWithAMissingCaller) {
  const TraceModel m = load_trace_text(kPythonFrames);
  EXPECT_EQ(m.report.repair_count(), 0u);
  ASSERT_EQ(m.python_frames.size(), 5u);  // the cpu_op's stray "Python id" is not a frame
  const EventIndex main = find(m, "train.py(42): main");
  const EventIndex forward = find(m, "model.py(10): forward");
  const EventIndex call_impl = find(m, "torch/nn/modules/module.py(1736): _call_impl");
  const EventIndex helper = find(m, "model.py(12): helper");
  const EventIndex len = find(m, "<built-in function len>");

  const PythonFrameArgs* frame = m.python_frame_of(call_impl);
  ASSERT_NE(frame, nullptr);
  EXPECT_EQ(frame->id, 12);
  EXPECT_EQ(frame->parent_id, 11);
  EXPECT_EQ(m.python_frame_of(len)->parent_id, kNoId);

  EXPECT_EQ(m.python_parent_of(main), kNoEvent);  // parent id 3 is not in the trace
  EXPECT_EQ(m.python_parent_of(forward), main);
  EXPECT_EQ(m.python_parent_of(call_impl), forward);
  EXPECT_EQ(m.python_parent_of(helper), forward);  // by id; nesting alone would say _call_impl
  EXPECT_EQ(m.relations.parent[helper], call_impl);
  EXPECT_EQ(m.python_parent_of(len), kNoEvent);  // a root
  EXPECT_EQ(m.python_parent_of(find(m, "aten::mm")), kNoEvent);
  EXPECT_EQ(m.relations.python_orphans, 1u);  // only main names a caller the trace lacks

  EXPECT_EQ(summarize_trace(m).python_frames, 5u);
}

TEST(KinetoDriftPythonTree, FramesOutOfIdOrderStillFindTheirCallers) {
  // Two threads written one after the other: thread 8's frames (ids 20, 21) come before thread 7's
  // (ids 10, 11, 12), so the ids are not in file order. 12's parent 9 is not in the trace.
  const TraceModel m = load_trace_text(R"J({"traceEvents": [
    {"ph": "X", "cat": "python_function", "name": "worker.py(5): run", "pid": 7, "tid": 8, "ts": 0, "dur": 50,
     "args": {"Python id": 20, "Python parent id": 11}},
    {"ph": "X", "cat": "python_function", "name": "worker.py(9): step", "pid": 7, "tid": 8, "ts": 5, "dur": 10,
     "args": {"Python id": 21, "Python parent id": 20}},
    {"ph": "X", "cat": "python_function", "name": "main.py(1): <module>", "pid": 7, "tid": 7, "ts": 0, "dur": 100,
     "args": {"Python id": 10}},
    {"ph": "X", "cat": "python_function", "name": "threading.py(990): start", "pid": 7, "tid": 7, "ts": 1, "dur": 2,
     "args": {"Python id": 11, "Python parent id": 10}},
    {"ph": "X", "cat": "python_function", "name": "main.py(7): late", "pid": 7, "tid": 7, "ts": 60, "dur": 2,
     "args": {"Python id": 12, "Python parent id": 9}}
  ]})J");
  EXPECT_EQ(m.python_parent_of(find(m, "worker.py(9): step")), find(m, "worker.py(5): run"));
  EXPECT_EQ(m.python_parent_of(find(m, "worker.py(5): run")), find(m, "threading.py(990): start"));
  EXPECT_EQ(m.python_parent_of(find(m, "threading.py(990): start")), find(m, "main.py(1): <module>"));
  EXPECT_EQ(m.python_parent_of(find(m, "main.py(1): <module>")), kNoEvent);
  EXPECT_EQ(m.python_parent_of(find(m, "main.py(7): late")), kNoEvent);
  EXPECT_EQ(m.relations.python_orphans, 1u);
}

TEST(KinetoDriftPythonTree, FramesSplitAcrossBatchesKeepTheirTree) {
  // The loader merges batches of about 1 MB: enough frames to span several batches, each the child
  // of the one before (ids 1000, 1001, ...), so parents cross batch boundaries.
  std::string text = R"({"traceEvents": [)";
  constexpr int kFrames = 20000;
  for (int i = 0; i < kFrames; ++i) {
    text += i ? ",\n" : "\n";
    text += R"({"ph": "X", "cat": "python_function", "name": "frame.py(1): f", "pid": 1, "tid": 1, "ts": )" +
            std::to_string(i) + R"(, "dur": 1, "args": {"Python parent id": )" + std::to_string(999 + i) +
            R"(, "Python id": )" + std::to_string(1000 + i) +
            R"(, "padding": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}})";
  }
  LoadOptions options;
  options.threads = 2;
  const TraceModel m = load_trace_text(text + "]}", options);
  ASSERT_EQ(m.python_frames.size(), static_cast<std::size_t>(kFrames));
  EXPECT_EQ(m.relations.python_orphans, 1u);  // the first frame's parent (999)
  for (int i = 1; i < kFrames; ++i)
    ASSERT_EQ(m.python_parent_of(static_cast<EventIndex>(i)), static_cast<EventIndex>(i - 1)) << i;
}

}  // namespace kineto_drift_relations_test
}  // namespace
}  // namespace ferret
