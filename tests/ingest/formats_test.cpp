// Every trace generation, written by hand as a few events: the importer must classify each
// event, read its ids and link it. Expected values are read off the text of each trace.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/timeline/trace_summary.h"
#include "ingest/trace_loader.h"
#include "model/trace_model.h"

namespace ferret {
namespace {
namespace formats_test {

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

// torch 1.8-1.9: capitalised categories, flows "async", lowercase "external id", string tids
// ("stream 7"), [memory] instants without "cat".
const char* kKineto18 = R"J({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "Tesla V100-DGXS-32GB", "totalGlobalMem": 34084028416,
                        "computeMajor": 7, "computeMinor": 0, "numSms": 80}],
  "traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#5", "pid": 25738, "tid": "25738", "ts": 1000, "dur": 100, "args": {}},
  {"ph": "X", "cat": "Operator", "name": "aten::conv2d", "pid": 25738, "tid": "25738", "ts": 1010, "dur": 50,
   "args": {"external id": 7, "Input Dims": [[32, 3, 224, 224]]}},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 25738, "tid": "25738", "ts": 1020, "dur": 10,
   "args": {"correlation": 42, "external id": 7}},
  {"ph": "X", "cat": "Kernel", "name": "volta_scudnn_128x64_relu", "pid": 0, "tid": "stream 7", "ts": 1040, "dur": 30,
   "args": {"correlation": 42, "external id": 7, "device": 0, "stream": 7, "grid": [4, 2, 1], "block": [256, 1, 1]}},
  {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": "stream 7", "ts": 1075, "dur": 5,
   "args": {"correlation": 43, "bytes": 4096}},
  {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7", "ts": 1081, "dur": 1, "args": {}},
  {"ph": "s", "id": 42, "pid": 25738, "tid": 25738, "ts": 1020, "cat": "async", "name": "launch"},
  {"ph": "f", "id": 42, "pid": 0, "tid": "stream 7", "ts": 1040, "cat": "async", "name": "launch", "bp": "e"},
  {"ph": "i", "s": "t", "name": "[memory]", "pid": 25738, "tid": 25738, "ts": 1015,
   "args": {"Device Type": 1, "Device Id": 0, "Addr": 140000000, "Bytes": 512, "Total Allocated": 512, "Total Reserved": 2097152}},
  {"name": "thread_name", "ph": "M", "pid": 0, "tid": "stream 7", "args": {"name": "stream 7 "}}
  ]
})J";

