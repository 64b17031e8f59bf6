// Kineto format drift, 2025-2026: each fixture is a few events written by hand from Kineto's
// output (field names and value types as its typed metadata writes them). Expected values are
// read off the fixture text; sums are worked out in the comments.
#include <string>

#include <gtest/gtest.h>

#include "analysis/analysis.h"
#include "analysis/operator/gpu_metrics.h"
#include "analysis/timeline/gpu_timeline.h"
#include "analysis/timeline/trace_summary.h"
#include "ingest/trace_loader.h"
#include "model/trace_model.h"
#include "report/trace/info_report.h"

namespace ferret {
namespace {
namespace kineto_drift_test {

EventIndex find(const TraceModel& m, std::string_view name, std::size_t nth = 0) {
  for (std::size_t e = 0; e < m.size(); ++e)
    if (m.name_of(static_cast<EventIndex>(e)) == name && nth-- == 0) return static_cast<EventIndex>(e);
  ADD_FAILURE() << "no event named " << name;
  return kNoEvent;
}

std::uint64_t count_kind(const TraceModel& m, EventKind k) {
  std::uint64_t n = 0;
  for (std::size_t e = 0; e < m.size(); ++e) n += m.kind[e] == k;
  return n;
}

// Stream 7 on device 0: a kernel, then the host waits for the stream (cudaStreamSynchronize) and
// an event (cudaEventSynchronize). Kineto 2025+ draws the two cuda_sync events on a row of their
// own, tid 1000007 named "stream 7 (sync)"; args.stream still says 7.
const char* kStreamSyncRow = R"J({"traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242, "ts": 990, "dur": 5,
   "args": {"cbid": 211, "correlation": 11}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 4242, "tid": 4242, "ts": 996, "dur": 60,
   "args": {"cbid": 131, "correlation": 12}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventSynchronize", "pid": 4242, "tid": 4242, "ts": 1057, "dur": 4,
   "args": {"cbid": 133, "correlation": 13}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 1000, "dur": 50,
   "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 11, "grid": [132, 1, 1],
            "block": [256, 1, 1]}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 1000007, "ts": 1050, "dur": 5,
   "args": {"cuda_sync_kind": "Stream Sync", "stream": 7, "correlation": 12, "device": 0, "context": 1}},
  {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": 1000007, "ts": 1058, "dur": 2,
   "args": {"cuda_sync_kind": "Event Sync", "wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 11,
            "wait_on_cuda_event_id": 3, "stream": 7, "correlation": 13, "device": 0, "context": 1}},
  {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
  {"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
  {"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 1000007, "args": {"name": "stream 7 (sync)"}}
]})J";

TEST(KinetoDriftSyncRow, SyncEventsOfTheSyncRowBelongToTheirStream) {
  const TraceModel m = load_trace_text(kStreamSyncRow);
  EXPECT_EQ(m.report.repair_count(), 0u);
  EXPECT_EQ(m.report.skip_count(), 0u);
  const EventIndex stream_sync = find(m, "Stream Sync");
  const EventIndex event_sync = find(m, "Event Sync");
  EXPECT_EQ(m.kind[stream_sync], EventKind::kSync);
  EXPECT_EQ(m.tid[stream_sync], 7);  // 1000007 - 1000000
  EXPECT_EQ(m.tid[event_sync], 7);
  EXPECT_EQ(m.pid[event_sync], 0);

  // `ferret info` streams: one row, device 0 stream 7, with the kernel and both syncs (as other);
  // busy 50 + 5 + 2 = 57 us.
  const TraceSummary s = summarize_trace(m);
  ASSERT_EQ(s.streams.size(), 1u);
  EXPECT_EQ(s.streams[0].device, 0);
  EXPECT_EQ(s.streams[0].stream, 7);
  EXPECT_EQ(s.streams[0].kernels, 1u);
  EXPECT_EQ(s.streams[0].other, 2u);
  EXPECT_EQ(s.streams[0].busy_ns, 57000);

  // The syncs still link to the calls that waited; the stream keeps its own name.
  EXPECT_EQ(m.relations.launcher_of(stream_sync), find(m, "cudaStreamSynchronize"));
  EXPECT_EQ(m.relations.launcher_of(event_sync), find(m, "cudaEventSynchronize"));
  EXPECT_EQ(m.thread_names.at({0, 7}), "stream 7 ");
}

TEST(KinetoDriftSyncRow, OnlyASyncWhoseStreamMatchesTheRowMoves) {
  // A sync written on its stream's own row (older Kineto) stays; a kernel is never moved, even on
  // a tid that looks like a sync row, and a host thread with a large OS tid is untouched.
  const TraceModel m = load_trace_text(R"J({"traceEvents": [
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 13, "ts": 10, "dur": 1,
     "args": {"stream": 13, "correlation": 1, "device": 0}},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 1000013, "ts": 20, "dur": 1,
     "args": {"stream": 14, "correlation": 2, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1000013, "ts": 30, "dur": 1,
     "args": {"stream": 13, "correlation": 3, "device": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1234567, "tid": 1000013, "ts": 40, "dur": 1,
     "args": {"stream": 13}}
  ]})J");
  EXPECT_EQ(m.tid[find(m, "Stream Sync", 0)], 13);
  EXPECT_EQ(m.tid[find(m, "Stream Sync", 1)], 1000013);  // args.stream 14 does not match the row
  EXPECT_EQ(m.tid[find(m, "k")], 1000013);
  EXPECT_EQ(m.tid[find(m, "aten::add")], 1000013);
}

