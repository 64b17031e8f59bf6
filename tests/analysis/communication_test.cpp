#include "analysis/timeline/communication.h"

#include <gtest/gtest.h>

#include <limits>

#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace communication_test {

CommunicationResult analyze(const TraceModel& m, AnalysisOptions options = {}) {
  return analyze_communication(m, make_analysis_context(m, options));
}

const CollectiveStats* stats_of(const CommunicationResult& r, Collective kind) {
  for (const CollectiveStats& s : r.by_collective)
    if (s.kind == kind) return &s;
  return nullptr;
}

TEST(Communication, ParsesCollectiveNamesFromEverySource) {
  EXPECT_EQ(parse_collective("allreduce"), Collective::kAllReduce);
  EXPECT_EQ(parse_collective("nccl:all_reduce"), Collective::kAllReduce);
  EXPECT_EQ(parse_collective("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"),
            Collective::kAllReduce);
  EXPECT_EQ(parse_collective("_allgather_base"), Collective::kAllGather);
  EXPECT_EQ(parse_collective("nccl:_all_gather_base"), Collective::kAllGather);
  EXPECT_EQ(parse_collective("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            Collective::kAllGather);
  EXPECT_EQ(parse_collective("_reduce_scatter_base"), Collective::kReduceScatter);
  EXPECT_EQ(parse_collective("nccl:all_to_all"), Collective::kAllToAll);
  EXPECT_EQ(parse_collective("broadcast"), Collective::kBroadcast);
  EXPECT_EQ(parse_collective("ncclKernel_Reduce_RING_LL_Sum_float(x)"), Collective::kReduce);
  EXPECT_EQ(parse_collective("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"), Collective::kSendRecv);
  EXPECT_EQ(parse_collective("nccl:send"), Collective::kSendRecv);
  EXPECT_EQ(parse_collective("barrier"), Collective::kBarrier);
  EXPECT_EQ(parse_collective("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"), Collective::kUnknown);
}

TEST(Communication, BusFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kAllToAll, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kReduce, 8), 1.0);
  EXPECT_LT(bus_factor(Collective::kSendRecv, 8), 0);
  EXPECT_LT(bus_factor(Collective::kAllReduce, 0), 0);
}

TEST(Communication, DtypeSizesAsTheProfilerSpellsThem) {
  EXPECT_EQ(dtype_size("Float"), 4);
  EXPECT_EQ(dtype_size("float"), 4);
  EXPECT_EQ(dtype_size("BFloat16"), 2);
  EXPECT_EQ(dtype_size("c10::BFloat16"), 2);
  EXPECT_EQ(dtype_size("c10::Half"), 2);
  EXPECT_EQ(dtype_size("Long"), 8);
  EXPECT_EQ(dtype_size("long int"), 8);
  EXPECT_EQ(dtype_size("int"), 4);
  EXPECT_EQ(dtype_size("unsigned char"), 1);
  EXPECT_EQ(dtype_size("signed char"), 1);
  EXPECT_EQ(dtype_size("Float8_e4m3fn"), 1);
  EXPECT_EQ(dtype_size("Double"), 8);
  EXPECT_EQ(dtype_size("TensorList"), 0);
}

TEST(Communication, ProtocolFromKernelName) {
  EXPECT_STREQ(nccl_protocol("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"), "LL");
  EXPECT_STREQ(nccl_protocol("ncclDevKernel_AllReduce_Sum_bf16_RING_LL128(x)"), "LL128");
  EXPECT_STREQ(nccl_protocol("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"), "SIMPLE");
  EXPECT_STREQ(nccl_protocol("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"), "");
}