TEST(FormatKineto18, CategoriesStringTidsAndLowercaseExternalId) {
  const TraceModel m = load_trace_text(kKineto18);
  ASSERT_EQ(m.size(), 10u);
  EXPECT_EQ(m.info.generation, FormatGeneration::kKineto18);
  EXPECT_EQ(m.info.platform, Platform::kCuda);
  EXPECT_EQ(m.info.schema_version, 1);
  // Operator x2, Runtime, Kernel, Memcpy, Memset, s, f, [memory], M.
  EXPECT_EQ(count_kind(m, EventKind::kCpuOp), 2u);
  EXPECT_EQ(count_kind(m, EventKind::kCudaRuntime), 1u);
  EXPECT_EQ(count_kind(m, EventKind::kKernel), 1u);
  EXPECT_EQ(count_kind(m, EventKind::kMemcpy), 1u);
  EXPECT_EQ(count_kind(m, EventKind::kMemset), 1u);
  EXPECT_EQ(count_kind(m, EventKind::kFlowStart), 1u);
  EXPECT_EQ(count_kind(m, EventKind::kFlowEnd), 1u);
  EXPECT_EQ(count_kind(m, EventKind::kMemoryInstant), 1u);
  EXPECT_EQ(count_kind(m, EventKind::kMetadata), 1u);

  const EventIndex kernel = find(m, "volta_scudnn_128x64_relu");
  EXPECT_EQ(m.pid[kernel], 0);
  EXPECT_EQ(m.tid[kernel], 7);                       // "stream 7" -> stream 7
  EXPECT_EQ(m.tid[find(m, "aten::conv2d")], 25738);  // "25738" -> 25738
  EXPECT_EQ(m.ts_ns[kernel], 1040000);
  EXPECT_EQ(m.dur_ns[kernel], 30000);
  const KernelArgs* ka = m.kernel_args_of(kernel);
  ASSERT_NE(ka, nullptr);
  EXPECT_EQ(ka->grid[0], 4);
  EXPECT_EQ(ka->grid[1], 2);
  EXPECT_EQ(ka->block[0], 256);
  const CopyArgs* ca = m.copy_args_of(find(m, "Memcpy HtoD (Pageable -> Device)"));
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->bytes, 4096);
  EXPECT_EQ(m.external_id[find(m, "aten::conv2d")], 7);
  EXPECT_EQ(m.external_id[find(m, "cudaLaunchKernel")], 7);
  ASSERT_EQ(m.memory_args.size(), 1u);
  EXPECT_EQ(m.memory_args[0].bytes, 512);
  EXPECT_EQ(m.memory_args[0].device_type, 1);
  EXPECT_EQ(m.memory_args[0].total_reserved, 2097152);
  const OpArgs* op = m.op_args_of(find(m, "aten::conv2d"));
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(m.strings.view(op->input_dims), "[[32, 3, 224, 224]]");
  // Thread names of string tids.
  auto it = m.thread_names.find({0, 7});
  ASSERT_NE(it, m.thread_names.end());
  EXPECT_EQ(it->second, "stream 7 ");

  // Links: kernel <- cudaLaunchKernel (correlation 42) <- aten::conv2d (encloses it).
  const EventIndex launch = find(m, "cudaLaunchKernel");
  EXPECT_EQ(m.relations.launcher_of(kernel), launch);
  EXPECT_EQ(m.relations.op_of_launch(launch), find(m, "aten::conv2d"));
  ASSERT_EQ(m.relations.steps.size(), 1u);
  EXPECT_EQ(m.relations.steps[0].number, 5);
  // Step [1000, 1100) us; its kernel ends at 1070 us: no extension.
  EXPECT_EQ(m.relations.steps[0].end_ns, 1100000);
  EXPECT_EQ(m.relations.steps[0].kernels, 1u);
  ASSERT_EQ(m.info.devices.size(), 1u);
  EXPECT_EQ(m.info.devices[0].num_sms, 80);
  EXPECT_EQ(m.info.devices[0].compute_major, 7);
  EXPECT_EQ(m.info.devices[0].total_global_mem, 34084028416);
}

// torch 1.10-1.13: lower-case categories, flows named async_cpu_to_gpu / forward_backward.
const char* kKineto110 = R"({
  "schemaVersion": 1,
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 1661203462584767, "dur": 20,
   "args": {"External id": 5, "Sequence number": 77, "Fwd thread id": 0}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 1661203462584770, "dur": 5,
   "args": {"External id": 5, "correlation": 900}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 3, "tid": 7, "ts": 1661203462584780, "dur": 8,
   "args": {"External id": 5, "correlation": 900, "stream": 7}},
  {"ph": "s", "id": 900, "pid": 10, "tid": 11, "ts": 1661203462584770, "cat": "async_cpu_to_gpu", "name": "async_cpu_to_gpu"},
  {"ph": "f", "id": 900, "pid": 3, "tid": 7, "ts": 1661203462584780, "cat": "async_cpu_to_gpu", "name": "async_cpu_to_gpu", "bp": "e"},
  {"ph": "s", "id": 77, "pid": 10, "tid": 11, "ts": 1661203462584767, "cat": "forward_backward", "name": "forward_backward"}
  ]
})";

