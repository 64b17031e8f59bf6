#include "analysis/causal/host_blockers.h"

#include <gtest/gtest.h>

#include <string>

#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace host_blockers_test {

using test::span;
using test::trace;

std::string host(const char* cat, const std::string& name, double ts, double dur, int corr = -1) {
  return span(cat, name, 1, 1, ts, dur, corr >= 0 ? "\"correlation\":" + std::to_string(corr) : "");
}
std::string gpu(const char* cat, const std::string& name, double ts, double dur, int corr,
                const std::string& extra = "") {
  return span(cat, name, 0, 7, ts, dur, "\"correlation\":" + std::to_string(corr) + extra);
}

TEST(HostBlockers, NameClasses) {
  EXPECT_TRUE(is_host_sync_call("cudaStreamSynchronize"));
  EXPECT_TRUE(is_host_sync_call("hipDeviceSynchronize"));
  EXPECT_TRUE(is_host_sync_call("cuCtxSynchronize"));
  EXPECT_FALSE(is_host_sync_call("cudaStreamWaitEvent"));
  EXPECT_TRUE(is_host_sync_op("aten::item"));
  EXPECT_TRUE(is_host_sync_op("aten::_local_scalar_dense"));
  EXPECT_TRUE(is_allocator_call("cudaMalloc"));
  EXPECT_TRUE(is_allocator_call("hipFree"));
  EXPECT_TRUE(is_allocator_call("cuMemAlloc_v2"));
  EXPECT_FALSE(is_allocator_call("cudaMallocAsync"));  // stream-ordered: cheap
  EXPECT_TRUE(is_sync_copy_call("cudaMemcpy"));
  EXPECT_TRUE(is_sync_copy_call("cudaMemset"));
  EXPECT_TRUE(is_sync_copy_call("hipMemcpyWithStream"));
  EXPECT_FALSE(is_sync_copy_call("cudaMemcpyAsync"));
  EXPECT_TRUE(is_launch_call("cudaLaunchKernel"));
  EXPECT_TRUE(is_launch_call("cuLaunchKernelEx"));
  EXPECT_TRUE(is_launch_call("hipGraphLaunch"));
  EXPECT_TRUE(is_launch_call("cudaMemsetAsync"));
  EXPECT_FALSE(is_launch_call("cudaMemcpy"));
}

// aten::is_nonzero [5,45) > aten::item [10,40) > _local_scalar_dense [12,38) > cudaMemcpyAsync
// [13,15) (a pageable DtoH read at [34,35) on the GPU) and cudaStreamSynchronize [16,37); later a
// top-level cudaDeviceSynchronize [70,72). Kernels K1 [4,33) and K2 [55,60).
// Outermost syncs: aten::item (30 us) and cudaDeviceSynchronize (2 us): 2 syncs, 32 us.
// Stall: aten::item returns at 40, the GPU next works at 55: 15 us (< its 30 us). The device sync
// returns at 72, the window's end: nothing follows, 0. The pageable read inside aten::item is the
// sync's cost, not a pageable-copy cost.
const std::string kSyncs = trace({
    host("cpu_op", "aten::is_nonzero", 5, 40),
    host("cpu_op", "aten::item", 10, 30),
    host("cpu_op", "aten::_local_scalar_dense", 12, 26),
    host("cuda_runtime", "cudaMemcpyAsync", 13, 2, 5),
    host("cuda_runtime", "cudaStreamSynchronize", 16, 21),
    host("cuda_runtime", "cudaLaunchKernel", 1, 2, 1),
    host("cuda_runtime", "cudaLaunchKernel", 50, 2, 2),
    host("cuda_runtime", "cudaDeviceSynchronize", 70, 2),
    gpu("kernel", "k1", 4, 29, 1),
    gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 34, 1, 5, ",\"bytes\":4"),
    gpu("kernel", "k2", 55, 5, 2),
});