// One 200 us step on device 0: communication on stream 20, compute on stream 7.
//   K1 AllReduce 20-120 us: record_param_comms args (BFloat16, 10,000,000 elements, group 4)
//      -> 20,000,000 bytes / 100,000 ns = 200 GB/s algbw; busbw 200 x 2(4-1)/4 = 300 GB/s.
//   K3 kernel named SendRecv 130-140 inside nccl:all_to_all (Input Dims [[250, 4]] float)
//      -> AllToAll, 1000 x 4 = 4000 bytes, 0.4 GB/s; no group -> no busbw.
//   K4 ReduceScatter 145-150 with its own args (In 4000, Out 1000 Float, group 4)
//      -> 16000 bytes, 3.2 GB/s algbw, busbw 3.2 x 3/4 = 2.4 GB/s.
//   K5 Broadcast 160-170: only its name -> Broadcast, size unknown.
//   compute: gemm 50-90 and 135-155.
// Communication union: 100 + 10 + 5 + 10 = 125 us; overlapped by compute: [50,90) 40 + [135,140) 5
// + [145,150) 5 = 50 us; exposed 75 us. Shares of the 200 us window: 0.625, 0.375; overlap 50/125 = 0.4.
const char* kTrace = R"J({
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 4},
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 200},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
   "args": {"Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": 10000000, "Out msg nelems": 10000000,
            "Group size": 4, "Process Group Ranks": "[0, 1, 2, 3]"}},
  {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 12, "dur": 10},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 14, "dur": 2, "args": {"correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 40, "dur": 2, "args": {"correlation": 2}},
  {"ph": "X", "cat": "user_annotation", "name": "nccl:all_to_all", "pid": 1, "tid": 1, "ts": 50, "dur": 10,
   "args": {"Input Dims": [[250, 4]], "Input type": ["float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 52, "dur": 2, "args": {"correlation": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 62, "dur": 2, "args": {"correlation": 4}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 72, "dur": 2, "args": {"correlation": 5}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 80, "dur": 2, "args": {"correlation": 6}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)", "pid": 0, "tid": 20, "ts": 20, "dur": 100, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 50, "dur": 40, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(x)", "pid": 0, "tid": 20, "ts": 130, "dur": 10, "args": {"correlation": 3}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_ReduceScatter_RING_LL(x)", "pid": 0, "tid": 20, "ts": 145, "dur": 5,
   "args": {"correlation": 4, "Collective name": "_reduce_scatter_base", "In msg nelems": 4000, "Out msg nelems": 1000,
            "Group size": 4, "dtype": "Float"}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_Broadcast_RING_SIMPLE_Sum_int8_t(x)", "pid": 0, "tid": 20, "ts": 160, "dur": 10, "args": {"correlation": 5}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 135, "dur": 20, "args": {"correlation": 6}}
]})J";

TEST(Communication, ResolvesKindAndSizeFromArgsAnnotationAndName) {
  const TraceModel m = load_trace_text(kTrace);
  const CommunicationResult r = analyze(m);
  ASSERT_TRUE(r.present);
  EXPECT_EQ(r.backend, "nccl");
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, 4);
  ASSERT_EQ(r.calls.size(), 4u);
  const CollectiveCall& all_reduce = r.calls[0];
  EXPECT_EQ(all_reduce.kind, Collective::kAllReduce);
  EXPECT_EQ(all_reduce.bytes, 20000000);
  EXPECT_EQ(all_reduce.group_size, 4);
  EXPECT_DOUBLE_EQ(all_reduce.algbw_gbps, 200.0);
  EXPECT_DOUBLE_EQ(all_reduce.busbw_gbps, 300.0);
  EXPECT_STREQ(all_reduce.protocol, "LL");
  const CollectiveCall& all_to_all = r.calls[1];
  EXPECT_EQ(all_to_all.kind, Collective::kAllToAll);  // the annotation wins over "SendRecv"
  EXPECT_EQ(all_to_all.bytes, 4000);
  EXPECT_EQ(all_to_all.group_size, -1);
  EXPECT_DOUBLE_EQ(all_to_all.algbw_gbps, 0.4);
  EXPECT_LT(all_to_all.busbw_gbps, 0);
  const CollectiveCall& reduce_scatter = r.calls[2];
  EXPECT_EQ(reduce_scatter.kind, Collective::kReduceScatter);
  EXPECT_EQ(reduce_scatter.bytes, 16000);
  EXPECT_DOUBLE_EQ(reduce_scatter.algbw_gbps, 3.2);
  EXPECT_DOUBLE_EQ(reduce_scatter.busbw_gbps, 2.4);
  const CollectiveCall& broadcast = r.calls[3];
  EXPECT_EQ(broadcast.kind, Collective::kBroadcast);
  EXPECT_EQ(broadcast.bytes, -1);
  EXPECT_EQ(r.sized_calls, 3u);
  EXPECT_EQ(r.calls_with_group, 2u);

  const CollectiveStats* ar = stats_of(r, Collective::kAllReduce);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->calls, 1u);
  EXPECT_EQ(ar->bytes, 20000000);
  EXPECT_EQ(ar->time_ns, 100000);
  EXPECT_DOUBLE_EQ(ar->busbw_gbps, 300.0);
  EXPECT_DOUBLE_EQ(ar->best_large_busbw_gbps, 300.0);  // 20 MB >= 16 MiB
  EXPECT_EQ(ar->group_size, 4);
  EXPECT_EQ(r.by_collective.front().kind, Collective::kAllReduce);  // most time first
  const CollectiveStats* rs = stats_of(r, Collective::kReduceScatter);
  ASSERT_NE(rs, nullptr);
  EXPECT_LT(rs->best_large_busbw_gbps, 0);  // 16 kB is not a large message
}