TEST(FormatKineto110, TransitionalFlowNames) {
  const TraceModel m = load_trace_text(kKineto110);
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m.info.generation, FormatGeneration::kKineto110);
  EXPECT_EQ(m.info.platform, Platform::kCuda);
  EXPECT_EQ(count_kind(m, EventKind::kFlowStart), 2u);
  EXPECT_EQ(count_kind(m, EventKind::kFlowEnd), 1u);
  // Flow ids are kept in the correlation column.
  EXPECT_EQ(m.correlation[find(m, "forward_backward")], 77);
  const EventIndex kernel = find(m, "ampere_sgemm_128x64_nn");
  EXPECT_EQ(m.ts_ns[kernel], 1661203462584780000);  // integer us since the epoch, x1000
  EXPECT_EQ(m.relations.launcher_of(kernel), find(m, "cudaLaunchKernel"));
  EXPECT_EQ(m.relations.op_of_launch(find(m, "cudaLaunchKernel")), find(m, "aten::mm"));
  const OpArgs* op = m.op_args_of(find(m, "aten::mm"));
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->sequence_number, 77);
  EXPECT_EQ(op->fwd_thread_id, 0);
  EXPECT_TRUE(m.info.distributed.present);
  EXPECT_EQ(m.info.distributed.rank, 3);
  EXPECT_EQ(m.info.distributed.world_size, 8);
  EXPECT_EQ(m.info.distributed.backend, "nccl");
}