TEST(HostBlockers, OutermostSyncsCallersAndStall) {
  const TraceModel m = load_trace_text(kSyncs);
  const HostBlockersResult r = analyze_host_blockers(m, make_analysis_context(m, {}));
  const HostSyncs& s = r.syncs;
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.total_ns, 32 * 1000);
  EXPECT_EQ(s.gpu_stall_ns, 15 * 1000);
  ASSERT_EQ(s.by_name.size(), 2u);
  EXPECT_EQ(s.by_name[0].name, "aten::item");
  EXPECT_EQ(s.by_name[1].name, "cudaDeviceSynchronize");
  ASSERT_EQ(s.callers.size(), 2u);
  EXPECT_EQ(s.callers[0].name, "aten::is_nonzero");
  EXPECT_EQ(s.callers[1].name, "(top level)");
  EXPECT_TRUE(s.per_step.empty());  // no steps
  EXPECT_EQ(r.copies.pageable_copies, 1u);
  EXPECT_EQ(r.copies.pageable_in_syncs, 1u);
  EXPECT_EQ(r.copies.pageable_cost_ns, 0);
  EXPECT_EQ(r.copies.pageable_host_ns, 2 * 1000);
}

// Each sync by what the code did: a read (aten::item, a stream sync inside a copy to the host), a
// data-dependent shape (a stream sync inside aten::nonzero), an op that syncs by itself, and an
// explicit device sync with no op around it.
TEST(HostBlockers, SyncKinds) {
  const TraceModel m = load_trace_text(trace({
      host("cpu_op", "aten::item", 0, 10),
      host("cpu_op", "aten::copy_", 100, 20),
      host("cuda_runtime", "cudaStreamSynchronize", 105, 12),
      host("cpu_op", "aten::nonzero", 200, 40),
      host("cuda_runtime", "cudaStreamSynchronize", 210, 25),
      host("cpu_op", "fbgemm::permute_sparse_features", 300, 10),
      host("cuda_runtime", "cudaStreamSynchronize", 302, 6),
      host("cuda_runtime", "cudaDeviceSynchronize", 400, 30),
  }));
  const HostSyncs s = analyze_host_blockers(m, make_analysis_context(m, {})).syncs;
  EXPECT_EQ(s.count, 5u);
  EXPECT_EQ(s.reads.count, 2u);
  EXPECT_EQ(s.reads.total_ns, (10 + 12) * 1000);
  EXPECT_EQ(s.data_dependent.count, 1u);
  EXPECT_EQ(s.data_dependent.total_ns, 25 * 1000);
  ASSERT_EQ(s.data_dependent.where.size(), 1u);
  EXPECT_EQ(s.data_dependent.where[0].name, "aten::nonzero");
  EXPECT_EQ(s.inside_ops.count, 1u);
  EXPECT_EQ(s.inside_ops.where[0].name, "fbgemm::permute_sparse_features");
  EXPECT_EQ(s.explicit_calls.count, 1u);
  EXPECT_EQ(s.explicit_calls.total_ns, 30 * 1000);
  EXPECT_EQ(s.explicit_calls.where[0].name, "cudaDeviceSynchronize");
}

// Three steps with one kernel each. cudaMalloc in step 1 (warm-up), cudaFree in step 2, cudaMalloc
// in step 3, and a cudaMallocAsync (stream-ordered, not counted). Steady state = steps 2 and 3:
// 2 calls, 2 + 10 = 12 us over 200 us of steps.
TEST(HostBlockers, AllocatorCallsAfterTheFirstStep) {
  std::vector<std::string> ev;
  for (int i = 0; i < 3; ++i) {
    ev.push_back(host("user_annotation", "ProfilerStep#" + std::to_string(i + 1), 100.0 * i, 100));
    ev.push_back(host("cuda_runtime", "cudaLaunchKernel", 100.0 * i + 10, 5, i + 1));
    ev.push_back(gpu("kernel", "k", 100.0 * i + 20, 10, i + 1));
  }
  ev.push_back(host("cuda_runtime", "cudaMalloc", 5, 3));
  ev.push_back(host("cuda_runtime", "cudaFree", 150, 2));
  ev.push_back(host("cuda_runtime", "cudaMallocAsync", 160, 1));
  ev.push_back(host("cuda_runtime", "cudaMalloc", 250, 10));
  const TraceModel m = load_trace_text(trace(ev));
  ASSERT_EQ(m.relations.steps.size(), 3u);
  const AllocatorCalls& a = analyze_host_blockers(m, make_analysis_context(m, {})).allocator;
  EXPECT_EQ(a.count, 3u);
  EXPECT_EQ(a.total_ns, 15 * 1000);
  EXPECT_TRUE(a.steady_state_known);
  EXPECT_EQ(a.steady_steps, 2u);
  EXPECT_EQ(a.steady_count, 2u);
  EXPECT_EQ(a.steady_ns, 12 * 1000);
  EXPECT_EQ(a.steady_window_ns, 200 * 1000);
  ASSERT_EQ(a.by_name.size(), 2u);
  EXPECT_EQ(a.by_name[0].name, "cudaMalloc");
  EXPECT_EQ(a.by_name[1].name, "cudaFree");
}