// Two kernels with CUDA 12+ fields: the nested "occupancy" object (Kineto's typed metadata keys,
// and the spelling of an older draft), "priority", "channel", "channel_type", graph ids. The
// second kernel's "est. achieved occupancy %" comes after the nested object.
const char* kNewKernelFields = R"J({
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0,
                        "numSms": 132}],
  "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64", "pid": 0, "tid": 7,
   "ts": 100, "dur": 50,
   "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 21, "registers per thread": 168,
            "shared memory": 197632, "blocks per SM": 1.0, "warps per SM": 12.0, "grid": [132, 1, 1],
            "block": [384, 1, 1], "est. achieved occupancy %": 19,
            "occupancy": {"activeBlocksPerMultiprocessor": 1, "limitingFactors": "REGS|SMEM", "blockLimitRegs": 1,
                          "blockLimitSharedMem": 1, "blockLimitWarps": 5, "blockLimitBlocks": 32,
                          "blockLimitBarriers": 32, "allocatedRegistersPerBlock": 65536,
                          "allocatedSharedMemPerBlock": 198656},
            "graph id": 0, "graph node id": 0, "priority": -2, "channel": 3, "channel_type": 1}},
  {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>", "pid": 0, "tid": 7,
   "ts": 150, "dur": 30,
   "args": {"device": 0, "stream": 7, "correlation": 22, "registers per thread": 32, "shared memory": 0,
            "blocks per SM": 2.0, "warps per SM": 16.0, "grid": [264, 1, 1], "block": [256, 1, 1],
            "occupancy": {"limiting factor": "registers", "blocks per SM limit (registers)": 2},
            "channel": 0, "channel_type": 0, "est. achieved occupancy %": 50}}
  ]
})J";

TEST(KinetoDriftKernelFields, NestedOccupancyPriorityAndChannelParse) {
  const TraceModel m = load_trace_text(kNewKernelFields);
  EXPECT_EQ(m.report.repair_count(), 0u);
  EXPECT_EQ(m.report.skip_count(), 0u);
  ASSERT_EQ(m.size(), 2u);
  const KernelArgs* gemm = m.kernel_args_of(0);
  const KernelArgs* elementwise = m.kernel_args_of(1);
  ASSERT_NE(gemm, nullptr);
  ASSERT_NE(elementwise, nullptr);
  EXPECT_FLOAT_EQ(gemm->est_occupancy_pct, 19.0f);
  EXPECT_EQ(gemm->registers_per_thread, 168);
  EXPECT_EQ(gemm->shared_memory, 197632);
  EXPECT_EQ(gemm->grid[0], 132);
  EXPECT_EQ(gemm->block[0], 384);
  EXPECT_EQ(m.strings.view(gemm->limiting_factor), "REGS|SMEM");
  EXPECT_EQ(gemm->priority, -2);
  EXPECT_FLOAT_EQ(elementwise->est_occupancy_pct, 50.0f);  // read after the nested object
  EXPECT_FLOAT_EQ(elementwise->blocks_per_sm, 2.0f);
  EXPECT_EQ(m.strings.view(elementwise->limiting_factor), "registers");
  EXPECT_EQ(elementwise->priority, kNoPriority);
  EXPECT_EQ(m.counters.size(), 0u);  // channel / channel_type are not counter series

  // Occupancy as before: kernel-time weighted, (19 x 50 + 50 x 30) / 80 = 2450 / 80 = 30.625%.
  const GpuMetricsResult g = analyze_gpu_metrics(m, make_analysis_context(m, {}));
  ASSERT_EQ(g.devices.size(), 1u);
  EXPECT_DOUBLE_EQ(g.devices[0].achieved_occupancy_pct, 30.625);
}