// torch 2.x: decimal ns-resolution ts relative to baseTimeNanoseconds, ac2g flows, traceName last.
const char* kKineto2 = R"({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912,
                        "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
  "cupti_version": 24, "cuda_runtime_version": 12040, "cuda_driver_version": 12040,
  "record_shapes": 1, "with_stack": 0, "profile_memory": 1,
  "job_owner": "somebody",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1751410836000000123,
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#6", "pid": 42, "tid": 42, "ts": 100.000, "dur": 900.500},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 42, "tid": 42, "ts": 110.250, "dur": 40.125,
   "args": {"External id": 3, "Record function id": 0, "Input Dims": [[8, 16], [16, 4]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
  {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/linear.py(116): forward", "pid": 42, "tid": 42, "ts": 105.000, "dur": 60.000},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 42, "tid": 42, "ts": 120.001, "dur": 4.928,
   "args": {"External id": 3, "cbid": 211, "correlation": 31}},
  {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7, "ts": 130.999, "dur": 12.001,
   "args": {"External id": 3, "device": 0, "stream": 7, "correlation": 31, "registers per thread": 168, "shared memory": 233472,
            "blocks per SM": 0.5, "warps per SM": 4.0, "grid": [66, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %": 6}},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#6", "pid": 0, "tid": 7, "ts": 130.999, "dur": 12.001},
  {"ph": "s", "id": 31, "pid": 42, "tid": 42, "ts": 120.001, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 31, "pid": 0, "tid": 7, "ts": 130.999, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 42, "tid": 42, "ts": 111.000,
   "args": {"Total Reserved": 2097152, "Total Allocated": 256, "Bytes": 256, "Addr": 139637410070528, "Device Id": 0, "Device Type": 1}},
  {"name": "process_name", "ph": "M", "ts": 0, "pid": 42, "tid": 0, "args": {"name": "python3"}}
  ],
  "traceName": "host_42.1751410836.pt.trace.json"
})";

TEST(FormatKineto2, DecimalTimestampsAndBaseTime) {
  const TraceModel m = load_trace_text(kKineto2);
  ASSERT_EQ(m.size(), 10u);
  EXPECT_EQ(m.info.generation, FormatGeneration::kKineto2);
  EXPECT_EQ(m.info.platform, Platform::kCuda);
  ASSERT_TRUE(m.info.base_time_ns.has_value());
  EXPECT_EQ(*m.info.base_time_ns, 1751410836000000123);  // beyond 2^53: a double would lose the 123
  EXPECT_EQ(m.info.trace_name, "host_42.1751410836.pt.trace.json");
  EXPECT_EQ(m.info.display_time_unit, "ms");
  EXPECT_EQ(m.info.versions.at("cuda_runtime_version"), "12040");
  EXPECT_EQ(m.info.versions.at("cupti_version"), "24");
  EXPECT_EQ(m.info.settings.at("record_shapes"), "1");
  EXPECT_EQ(m.info.settings.at("profile_memory"), "1");
  EXPECT_EQ(m.info.other_keys, std::vector<std::string>{"job_owner"});
  EXPECT_EQ(m.process_names.at(42), "python3");

  const EventIndex launch = find(m, "cudaLaunchKernel");
  EXPECT_EQ(m.ts_ns[launch], 120001);  // 120.001 us
  EXPECT_EQ(m.dur_ns[launch], 4928);   // 4.928 us
  const EventIndex kernel = find(m, "sm90_xmma_gemm_bf16bf16_bf16f32");
  EXPECT_EQ(m.ts_ns[kernel], 130999);
  EXPECT_EQ(m.dur_ns[kernel], 12001);
  const KernelArgs* ka = m.kernel_args_of(kernel);
  ASSERT_NE(ka, nullptr);
  EXPECT_EQ(ka->registers_per_thread, 168);
  EXPECT_EQ(ka->shared_memory, 233472);
  EXPECT_FLOAT_EQ(ka->blocks_per_sm, 0.5f);
  EXPECT_FLOAT_EQ(ka->warps_per_sm, 4.0f);
  EXPECT_FLOAT_EQ(ka->est_occupancy_pct, 6.0f);
  EXPECT_EQ(ka->grid[0], 66);
  EXPECT_EQ(ka->block[0], 384);
  EXPECT_EQ(m.kind[find(m, "torch/nn/modules/linear.py(116): forward")], EventKind::kPythonFunction);
  EXPECT_EQ(m.kind[find(m, "ProfilerStep#6", 1)], EventKind::kGpuUserAnnotation);
  EXPECT_EQ(count_kind(m, EventKind::kMemoryInstant), 1u);
  ASSERT_EQ(m.memory_args.size(), 1u);
  EXPECT_EQ(m.memory_args[0].addr, 139637410070528u);

  // Nesting: ProfilerStep#6 [100, 1000.5) > python forward [105, 165) > aten::addmm [110.25, 150.375)
  // > cudaLaunchKernel [120.001, 124.929).
  EXPECT_EQ(m.relations.parent[launch], find(m, "aten::addmm"));
  EXPECT_EQ(m.relations.parent[find(m, "aten::addmm")], find(m, "torch/nn/modules/linear.py(116): forward"));
  EXPECT_EQ(m.relations.op_of_launch(launch), find(m, "aten::addmm"));
  EXPECT_EQ(m.relations.launcher_of(kernel), launch);
  // The GPU-side ProfilerStep#6 annotation is not a step: one step, from the host span.
  ASSERT_EQ(m.relations.steps.size(), 1u);
  EXPECT_EQ(m.relations.steps[0].event, find(m, "ProfilerStep#6", 0));
  EXPECT_EQ(m.relations.steps[0].start_ns, 100000);
  EXPECT_EQ(m.relations.steps[0].end_ns, 1000500);
}

// Legacy autograd profiler (no Kineto): a bare array, pid "CPU functions", no "cat", integer us.
const char* kLegacy = R"([
{"name": "aten::zeros", "ph": "X", "ts": 856, "dur": 371, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "aten::empty", "ph": "X", "ts": 921, "dur": 69, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "ProfilerStep#0", "ph": "X", "ts": 1283, "dur": 32915, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "aten::conv2d", "ph": "X", "ts": 1502, "dur": 6592, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "ProfilerStep#1", "ph": "X", "ts": 34300, "dur": 30000, "tid": 1, "pid": "CPU functions", "args": {}}
])";