// Device-to-host copies (us): a 1 MiB pageable read, cudaMemcpyAsync [0,45) for a 40 us transfer
// [5,45); a blocking cudaMemcpy [100,160) for a 40 us transfer [110,150) (20 us over it); a 4-byte
// read [200,215) for a 2 us transfer (7.5x, 13 us over): real copies, no syncs. Then
// hipMemcpyWithStream [300,500) reading 8 bytes in 1 us at [495,496): 200x its transfer and
// 199 us over it (>= 10x and >= 50 us) - it waited for queued work: a sync, and no longer a plain
// synchronous copy.
TEST(HostBlockers, OnlyCopiesFarLongerThanTheirTransferAreSyncs) {
  const TraceModel m = load_trace_text(trace({
      host("cuda_runtime", "cudaMemcpyAsync", 0, 45, 1),
      gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 5, 40, 1, ",\"bytes\":1048576"),
      host("cuda_runtime", "cudaMemcpy", 100, 60, 2),
      gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 110, 40, 2, ",\"bytes\":1048576"),
      host("cuda_runtime", "cudaMemcpyAsync", 200, 15, 3),
      gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 205, 2, 3, ",\"bytes\":4"),
  }));
  const HostBlockersResult r = analyze_host_blockers(m, make_analysis_context(m, {}));
  EXPECT_EQ(r.syncs.copy_syncs, 0u);
  EXPECT_EQ(r.syncs.count, 0u);
  EXPECT_EQ(r.copies.sync_copy_calls, 1u);
  EXPECT_EQ(r.copies.sync_copy_waits, 0u);

  const TraceModel w = load_trace_text(trace({
      host("cuda_runtime", "cudaMemcpy", 100, 60, 2),
      gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 110, 40, 2, ",\"bytes\":1048576"),
      host("cuda_runtime", "hipMemcpyWithStream", 300, 200, 4),
      gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 495, 1, 4, ",\"bytes\":8"),
  }));
  const HostBlockersResult s = analyze_host_blockers(w, make_analysis_context(w, {}));
  EXPECT_EQ(s.syncs.copy_syncs, 1u);
  EXPECT_EQ(s.syncs.count, 1u);
  EXPECT_EQ(s.syncs.copy_sync_bytes, 8);
  EXPECT_EQ(s.syncs.copy_sync_host_ns, 200 * 1000);
  EXPECT_EQ(s.syncs.copy_sync_transfer_ns, 1000);
  ASSERT_EQ(s.syncs.by_name.size(), 1u);
  EXPECT_EQ(s.syncs.by_name[0].name, "hipMemcpyWithStream");
  EXPECT_EQ(s.copies.sync_copy_calls, 1u);  // the cudaMemcpy only
  EXPECT_EQ(s.copies.sync_copy_waits, 1u);
}

// A pageable HtoD copy (cudaMemcpyAsync [0,20) us, 1 MiB), a blocking cudaMemcpy [30,40) from pinned
// memory, hipMemcpyWithStream [50,55) (blocking on ROCm), cudaMemset [60,61) and cudaMemsetAsync.
// Pageable: 1 copy, 1 MiB, 20 us on the GPU, 20 us of host staging (its cost). Synchronous calls:
// cudaMemcpy 10 + hipMemcpyWithStream 5 + cudaMemset 1 = 16 us in 3 calls. GPU memsets: 2.
TEST(HostBlockers, PageableAndSynchronousCopies) {
  const TraceModel m = load_trace_text(trace({
      host("cuda_runtime", "cudaMemcpyAsync", 0, 20, 1),
      gpu("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 5, 20, 1, ",\"bytes\":1048576"),
      host("cuda_runtime", "cudaMemcpy", 30, 10, 2),
      gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 31, 8, 2, ",\"bytes\":1048576"),
      host("cuda_runtime", "hipMemcpyWithStream", 50, 5),
      host("cuda_runtime", "cudaMemset", 60, 1, 3),
      gpu("gpu_memset", "Memset (Device)", 60.5, 0.3, 3),
      host("cuda_runtime", "cudaMemsetAsync", 70, 1, 4),
      gpu("gpu_memset", "Memset (Device)", 71, 1, 4),
  }));
  const CopyBlockers& c = analyze_host_blockers(m, make_analysis_context(m, {})).copies;
  EXPECT_EQ(c.pageable_copies, 1u);
  EXPECT_EQ(c.pageable_bytes, 1048576);
  EXPECT_EQ(c.pageable_ns, 20 * 1000);
  EXPECT_EQ(c.pageable_host_ns, 20 * 1000);
  EXPECT_EQ(c.pageable_cost_ns, 20 * 1000);
  EXPECT_EQ(c.sync_copy_calls, 3u);
  EXPECT_EQ(c.sync_copy_ns, 16 * 1000);
  ASSERT_FALSE(c.sync_copy_by_name.empty());
  EXPECT_EQ(c.sync_copy_by_name[0].name, "cudaMemcpy");
  EXPECT_EQ(c.memsets, 2u);
}