// cudaEventRecord reaching stream 7 (category cuda_event, Kineto's 1 ns duration) between two
// kernels of 20 us and 10 us.
const char* kCudaEvent = R"J({"traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0, "dur": 4,
   "args": {"correlation": 31}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "pid": 1, "tid": 1, "ts": 5, "dur": 2,
   "args": {"correlation": 32}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 8, "dur": 4,
   "args": {"correlation": 33}},
  {"ph": "X", "cat": "kernel", "name": "kernel_a", "pid": 0, "tid": 7, "ts": 10, "dur": 20,
   "args": {"device": 0, "stream": 7, "correlation": 31}},
  {"ph": "X", "cat": "cuda_event", "name": "cudaEvent", "pid": 0, "tid": 7, "ts": 30.000, "dur": 0.001,
   "args": {"event_id": 3, "stream": 7, "correlation": 32, "device": 0, "context": 1}},
  {"ph": "X", "cat": "kernel", "name": "kernel_b", "pid": 0, "tid": 7, "ts": 31, "dur": 10,
   "args": {"device": 0, "stream": 7, "correlation": 33}}
]})J";

TEST(KinetoDriftCudaEvent, AKnownKindThatIsNotKernelTime) {
  const TraceModel m = load_trace_text(kCudaEvent);
  EXPECT_EQ(m.report.repair_count(), 0u);
  const EventIndex marker = find(m, "cudaEvent");
  EXPECT_EQ(m.kind[marker], EventKind::kCudaEvent);
  EXPECT_STREQ(event_kind_name(EventKind::kCudaEvent), "cuda_event");
  EXPECT_EQ(count_kind(m, EventKind::kOther), 0u);
  EXPECT_EQ(m.dur_ns[marker], 1);

  const TraceSummary s = summarize_trace(m);
  EXPECT_EQ(s.by_kind[static_cast<int>(EventKind::kCudaEvent)], 1u);
  ASSERT_EQ(s.streams.size(), 1u);
  EXPECT_EQ(s.streams[0].kernels, 2u);
  EXPECT_EQ(s.streams[0].other, 1u);

  // Kernel time is the two kernels only: 20 + 10 = 30 us, 2 kernels.
  const AnalysisContext ctx = make_analysis_context(m, {});
  const GpuMetricsResult g = analyze_gpu_metrics(m, ctx);
  ASSERT_EQ(g.devices.size(), 1u);
  EXPECT_EQ(g.devices[0].kernels, 2u);
  EXPECT_EQ(g.devices[0].kernel_ns, 30000);
  const GpuTimelineResult t = analyze_gpu_timeline(m, ctx);
  ASSERT_EQ(t.devices.size(), 1u);
  ASSERT_EQ(t.devices[0].streams.size(), 1u);
  EXPECT_EQ(t.devices[0].streams[0].activities, 2u);
}