TEST(FormatLegacyAutograd, BareArrayWithStringPid) {
  const TraceModel m = load_trace_text(kLegacy);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m.info.generation, FormatGeneration::kLegacyAutograd);
  EXPECT_EQ(m.info.platform, Platform::kCpuOnly);
  EXPECT_EQ(count_kind(m, EventKind::kCpuOp), 5u);
  // "CPU functions" gets one synthetic (negative) pid, named in id_labels.
  const std::int32_t pid = m.pid[0];
  EXPECT_LT(pid, 0);
  for (std::size_t e = 0; e < m.size(); ++e) EXPECT_EQ(m.pid[e], pid);
  ASSERT_EQ(m.id_labels.count(pid), 1u);
  EXPECT_EQ(m.id_labels.at(pid), "CPU functions");
  EXPECT_EQ(m.ts_ns[find(m, "aten::zeros")], 856000);
  // aten::empty [921, 990) lies in aten::zeros [856, 1227).
  EXPECT_EQ(m.relations.parent[find(m, "aten::empty")], find(m, "aten::zeros"));
  EXPECT_EQ(m.relations.parent[find(m, "aten::conv2d")], find(m, "ProfilerStep#0"));
  // No GPU: neither step launched kernels, 0 >= 0.8 * 0, so both steps stay.
  ASSERT_EQ(m.relations.steps.size(), 2u);
  EXPECT_EQ(m.relations.steps[0].number, 0);
  EXPECT_EQ(m.relations.steps[1].number, 1);
}

// AMD ROCm: same categories, hip* runtime names; launches link to kernels by correlation.
const char* kRocm = R"({
  "deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X", "numSms": 304}],
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 5, "tid": 5, "ts": 10.0, "dur": 30.0, "args": {"External id": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 5, "tid": 5, "ts": 15.0, "dur": 5.0,
   "args": {"External id": 1, "correlation": 101}},
  {"ph": "X", "cat": "kernel", "name": "elementwise_kernel", "pid": 2, "tid": 0, "ts": 25.0, "dur": 3.0, "args": {"correlation": 101}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 5, "tid": 5, "ts": 50.0, "dur": 30.0, "args": {"External id": 2}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipExtModuleLaunchKernel", "pid": 5, "tid": 5, "ts": 55.0, "dur": 5.0,
   "args": {"External id": 2, "correlation": 102}},
  {"ph": "X", "cat": "kernel", "name": "Cijk_Ailk_Bljk_HHS_BH", "pid": 2, "tid": 0, "ts": 65.0, "dur": 9.0, "args": {"correlation": 102}}
  ]
})";

TEST(FormatRocm, HipRuntimeNamesLinkToKernels) {
  const TraceModel m = load_trace_text(kRocm);
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m.info.platform, Platform::kRocm);
  EXPECT_EQ(m.kind[find(m, "hipLaunchKernel")], EventKind::kCudaRuntime);
  EXPECT_EQ(m.relations.launcher_of(find(m, "elementwise_kernel")), find(m, "hipLaunchKernel"));
  EXPECT_EQ(m.relations.launcher_of(find(m, "Cijk_Ailk_Bljk_HHS_BH")), find(m, "hipExtModuleLaunchKernel"));
  EXPECT_EQ(m.relations.op_of_launch(find(m, "hipLaunchKernel")), find(m, "aten::add"));
  EXPECT_EQ(m.relations.op_of_launch(find(m, "hipExtModuleLaunchKernel")), find(m, "aten::mm"));
  EXPECT_EQ(m.relations.unmatched_gpu, 0u);
  EXPECT_EQ(m.relations.launches_without_gpu, 0u);
}

TEST(FormatRocm, HipNamesAloneMeanRocm) {
  // No device properties at all: the hip* launch name alone tells the platform.
  const TraceModel m = load_trace_text(R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 5, "tid": 5, "ts": 15, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 0, "ts": 25, "dur": 3, "args": {"correlation": 1}}]})");
  EXPECT_EQ(m.info.platform, Platform::kRocm);
}