// A damaged trace's sizes (dims past int64, element counts whose byte size overflows) saturate at
// the int64 maximum: the calls stay counted, and nothing overflows (UBSan checks that).
TEST(Communication, DamagedSizesSaturate) {
  const TraceModel m = load_trace_text(R"J({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "nccl:all_to_all", "pid": 1, "tid": 1, "ts": 0, "dur": 10,
   "args": {"Input Dims": [[99999999999999999999999, 4000000000000], [9223372036854775807]], "Input type": ["float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 2, "args": {"correlation": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 20, "dur": 20,
   "args": {"Collective name": "allgather", "dtype": "Double", "In msg nelems": 4611686018427387904,
            "Out msg nelems": 4611686018427387904, "Group size": 8}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 22, "dur": 2, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(x)", "pid": 0, "tid": 20, "ts": 5, "dur": 10, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(x)", "pid": 0, "tid": 20, "ts": 25, "dur": 10, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(x)", "pid": 0, "tid": 20, "ts": 45, "dur": 10, "args": {"correlation": 2}}
]})J");
  const CommunicationResult r = analyze(m);
  ASSERT_TRUE(r.present);
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  ASSERT_GE(r.calls.size(), 2u);
  for (const CollectiveCall& c : r.calls) EXPECT_EQ(c.bytes, kMax) << collective_name(c.kind);
  for (const CollectiveStats& s : r.by_collective) EXPECT_EQ(s.bytes, kMax) << collective_name(s.kind);
}

TEST(Communication, ExposedAndOverlappedTime) {
  const TraceModel m = load_trace_text(kTrace);
  const CommunicationResult r = analyze(m);
  EXPECT_EQ(r.window_ns, 200000);
  EXPECT_EQ(r.comm_ns, 125000);
  EXPECT_EQ(r.comm_device_ns, 125000);
  EXPECT_EQ(r.overlapped_ns, 50000);
  EXPECT_EQ(r.exposed_ns, 75000);
  EXPECT_DOUBLE_EQ(r.comm_share, 0.625);
  EXPECT_DOUBLE_EQ(r.exposed_share, 0.375);
  EXPECT_DOUBLE_EQ(r.overlap_share, 0.4);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].step, 1);
  EXPECT_EQ(r.steps[0].comm_ns, 125000);
  EXPECT_EQ(r.steps[0].exposed_ns, 75000);
  EXPECT_DOUBLE_EQ(r.steps[0].exposed_share, 0.375);
}

// A device without GPU activity selects nothing: an error naming the devices there are, never an
// empty analysis (docs/WINDOWS.md).
TEST(Communication, SelectingADeviceWithoutActivityIsAnError) {
  const TraceModel m = load_trace_text(kTrace);
  AnalysisOptions options;
  options.device = 1;
  EXPECT_THROW(analyze(m, options), SelectionError);
}

TEST(Communication, NoNcclKernelsIsNotPresent) {
  const TraceModel m = load_trace_text(R"J({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 50, "dur": 40}]})J");
  const CommunicationResult r = analyze(m);
  EXPECT_FALSE(r.present);
  EXPECT_TRUE(r.by_collective.empty());
  EXPECT_EQ(r.exposed_share, 0);
}