// The instant Kineto writes where the recording window ends: global scope, pid and tid "".
TEST(KinetoDriftRecordWindowEnd, EmptyStringIdsAreQuietAndNotADevice) {
  const TraceModel m = load_trace_text(R"J({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0, "dur": 4,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 20,
     "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 40}
  ]})J");
  EXPECT_EQ(m.report.repair_count(), 0u);
  EXPECT_EQ(m.report.skip_count(), 0u);
  EXPECT_TRUE(m.report.notes.empty());
  ASSERT_EQ(m.size(), 3u);
  const EventIndex end = find(m, "Record Window End");
  EXPECT_EQ(m.kind[end], EventKind::kInstant);
  EXPECT_LT(m.pid[end], 0);  // a synthetic id naming "", not device or process 0
  EXPECT_EQ(m.id_labels.at(m.pid[end]), "");

  const TraceSummary s = summarize_trace(m);
  ASSERT_EQ(s.streams.size(), 1u);
  EXPECT_EQ(s.streams[0].device, 0);
  const GpuMetricsResult g = analyze_gpu_metrics(m, make_analysis_context(m, {}));
  ASSERT_EQ(g.devices.size(), 1u);
  EXPECT_EQ(g.devices[0].device, 0);
}

// ROCm 2026-06: kernels carry a logical stream id remapped per device (0, 1, ... on each GPU), so
// devices 2 and 3 both have a stream 1. Device 2: two kernels on stream 1; device 3: one on
// stream 1, one on stream 2.
const char* kRocmLogicalStreams = R"J({
  "hip_runtime_version": "7.1.25424", "roctracer_version": "4.1",
  "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 77, "tid": 77, "ts": 0, "dur": 3,
   "args": {"correlation": 101}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 77, "tid": 77, "ts": 4, "dur": 3,
   "args": {"correlation": 102}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 77, "tid": 78, "ts": 0, "dur": 3,
   "args": {"correlation": 103}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 77, "tid": 78, "ts": 4, "dur": 3,
   "args": {"correlation": 104}},
  {"ph": "X", "cat": "kernel", "name": "Cijk_Ailk_Bljk_HHS_BH_MT128x128x64", "pid": 2, "tid": 1, "ts": 10, "dur": 40,
   "args": {"device": 2, "stream": 1, "correlation": 101, "kernel": "Cijk_Ailk_Bljk_HHS_BH_MT128x128x64",
            "grid": [1024, 1, 1], "block": [256, 1, 1]}},
  {"ph": "X", "cat": "kernel", "name": "elementwise_kernel", "pid": 2, "tid": 1, "ts": 50, "dur": 10,
   "args": {"device": 2, "stream": 1, "correlation": 102, "grid": [512, 1, 1], "block": [256, 1, 1]}},
  {"ph": "X", "cat": "kernel", "name": "Cijk_Ailk_Bljk_HHS_BH_MT128x128x64", "pid": 3, "tid": 1, "ts": 12, "dur": 40,
   "args": {"device": 3, "stream": 1, "correlation": 103, "grid": [1024, 1, 1], "block": [256, 1, 1]}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 3, "tid": 2, "ts": 20,
   "dur": 70, "args": {"device": 3, "stream": 2, "correlation": 104, "grid": [8, 1, 1], "block": [256, 1, 1]}}
  ]
})J";

TEST(KinetoDriftRocm, LogicalStreamIdsStaySeparatePerDevice) {
  const TraceModel m = load_trace_text(kRocmLogicalStreams);
  EXPECT_EQ(m.info.platform, Platform::kRocm);
  EXPECT_EQ(m.report.repair_count(), 0u);
  EXPECT_EQ(m.relations.unmatched_gpu, 0u);

  // Streams by (device, stream): (2,1) 2 kernels busy 50 us, (3,1) 1 kernel 40 us, (3,2) 1 kernel 70 us.
  const TraceSummary s = summarize_trace(m);
  ASSERT_EQ(s.streams.size(), 3u);
  EXPECT_EQ(s.streams[0].device, 2);
  EXPECT_EQ(s.streams[0].stream, 1);
  EXPECT_EQ(s.streams[0].kernels, 2u);
  EXPECT_EQ(s.streams[0].busy_ns, 50000);
  EXPECT_EQ(s.streams[1].device, 3);
  EXPECT_EQ(s.streams[1].stream, 1);
  EXPECT_EQ(s.streams[1].kernels, 1u);
  EXPECT_EQ(s.streams[1].busy_ns, 40000);
  EXPECT_EQ(s.streams[2].device, 3);
  EXPECT_EQ(s.streams[2].stream, 2);
  EXPECT_EQ(s.streams[2].busy_ns, 70000);

  // The GPU timeline keeps them apart too: device 2 has one stream of 2 activities, device 3 two
  // streams of 1 each.
  const GpuTimelineResult t = analyze_gpu_timeline(m, make_analysis_context(m, {}));
  ASSERT_EQ(t.devices.size(), 2u);
  EXPECT_EQ(t.devices[0].device, 2);
  ASSERT_EQ(t.devices[0].streams.size(), 1u);
  EXPECT_EQ(t.devices[0].streams[0].stream, 1);
  EXPECT_EQ(t.devices[0].streams[0].activities, 2u);
  EXPECT_EQ(t.devices[1].device, 3);
  ASSERT_EQ(t.devices[1].streams.size(), 2u);
  EXPECT_EQ(t.devices[1].streams[0].stream, 1);
  EXPECT_EQ(t.devices[1].streams[0].activities, 1u);
  EXPECT_EQ(t.devices[1].streams[1].stream, 2);
  EXPECT_EQ(t.devices[1].streams[1].activities, 1u);
}