// Triton and other JITs launch through the driver API: cat cuda_driver, cuLaunchKernel.
TEST(FormatCudaDriver, CuLaunchKernelLinksToItsKernel) {
  const TraceModel m = load_trace_text(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "triton_poi_fused_add_0", "pid": 9, "tid": 9, "ts": 2413669097390.000, "dur": 80.000,
     "args": {"External id": 3}},
    {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 9, "tid": 9, "ts": 2413669097399.166, "dur": 47.768,
     "args": {"External id": 3, "cbid": 307, "correlation": 35}},
    {"ph": "X", "cat": "kernel", "name": "triton_poi_fused_add_0", "pid": 0, "tid": 7, "ts": 2413669097450.500, "dur": 2.112,
     "args": {"correlation": 35, "External id": 3}}]})");
  ASSERT_EQ(m.size(), 3u);
  const EventIndex launch = find(m, "cuLaunchKernel");
  const EventIndex kernel = find(m, "triton_poi_fused_add_0", 1);
  EXPECT_EQ(m.kind[launch], EventKind::kCudaDriver);
  EXPECT_EQ(m.kind[kernel], EventKind::kKernel);
  EXPECT_EQ(m.ts_ns[launch], 2413669097399166);
  EXPECT_EQ(m.relations.launcher_of(kernel), launch);
  EXPECT_EQ(m.relations.gpu_of_launch(launch), std::vector<EventIndex>{kernel});
  EXPECT_EQ(m.relations.op_of_launch(launch), find(m, "triton_poi_fused_add_0", 0));
  EXPECT_EQ(m.info.platform, Platform::kCuda);
}

// A CUDA graph launch stands for many kernels, all carrying the launch's correlation id.
TEST(FormatCudaGraph, OneGraphLaunchManyKernels) {
  const TraceModel m = load_trace_text(R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"correlation": 99}},
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 20, "dur": 10, "args": {"correlation": 99}},
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 31, "dur": 10, "args": {"correlation": 99}},
    {"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": 7, "ts": 150, "dur": 10, "args": {"correlation": 99}}]})");
  const EventIndex launch = find(m, "cudaGraphLaunch");
  const std::vector<EventIndex> expected{find(m, "k1"), find(m, "k2"), find(m, "k3")};
  EXPECT_EQ(m.relations.gpu_of_launch(launch), expected);
  for (EventIndex k : expected) EXPECT_EQ(m.relations.launcher_of(k), launch);
  EXPECT_EQ(m.relations.unmatched_gpu, 0u);
  // The step [0, 100) us counts all three kernels and extends to k3's end: 150 + 10 = 160 us.
  ASSERT_EQ(m.relations.steps.size(), 1u);
  EXPECT_EQ(m.relations.steps[0].kernels, 3u);
  EXPECT_EQ(m.relations.steps[0].end_ns, 160000);
}

// MTIA back end: mtia_* categories.
TEST(FormatMtia, MtiaCategoriesMeanMtia) {
  const TraceModel m = load_trace_text(R"({"traceEvents": [
    {"ph": "X", "cat": "mtia_runtime", "name": "mtiaLaunchKernel", "pid": 1, "tid": 1, "ts": 0, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "mtia_ccp_events", "name": "k", "pid": 0, "tid": 3, "ts": 10, "dur": 5, "args": {"correlation": 1}}]})");
  EXPECT_EQ(m.info.platform, Platform::kMtia);
  EXPECT_EQ(m.kind[0], EventKind::kCudaRuntime);
  EXPECT_EQ(m.kind[1], EventKind::kKernel);
  EXPECT_EQ(m.relations.launcher_of(1), 0u);
}

// Old traces name device properties "computeProperties".
TEST(FormatHeader, ComputePropertiesIsTheOldDevicesKey) {
  const TraceModel m =
      load_trace_text(R"({"computeProperties": [{"id": 0, "name": "Tesla V100-DGXS-32GB", "numSms": 80},
                                                                  {"id": 1, "name": "Tesla V100-DGXS-32GB", "numSms": 80}],
                                          "traceEvents": []})");
  ASSERT_EQ(m.info.devices.size(), 2u);
  EXPECT_EQ(m.info.devices[1].id, 1);
  EXPECT_EQ(m.info.devices[1].num_sms, 80);
  EXPECT_EQ(m.size(), 0u);
}