// The whole trace as one window: these loops of one operator would otherwise be read as a
// micro-benchmark's iterations (the first and last left out); the figures below are of all of it.
AnalysisOptions whole_trace() {
  AnalysisOptions o;
  o.time_from_ms = 0;
  return o;
}

// 100 iterations of 20 us: aten::add [20i, 20i+15) launching (call [20i+5, 20i+13)) a 2 us kernel
// at [20i+14, 20i+16). Window 0..1996 us. GPU busy 200 us (10%); median kernel 2 us; launch calls
// 800 us (40%). GPU idle 1796 us = before the first kernel 14 us (8 in the launch call, 6 in the
// op) + 99 gaps of 18 us (8 launch call, 6 op, 4 between ops): launch 800, op 600, other 396.
// The host issues work through 78% of the GPU's idle time: launch-bound.
TEST(HostBlockers, LaunchBoundRegime) {
  std::vector<std::string> ev;
  for (int i = 0; i < 100; ++i) {
    ev.push_back(host("cpu_op", "aten::add", 20.0 * i, 15));
    ev.push_back(host("cuda_runtime", "cudaLaunchKernel", 20.0 * i + 5, 8, i));
    ev.push_back(gpu("kernel", "add_kernel", 20.0 * i + 14, 2, i));
  }
  const TraceModel m = load_trace_text(trace(ev));
  const LaunchRegime& l = analyze_host_blockers(m, make_analysis_context(m, whole_trace())).launch;
  EXPECT_EQ(l.kernels, 100u);
  EXPECT_EQ(l.median_kernel_ns, 2000);
  EXPECT_EQ(l.gpu_busy_ns, 200 * 1000);
  EXPECT_EQ(l.launch_calls, 100u);
  EXPECT_EQ(l.launch_call_ns, 800 * 1000);
  EXPECT_NEAR(l.launch_overhead_share, 800.0 / 1996.0, 1e-9);
  EXPECT_EQ(l.idle.gpu_idle_ns, 1796 * 1000);
  EXPECT_EQ(l.idle.launch_ns, 800 * 1000);
  EXPECT_EQ(l.idle.op_ns, 600 * 1000);
  EXPECT_EQ(l.idle.other_ns, 396 * 1000);
  EXPECT_EQ(l.main_tid, 1);
  EXPECT_EQ(l.regime, HostRegime::kLaunchBound);
}

// The median kernel of an even count is the mean of the two middle durations (as pandas and
// HTA compute it), not the upper middle: kernels of 1, 2, 3 and 10 us have a 2.5 us median.
TEST(HostBlockers, MedianKernelOfAnEvenCountIsTheMeanOfTheMiddles) {
  std::vector<std::string> ev;
  const double durations_us[] = {10, 1, 3, 2};
  for (int i = 0; i < 4; ++i) {
    ev.push_back(host("cpu_op", "aten::add", 20.0 * i, 15));
    ev.push_back(host("cuda_runtime", "cudaLaunchKernel", 20.0 * i + 5, 8, i));
    ev.push_back(gpu("kernel", "add_kernel", 20.0 * i + 14, durations_us[i], i));
  }
  const TraceModel m = load_trace_text(trace(ev));
  const LaunchRegime& l = analyze_host_blockers(m, make_analysis_context(m, whole_trace())).launch;
  EXPECT_EQ(l.kernels, 4u);
  EXPECT_EQ(l.median_kernel_ns, 2500);
}