// A DDP all-reduce: the record_param_comms cpu_op and its NCCL kernel both carry the collective's
// "Seq" and "Comms Id" (Kineto writes the id as an unsigned 64-bit value).
const char* kCollectiveIds = R"J({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": 100, "dur": 20,
   "args": {"External id": 40, "Collective name": "allreduce", "dtype": "Float", "In msg nelems": 6553600,
            "Out msg nelems": 6553600, "In split size": "[]", "Out split size": "[]", "Global rank start": 0,
            "Global rank stride": 1, "Group size": 8, "Process Group Name": "0",
            "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]", "Rank": 3,
            "Seq": 17, "Comms Id": 139914267580416, "Is asynchronized op": false}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
   "pid": 0, "tid": 20, "ts": 130, "dur": 800,
   "args": {"device": 0, "stream": 20, "correlation": 501, "Collective name": "allreduce", "dtype": "Float",
            "In msg nelems": 6553600, "Out msg nelems": 6553600, "Group size": 8, "Process Group Name": "0",
            "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]", "Rank": 3, "Seq": 17,
            "Comms Id": 139914267580416}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": 200, "dur": 20,
   "args": {"Collective name": "allreduce", "Seq": 18, "Comms Id": 18446744073709551615}}
]})J";

TEST(KinetoDriftCollectives, SeqAndCommsIdOnOpAndKernel) {
  const TraceModel m = load_trace_text(kCollectiveIds);
  EXPECT_EQ(m.report.repair_count(), 0u);
  const CollectiveArgs* op = m.collective_args_of(0);
  const CollectiveArgs* kernel = m.collective_args_of(1);
  const CollectiveArgs* next = m.collective_args_of(2);
  ASSERT_NE(op, nullptr);
  ASSERT_NE(kernel, nullptr);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(op->seq, 17);
  EXPECT_EQ(op->comms_id, 139914267580416);
  EXPECT_EQ(op->group_size, 8);
  EXPECT_EQ(op->rank, 3);
  EXPECT_EQ(kernel->seq, 17);
  EXPECT_EQ(kernel->comms_id, op->comms_id);  // the same collective
  EXPECT_EQ(next->seq, 18);
  EXPECT_EQ(static_cast<std::uint64_t>(next->comms_id), 18446744073709551615ull);  // kept as its bit pattern
}

// Inductor's Triton kernels as cpu_ops (torch 2.6+ with record_shapes): backend, hash, file,
// launch config and the compiler's FLOP and byte estimates.
const char* kInductorKernels = R"J({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "triton_tem_fused_mm_0", "pid": 6583, "tid": 6583, "ts": 100, "dur": 30,
   "args": {"External id": 215, "Record function id": 0, "Ev Idx": 214, "Input Dims": [[1024, 1024], [1024, 1024]],
            "Input type": ["c10::Half", "c10::Half"], "num_warps": 8, "stream": 0, "kernel_backend": "triton",
            "kernel_name": "triton_tem_fused_mm_0", "kernel_kwargs": "BLOCK_M=128, BLOCK_N=128",
            "num_stages": 3, "kernel_file": "/tmp/torchinductor_root/h4/ch4lah5qtiqtyrlhee4kxisgq2na7hy.py",
            "kernel_hash": "ch4lah5qtiqtyrlhee4kxisgq2na7hyppsiit5mhcmnefm6d7vir", "kernel_flop": 2147483648,
            "kernel_num_gb": 0.006291456}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 6583, "tid": 6583, "ts": 140, "dur": 10,
   "args": {"External id": 216, "Input Dims": [[8, 8], [8, 8]]}},
  {"ph": "X", "cat": "cpu_op", "name": "triton_poi_fused_add_0", "pid": 6583, "tid": 6583, "ts": 160, "dur": 5,
   "args": {"num_warps": 1, "kernel_backend": "triton", "num_stages": 1,
            "kernel_hash": "cq2xkz", "kernel_num_gb": 1.5e-05}}
]})J";