TEST(FormatHeader, MissingDistributedFieldsStayUnknown) {
  const TraceModel m = load_trace_text(R"({"distributedInfo": {"backend": "nccl"}, "traceEvents": []})");
  EXPECT_TRUE(m.info.distributed.present);
  EXPECT_EQ(m.info.distributed.rank, -1);
  EXPECT_EQ(m.info.distributed.world_size, -1);
  const TraceModel none = load_trace_text(R"({"traceEvents": []})");
  EXPECT_FALSE(none.info.distributed.present);
}

// A rank past any job (2^40 was cut to 0: "rank 0 appears twice"), a negative one (renumbered
// silently) or one that is no integer is left out and said; the job numbers such a file by its
// name or order.
TEST(FormatHeader, RanksNoJobHasAreLeftOutAndSaid) {
  for (const char* rank : {"1099511627776", "-3", "\"three\"", "1e30", "18446744073709551615"}) {
    const TraceModel m = load_trace_text(std::string(R"({"distributedInfo": {"backend": "nccl", "rank": )") + rank +
                                         R"(, "world_size": 0}, "traceEvents": []})");
    EXPECT_EQ(m.info.distributed.rank, -1) << rank;
    EXPECT_EQ(m.info.distributed.world_size, -1) << rank;  // 0 ranks: none
    std::string lines;
    for (const std::string& l : m.report.lines()) lines += l + "\n";
    EXPECT_NE(lines.find("distributedInfo.rank"), std::string::npos) << rank << ": " << lines;
    EXPECT_NE(lines.find("distributedInfo.world_size outside 1 to 2^24 ignored"), std::string::npos) << lines;
  }
  const TraceModel sound =
      load_trace_text(R"({"distributedInfo": {"rank": 16777215, "world_size": 16777215}, "traceEvents": []})");
  EXPECT_EQ(sound.info.distributed.rank, 16777215);
  EXPECT_EQ(sound.report.repair_count(), 0u);
}

// A root key written with escapes is the key it decodes to ("trace\u0045vents" analysed 0 events
// before); one decoding to a control character keeps its escapes and is no key ferret reads.
TEST(FormatHeader, RootKeysWrittenWithEscapesAreDecoded) {
  const std::string events = R"([{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}])";
  EXPECT_EQ(load_trace_text(R"({"trace\u0045vents": )" + events + "}").size(), 1u);
  EXPECT_EQ(load_trace_text(R"({"\u0074race\u0045vent\u0073": )" + events + "}").size(), 1u);
  const TraceModel control = load_trace_text(R"({"traceEvents\u0000": )" + events + R"(, "traceEvents": []})");
  EXPECT_EQ(control.size(), 0u);
  const TraceModel version = load_trace_text(R"({"torch\u005fversion": "2.5.1", "traceEvents": []})");
  EXPECT_EQ(version.info.versions.size(), 1u);
}

// A ProfilerStep span without a duration (one broken and repaired to 0) is not a 0 us step: it
// ends where the next step starts, and the last such step is left out; both said.
TEST(FormatSteps, AStepWithoutADurationEndsAtTheNextOrIsLeftOut) {
  const TraceModel m = load_trace_text(R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 0},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 250, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1, "ts": 350, "dur": -5}]})");
  const std::vector<Step>& steps = m.relations.steps;
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[1].number, 2);
  EXPECT_EQ(steps[1].start_ns, 100'000);
  EXPECT_EQ(steps[1].end_ns, 250'000);
  EXPECT_EQ(steps[2].number, 3);
  std::string notes;
  for (const std::string& n : m.report.notes) notes += n + "\n";
  EXPECT_NE(
      notes.find("1 ProfilerStep span without a duration (a broken one, repaired to 0) ended at the next step's start"),
      std::string::npos)
      << notes;
  EXPECT_NE(notes.find("last step ProfilerStep#4 has no duration (a broken one, repaired to 0): left out"),
            std::string::npos)
      << notes;
}

// Collective args on record_param_comms and NCCL kernels.
TEST(FormatArgs, CollectiveArguments) {
  const TraceModel m = load_trace_text(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 0, "dur": 50,
     "args": {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1048576, "Out msg nelems": 1048576,
              "Group size": 8, "Rank": 3, "Process Group Name": "0", "Process Group Ranks": [0, 1, 2, 3, 4, 5, 6, 7], "Seq": 12}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 20, "ts": 60, "dur": 500,
     "args": {"Collective name": "allreduce", "In msg nelems": 1048576, "Group size": 8}}]})");
  ASSERT_EQ(m.collective_args.size(), 2u);
  const CollectiveArgs* c = m.collective_args_of(0);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(m.strings.view(c->collective_name), "allreduce");
  EXPECT_EQ(m.strings.view(c->dtype), "Float");
  EXPECT_EQ(c->in_msg_nelems, 1048576);
  EXPECT_EQ(c->out_msg_nelems, 1048576);
  EXPECT_EQ(c->group_size, 8);
  EXPECT_EQ(c->rank, 3);
  EXPECT_EQ(c->seq, 12);
  EXPECT_EQ(m.strings.view(c->process_group_ranks), "[0, 1, 2, 3, 4, 5, 6, 7]");
  ASSERT_NE(m.collective_args_of(1), nullptr);
  EXPECT_EQ(m.collective_args_of(1)->group_size, 8);
}