// 60 iterations of 100 us: an op [100i, 100i+90) launching at 100i+85 a 20 us kernel at 100i+88.
// Window 0 .. 6008 us (the last kernel's end). GPU busy 1200 us (20%), median kernel 20 us (long enough to hide a
// launch), launch calls 1%; the GPU idles while the host runs ops: CPU-bound.
TEST(HostBlockers, CpuBoundRegime) {
  std::vector<std::string> ev;
  for (int i = 0; i < 60; ++i) {
    ev.push_back(host("cpu_op", "aten::index", 100.0 * i, 90));
    ev.push_back(host("cuda_runtime", "cudaLaunchKernel", 100.0 * i + 85, 1, i));
    ev.push_back(gpu("kernel", "index_kernel", 100.0 * i + 88, 20, i));
  }
  const TraceModel m = load_trace_text(trace(ev));
  const LaunchRegime& l = analyze_host_blockers(m, make_analysis_context(m, whole_trace())).launch;
  EXPECT_EQ(l.median_kernel_ns, 20 * 1000);
  EXPECT_NEAR(l.gpu_busy_share, 1200.0 / 6008.0, 1e-9);
  EXPECT_GT(l.host_busy_share, 0.85);
  EXPECT_EQ(l.regime, HostRegime::kCpuBound);
}