TEST(KinetoDriftInductor, BackendHashFlopsAndBytesKept) {
  const TraceModel m = load_trace_text(kInductorKernels);
  EXPECT_EQ(m.report.repair_count(), 0u);
  ASSERT_EQ(m.inductor_kernels.size(), 2u);
  const InductorKernelArgs* mm = m.inductor_kernel_of(find(m, "triton_tem_fused_mm_0"));
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(m.strings.view(mm->backend), "triton");
  EXPECT_EQ(m.strings.view(mm->hash), "ch4lah5qtiqtyrlhee4kxisgq2na7hyppsiit5mhcmnefm6d7vir");
  EXPECT_EQ(mm->flop, 2147483648);  // 2 x 1024^3, past int32
  EXPECT_DOUBLE_EQ(mm->num_gb, 0.006291456);
  EXPECT_EQ(m.inductor_kernel_of(find(m, "aten::mm")), nullptr);
  const InductorKernelArgs* add = m.inductor_kernel_of(find(m, "triton_poi_fused_add_0"));
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->flop, -1);  // not given
  EXPECT_DOUBLE_EQ(add->num_gb, 1.5e-05);
  // The op's other args are read as before.
  const OpArgs* op = m.op_args_of(find(m, "triton_tem_fused_mm_0"));
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(m.strings.view(op->input_dims), "[[1024, 1024], [1024, 1024]]");

  const TraceSummary s = summarize_trace(m);
  EXPECT_EQ(s.inductor_kernels, 2u);
  const std::string info = info_text(m, s);
  EXPECT_NE(info.find("recorded       2 Inductor kernels\n"), std::string::npos) << info;  // nothing else recorded
}

TEST(KinetoDriftWrongTypes, NewFieldsOfTheWrongTypeAreIgnoredAndCounted) {
  // Each event has a wrong-typed new field: 6 repairs, one per event; nulls are absent, not errors.
  const TraceModel m = load_trace_text(R"J({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"priority": "high"}},
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 2, "dur": 1, "args": {"occupancy": 5}},
    {"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": 7, "ts": 3, "dur": 1,
     "args": {"occupancy": {"limitingFactors": 4}, "Comms Id": null, "priority": null}},
    {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 4, "dur": 1,
     "args": {"Collective name": "allreduce", "Comms Id": [1]}},
    {"ph": "X", "cat": "cpu_op", "name": "t", "pid": 1, "tid": 1, "ts": 5, "dur": 1,
     "args": {"kernel_backend": 3, "kernel_flop": "lots", "kernel_num_gb": null}},
    {"ph": "X", "cat": "python_function", "name": "p", "pid": 1, "tid": 1, "ts": 6, "dur": 1,
     "args": {"Python id": "x", "Python parent id": null}}
  ]})J");
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m.report.repair_count(), 6u);
  EXPECT_EQ(m.report.skip_count(), 0u);
  for (EventIndex e = 0; e < 3; ++e) {
    const KernelArgs* k = m.kernel_args_of(e);
    if (k == nullptr) continue;
    EXPECT_EQ(k->priority, kNoPriority);
    EXPECT_EQ(k->limiting_factor, kEmptyStr);
  }
  EXPECT_EQ(m.collective_args_of(3)->comms_id, kNoId);
  EXPECT_EQ(m.inductor_kernel_of(4), nullptr);  // nothing usable was given
  EXPECT_EQ(m.python_frame_of(5), nullptr);
}

}  // namespace kineto_drift_test
}  // namespace
}  // namespace ferret
