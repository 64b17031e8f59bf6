#include "analysis/timeline/trace_summary.h"

#include <gtest/gtest.h>

#include "ingest/trace_loader.h"

namespace ferret {
namespace {
namespace trace_summary_test {

// Host thread 10/11 (named), GPU device 0 streams 7 and 20. Hand counts:
//   cpu_op 2, cuda_runtime 1, kernel 2, memcpy 1, memset 1, memory_instant 1, instant 1,
//   flow_start 1, flow_end 1, metadata 2, other 1 ("Trace" span) = 14 events.
// Span: earliest ts 95 (the Trace span) .. latest end: the stream-20 kernel 300 + 50 = 350 us.
// Stream 7: kernels 1 (busy 20), memcpy 1 (5), memset 1 (2): busy 27 us. Stream 20: 1 kernel 50 us.
// Threads: (10, 11) holds 2 cpu_ops + 1 runtime + [memory] + the instant = 5 events; the
// "Trace" span (pid 10, tid 99) is not a host span: it is not a thread row.
const char* kTrace = R"J({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 100, "dur": 50},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 10, "tid": 11, "ts": 160, "dur": 10},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 110, "dur": 5, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 120, "dur": 20, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "nccl", "pid": 0, "tid": 20, "ts": 300, "dur": 50},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD", "pid": 0, "tid": 7, "ts": 141, "dur": 5},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "tid": 7, "ts": 147, "dur": 2},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 10, "tid": 11, "ts": 101, "s": "t", "args": {"Bytes": 8}},
  {"ph": "i", "name": "Iteration Start: PyTorch Profiler", "pid": 10, "tid": 11, "ts": 100, "s": "g"},
  {"ph": "s", "id": 1, "pid": 10, "tid": 11, "ts": 110, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 120, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": 10, "tid": 99, "ts": 95, "dur": 200},
  {"name": "thread_name", "ph": "M", "ts": 0, "pid": 10, "tid": 11, "args": {"name": "thread 11 (python)"}},
  {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}
]})J";

TEST(TraceSummary, CountsSpanStreamsAndThreads) {
  const TraceModel m = load_trace_text(kTrace);
  const TraceSummary s = summarize_trace(m);
  EXPECT_EQ(s.events, 14u);
  auto kind = [&](EventKind k) { return s.by_kind[static_cast<int>(k)]; };
  EXPECT_EQ(kind(EventKind::kCpuOp), 2u);
  EXPECT_EQ(kind(EventKind::kCudaRuntime), 1u);
  EXPECT_EQ(kind(EventKind::kKernel), 2u);
  EXPECT_EQ(kind(EventKind::kMemcpy), 1u);
  EXPECT_EQ(kind(EventKind::kMemset), 1u);
  EXPECT_EQ(kind(EventKind::kMemoryInstant), 1u);
  EXPECT_EQ(kind(EventKind::kInstant), 1u);
  EXPECT_EQ(kind(EventKind::kFlowStart), 1u);
  EXPECT_EQ(kind(EventKind::kFlowEnd), 1u);
  EXPECT_EQ(kind(EventKind::kMetadata), 2u);
  EXPECT_EQ(kind(EventKind::kOther), 1u);
  EXPECT_EQ(s.first_ns, 95000);  // metadata ts 0 does not count
  EXPECT_EQ(s.last_ns, 350000);

  ASSERT_EQ(s.streams.size(), 2u);
  EXPECT_EQ(s.streams[0].device, 0);
  EXPECT_EQ(s.streams[0].stream, 7);
  EXPECT_EQ(s.streams[0].kernels, 1u);
  EXPECT_EQ(s.streams[0].memcpys, 1u);
  EXPECT_EQ(s.streams[0].memsets, 1u);
  EXPECT_EQ(s.streams[0].busy_ns, 27000);
  EXPECT_EQ(s.streams[1].stream, 20);
  EXPECT_EQ(s.streams[1].kernels, 1u);
  EXPECT_EQ(s.streams[1].busy_ns, 50000);

  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(s.threads[0].pid, 10);
  EXPECT_EQ(s.threads[0].tid, 11);
  EXPECT_EQ(s.threads[0].events, 5u);
  EXPECT_EQ(s.threads[0].name, "thread 11 (python)");
}

TEST(TraceSummary, EmptyTraceHasAZeroSpan) {
  const TraceModel m =
      load_trace_text(R"({"traceEvents": [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "x"}}]})");
  const TraceSummary s = summarize_trace(m);
  EXPECT_EQ(s.events, 1u);
  EXPECT_EQ(s.first_ns, 0);
  EXPECT_EQ(s.last_ns, 0);
  EXPECT_TRUE(s.streams.empty());
  EXPECT_TRUE(s.threads.empty());
}

TEST(TraceSummary, StringThreadIdsAreNamedByTheirLabel) {
  // Legacy export: pid "CPU functions" has a synthetic id; tids are numbers.
  const TraceModel m =
      load_trace_text(R"([{"name": "a", "ph": "X", "ts": 1, "dur": 1, "tid": "worker", "pid": "CPU functions"}])");
  const TraceSummary s = summarize_trace(m);
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(s.threads[0].name, "worker");
}

}  // namespace trace_summary_test
}  // namespace
}  // namespace ferret