TEST(FormatArgs, CounterEventsKeepEverySeries) {
  const TraceModel m = load_trace_text(R"({"traceEvents": [
    {"ph": "C", "name": "GPU Memory", "pid": 0, "tid": 0, "ts": 5, "args": {"allocated": 1024, "reserved": 4096.5}}]})");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.kind[0], EventKind::kCounter);
  ASSERT_EQ(m.counters.size(), 2u);
  EXPECT_EQ(m.strings.view(m.counters[0].series), "allocated");
  EXPECT_DOUBLE_EQ(m.counters[0].value, 1024.0);
  EXPECT_EQ(m.strings.view(m.counters[1].series), "reserved");
  EXPECT_DOUBLE_EQ(m.counters[1].value, 4096.5);
}

// ids beyond 64 bits-signed keep their bit pattern; ids as strings are read as numbers.
TEST(FormatArgs, LargeAndStringCorrelationIds) {
  const TraceModel m = load_trace_text(R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0, "dur": 5,
     "args": {"correlation": 18446744073709551615}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"correlation": "18446744073709551615"}}]})");
  EXPECT_EQ(m.correlation[0], -1);  // UINT64_MAX's bit pattern
  EXPECT_EQ(m.relations.launcher_of(1), 0u);
}

}  // namespace formats_test
}  // namespace
}  // namespace ferret

namespace ferret {
namespace {
namespace formats_test {

// torch 2.1+ records "Input Strides" and "Concrete Inputs" beside the shapes (record_shapes=True):
// a convolution's stride, padding and dilation live only in the concrete inputs. Both are kept
// as their JSON text, like "Input Dims".
TEST(FormatKineto2, InputStridesAndConcreteInputsAreKept) {
  const TraceModel m = load_trace_text(R"({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::convolution", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
   "args": {"Input Dims": [[8, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []],
            "Input type": ["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
            "Input Strides": [[150528, 50176, 224, 1], [147, 49, 7, 1], [], [], [], [], [], [], []],
            "Concrete Inputs": ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 20, "dur": 5,
   "args": {"Input Dims": [[8, 64, 112, 112]], "Input type": ["float"]}}
  ]})");
  const OpArgs* conv = m.op_args_of(find(m, "aten::convolution"));
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(m.strings.view(conv->input_strides),
            R"([[150528, 50176, 224, 1], [147, 49, 7, 1], [], [], [], [], [], [], []])");
  EXPECT_EQ(m.strings.view(conv->concrete_inputs),
            R"(["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"])");
  // An op recorded without them (torch < 2.1) has neither.
  const OpArgs* relu = m.op_args_of(find(m, "aten::relu"));
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->input_strides, kEmptyStr);
  EXPECT_EQ(relu->concrete_inputs, kEmptyStr);
}

}  // namespace formats_test
}  // namespace
}  // namespace ferret