// Independent count (Python over the raw JSON; every NCCL kernel carries its collective args):
//   for e in kernels with 'nccl' in the name: a = e['args']
//     bytes[a['Collective name']] += max(a['In msg nelems'], a['Out msg nelems']) * {'Float': 4, 'Long': 8}[a['dtype']]
//   -> allreduce 306684384 bytes in 15 calls, 46762.159 us; broadcast 638712 bytes in 6 calls.
//   Fastest allreduce of >= 16 MiB: 31502336 bytes in 2424.415 us = 12.9938 GB/s; group of 2 -> factor 1.
// HTA's comm/comp overlap for this trace is 14.31% (reference-hta); it equals ferret's for
// ProfilerStep#5 alone (over steps 4-5 ferret gives 14.76%: HTA leaves step 4 out as well here).
TEST(CorpusCnnDdpA100, CollectiveBytesMatchArgs) {
  FERRET_REQUIRE_CORPUS(path, "cnn-ddp-a100-rank0of2-nccl.json.gz");
  const TraceModel m = load_trace(path);
  const CommunicationResult r = analyze(m);
  EXPECT_EQ(r.world_size, 2);
  const CollectiveStats* ar = stats_of(r, Collective::kAllReduce);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->calls, 15u);
  EXPECT_EQ(ar->bytes, 306684384);
  EXPECT_EQ(ar->time_ns, 46762159);
  EXPECT_EQ(ar->group_size, 2);
  EXPECT_NEAR(ar->best_large_busbw_gbps, 31502336.0 / 2424415.0, 1e-9);
  const CollectiveStats* bc = stats_of(r, Collective::kBroadcast);
  ASSERT_NE(bc, nullptr);
  EXPECT_EQ(bc->calls, 6u);
  EXPECT_EQ(bc->bytes, 638712);

  AnalysisOptions step5;
  step5.first_step = 5;
  step5.last_step = 5;
  EXPECT_NEAR(analyze(m, step5).overlap_share * 100, 14.31, 1.0);
}

// Independent count (Python: each NCCL kernel's launching cudaLaunchKernel, matched by correlation,
// sits inside a `nccl:*` user_annotation whose Input Dims / Input type give the input size):
//   all_to_all: [[384]] long 3072 + [[419430400]] unsigned char x2 + [[2846720]] int 11386880 = 850250752
//   all_reduce: [[19618307]] + [[26955536]] + [[26258430]] + [[5716654]] float = 314195708
//   _all_gather_base: input only, group size unknown -> no nccl-tests size.
// All 10 kernels are named SendRecv: the annotations say what they are.
// HTA's overlap is 11.81% (reference-hta); HTA drops the last step, so compare ProfilerStep#551.
TEST(CorpusRanks128, CollectiveBytesFromAnnotations) {
  FERRET_REQUIRE_CORPUS(path, "ranks-128job/rank-0.json.gz");
  const TraceModel m = load_trace(path);
  const CommunicationResult r = analyze(m);
  EXPECT_EQ(r.world_size, 128);
  EXPECT_EQ(r.calls.size(), 10u);
  const CollectiveStats* a2a = stats_of(r, Collective::kAllToAll);
  ASSERT_NE(a2a, nullptr);
  EXPECT_EQ(a2a->calls, 4u);
  EXPECT_EQ(a2a->bytes, 850250752);
  const CollectiveStats* ar = stats_of(r, Collective::kAllReduce);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->calls, 4u);
  EXPECT_EQ(ar->bytes, 314195708);
  EXPECT_LT(ar->busbw_gbps, 0);  // no group size recorded: no bus bandwidth
  const CollectiveStats* ag = stats_of(r, Collective::kAllGather);
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->calls, 2u);
  EXPECT_EQ(ag->sized_calls, 0u);
  EXPECT_EQ(stats_of(r, Collective::kSendRecv), nullptr);

  AnalysisOptions step551;
  step551.first_step = 551;
  step551.last_step = 551;
  EXPECT_NEAR(analyze(m, step551).overlap_share * 100, 11.81, 1.0);
}

// HTA's overlap for this trace is 47.03% over the steps it keeps (1009-1013; it drops the last).
TEST(CorpusA100Rank3, OverlapAgreesWithHta) {
  FERRET_REQUIRE_CORPUS(path, "a100-rank3of8-2022.json.gz");
  const TraceModel m = load_trace(path);
  AnalysisOptions options;
  options.first_step = 1009;
  options.last_step = 1013;
  EXPECT_NEAR(analyze(m, options).overlap_share * 100, 47.03, 1.0);
}

}  // namespace communication_test
}  // namespace
}  // namespace ferret