// The same GPU starvation while the host waits for data (an 80 us DataLoader span each iteration):
// neither launch- nor CPU-bound.
TEST(HostBlockers, InputWaitIsNotAHostRegime) {
  std::vector<std::string> ev;
  for (int i = 0; i < 60; ++i) {
    ev.push_back(host("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100.0 * i, 80));
    ev.push_back(host("cpu_op", "aten::add", 100.0 * i + 80, 15));
    ev.push_back(host("cuda_runtime", "cudaLaunchKernel", 100.0 * i + 85, 5, i));
    ev.push_back(gpu("kernel", "add_kernel", 100.0 * i + 91, 10, i));
  }
  const TraceModel m = load_trace_text(trace(ev));
  const LaunchRegime& l = analyze_host_blockers(m, make_analysis_context(m, {})).launch;
  EXPECT_GT(l.idle.dataloader_ns, l.idle.issuing_ns());
  EXPECT_EQ(l.regime, HostRegime::kOther);
}

TEST(HostBlockers, BusyGpuAndTooFewKernels) {
  std::vector<std::string> ev;
  for (int i = 0; i < 60; ++i) {
    ev.push_back(host("cuda_runtime", "cudaLaunchKernel", i, 1, i));
    ev.push_back(gpu("kernel", "gemm", 100.0 + 50.0 * i, 50, i));
  }
  TraceModel m = load_trace_text(trace(ev));
  EXPECT_EQ(analyze_host_blockers(m, make_analysis_context(m, {})).launch.regime, HostRegime::kGpuBound);
  ev.resize(20);  // 10 kernels
  m = load_trace_text(trace(ev));
  EXPECT_EQ(analyze_host_blockers(m, make_analysis_context(m, {})).launch.regime, HostRegime::kTooFew);
}

// The shipped CPU sample (torch 1.13 legacy export, no GPU): `.item()` every iteration. Each
// aten::item holds an aten::_local_scalar_dense whose truncated timestamps start up to 1 us after
// the item "ends"; they count once: 100 syncs, 20 in each of the 5 steps.
TEST(HostBlockers, CpuOnlyLegacyTraceCountsItemCalls) {
  const TraceModel m = load_trace(std::string(FERRET_SOURCE_DIR) + "/examples/traces/cpu-host-sync.json.gz");
  const HostBlockersResult r = analyze_host_blockers(m, make_analysis_context(m, {}));
  EXPECT_FALSE(r.has_gpu);
  EXPECT_EQ(r.launch.regime, HostRegime::kNoGpu);
  EXPECT_EQ(r.syncs.count, 100u);
  ASSERT_EQ(r.syncs.by_name.size(), 1u);
  EXPECT_EQ(r.syncs.by_name[0].name, "aten::item");
  ASSERT_EQ(r.syncs.per_step.size(), 5u);
  EXPECT_EQ(r.syncs.steps_with_syncs, 5u);
  for (const StepCount& s : r.syncs.per_step) EXPECT_EQ(s.count, 20u);
}

// --- Corpus ---

HostBlockersResult analyze(const std::string& path) {
  const TraceModel m = load_trace(path);
  return analyze_host_blockers(m, make_analysis_context(m, {}));
}

// PARAM's add benchmark (no steps): 16 cudaStreamSynchronize (inside aten::copy_) and 5
// cudaDeviceSynchronize; 41 cuda_sync GPU waits; 15 cudaFree, 24 cudaMalloc, 1 cudaHostAlloc;
// 16 pageable HtoD copies. Counts from the trace itself (tests/tools-style tally of its events).
TEST(CorpusParamSync, SyncsAllocatorAndCopies) {
  FERRET_REQUIRE_CORPUS(path, "param-simple-add-a100-sync.json.gz");
  const HostBlockersResult r = analyze(path);
  EXPECT_EQ(r.syncs.count, 21u);
  ASSERT_FALSE(r.syncs.by_name.empty());
  EXPECT_EQ(r.syncs.by_name[0].name, "cudaStreamSynchronize");
  EXPECT_EQ(r.syncs.by_name[0].count, 16u);
  EXPECT_EQ(r.syncs.callers[0].name, "aten::copy_");
  EXPECT_EQ(r.syncs.gpu_side_waits, 41u);
  EXPECT_EQ(r.allocator.count, 40u);
  EXPECT_FALSE(r.allocator.steady_state_known);
  EXPECT_EQ(r.allocator.by_name[0].name, "cudaFree");
  EXPECT_EQ(r.allocator.by_name[0].count, 15u);
  EXPECT_EQ(r.copies.pageable_copies, 16u);
}

TEST(CorpusEventSync, CudaEventSynchronize) {
  FERRET_REQUIRE_CORPUS(path, "event-sync.json.gz");
  const HostBlockersResult r = analyze(path);
  EXPECT_EQ(r.syncs.count, 3u);  // aten::item, cudaEventSynchronize, cudaDeviceSynchronize
  bool event_sync = false;
  for (const NamedTime& n : r.syncs.by_name) event_sync |= n.name == "cudaEventSynchronize";
  EXPECT_TRUE(event_sync);
  EXPECT_EQ(r.syncs.gpu_side_waits, 4u);  // Stream Sync, 2 Event Sync, Context Sync
}

// ResNet50 with num_workers=0: the GPU starves while the main thread loads data (the TensorBoard
// plugin: DataLoader 33% of the step), so the regime is neither launch- nor CPU-bound. Each of its
// 6 steps copies a batch from pageable memory: images 32x3x224x224 fp32 = 19,267,584 bytes and
// labels 32 int64 = 256 bytes.
TEST(CorpusResNet50, InputWaitNotLaunchBound) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const HostBlockersResult r = analyze(path);
  EXPECT_EQ(r.launch.regime, HostRegime::kOther);
  EXPECT_GT(r.launch.idle.dataloader_ns, r.launch.idle.issuing_ns());
  EXPECT_EQ(r.copies.pageable_copies, 12u);
  EXPECT_EQ(r.copies.pageable_bytes, 6 * (19267584ll + 256));
  EXPECT_EQ(r.allocator.steady_count, 0u);
}

// Eager MoE inference on B200 with 768 kernels of median ~6 us and the GPU busy 13%: launch-bound.
TEST(CorpusB200, LaunchBound) {
  FERRET_REQUIRE_CORPUS(path, "b200-eager-rank0of8.json.gz");
  const HostBlockersResult r = analyze(path);
  EXPECT_EQ(r.launch.regime, HostRegime::kLaunchBound);
  EXPECT_LT(r.launch.median_kernel_ns, kLaunchBoundMedianKernelNs);
  EXPECT_LT(r.launch.gpu_busy_share, 0.2);
}

// Qwen inference on H100: the GPU is busy 92% of the step.
TEST(CorpusQwen, GpuBound) {
  FERRET_REQUIRE_CORPUS(path, "h100-qwen0.5b-inference-torch2.json.gz");
  EXPECT_EQ(analyze(path).launch.regime, HostRegime::kGpuBound);
}

TEST(CorpusCpuOnly, NothingToBlock) {
  FERRET_REQUIRE_CORPUS(path, "cpu-only.pt.trace.json.gz");
  const HostBlockersResult r = analyze(path);
  EXPECT_FALSE(r.has_gpu);
  EXPECT_EQ(r.launch.regime, HostRegime::kNoGpu);
  EXPECT_EQ(r.syncs.count, 0u);
}

}  // namespace host_blockers_test
}  // namespace
}  // namespace ferret
