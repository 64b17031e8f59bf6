#include "analysis/causal/critical_path.h"

#include <gtest/gtest.h>

#include <string>

#include "analysis/causal/causality.h"
#include "analysis/causal/whatif.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace critical_path_test {

using test::span;
using test::trace;

// A span on the host thread (pid 1, tid 1) or on GPU stream `stream` (pid 0), with its correlation.
std::string event(const char* cat, const std::string& name, int pid, int tid, double ts, double dur, int c) {
  return span(cat, name, pid, tid, ts, dur, c >= 0 ? "\"correlation\":" + std::to_string(c) : "");
}
std::string host(const char* cat, const std::string& name, double ts, double dur, int c = -1) {
  return event(cat, name, 1, 1, ts, dur, c);
}
std::string gpu(const char* cat, const std::string& name, int stream, double ts, double dur, int c) {
  return event(cat, name, 0, stream, ts, dur, c);
}

std::int64_t of(const CriticalPathStep& s, PathCategory c) { return s.ns[static_cast<int>(c)]; }

// One GPU step, times in us:
//   ProfilerStep#1 [0,100)
//   aten::linear [5,25) > cudaLaunchKernel [10,15) -> kernel_a [20,60) on stream 7 (latency 10)
//   cudaLaunchKernel [30,35) -> kernel_b [60,80): queued behind kernel_a (gap 0)
//   cudaStreamSynchronize [40,85): returns 5 us after kernel_b ends
//   aten::relu [88,98)
// Walking back from the step's end (100, host: the GPU ended at 80):
//   host [85,100) cpu 15; the sync waited on kernel_b: [80,85) sync_wait 5; kernel_b [60,80)
//   gpu 20; it followed kernel_a on the stream (gap 0); kernel_a [20,60) gpu 40; it waited on its
//   launch: [10,20) launch_overhead 10; host [0,10) cpu 10.
//   cpu 25 + sync 5 + gpu 60 + launch 10 = 100: bound by GPU compute.
const std::string kGpuStep = trace({
    host("user_annotation", "ProfilerStep#1", 0, 100),
    host("cpu_op", "aten::linear", 5, 20),
    host("cuda_runtime", "cudaLaunchKernel", 10, 5, 1),
    host("cuda_runtime", "cudaLaunchKernel", 30, 5, 2),
    host("cuda_runtime", "cudaStreamSynchronize", 40, 45),
    host("cpu_op", "aten::relu", 88, 10),
    gpu("kernel", "kernel_a", 7, 20, 40, 1),
    gpu("kernel", "kernel_b", 7, 60, 20, 2),
});

TEST(CriticalPath, GpuStepWalkedBackByHand) {
  const TraceModel m = load_trace_text(kGpuStep);
  const CriticalPathResult r = analyze_critical_path(m, make_analysis_context(m, {}));
  ASSERT_EQ(r.steps.size(), 1u);
  const CriticalPathStep& s = r.steps[0];
  EXPECT_EQ(s.number, 1);
  EXPECT_EQ(s.duration_ns, 100'000);
  EXPECT_EQ(of(s, PathCategory::kCpu), 25'000);
  EXPECT_EQ(of(s, PathCategory::kSyncWait), 5'000);
  EXPECT_EQ(of(s, PathCategory::kGpuCompute), 60'000);
  EXPECT_EQ(of(s, PathCategory::kLaunchOverhead), 10'000);
  EXPECT_EQ(of(s, PathCategory::kKernelGaps), 0);
  EXPECT_EQ(of(s, PathCategory::kInput), 0);
  EXPECT_EQ(s.bound_by, PathCategory::kGpuCompute);
  EXPECT_EQ(r.bound_by, PathCategory::kGpuCompute);
  EXPECT_DOUBLE_EQ(r.mean_duration_ns, 100'000);
}

// The same step re-timed (us):
//   kernel_b x2: kernel_b [60,70), the sync returns at 70 + its 5 us tail = 75 (10 earlier),
//     aten::relu moves to [78,88), the step span ends at 90: 90.
//   no host sync: the sync takes no time (45 us earlier), the host ends at 55 but kernel_b still
//     ends at 80: 80.
//   aten::linear x2: it launches GPU work, so its kernel runs twice as fast (its host time stays):
//     kernel_a [20,40), kernel_b [40,60) (its launch at 30 + 5 us latency is earlier), the sync
//     returns at 65, the step ends at 80: 80.
//   no launch overhead: both launch calls take no host time; kernel_a still starts 10 us after
//     its launch, kernel_b still waits on the stream: nothing on the path moves: 100.
TEST(WhatIf, GpuStepRetimedByHand) {
  const TraceModel m = load_trace_text(kGpuStep);
  const AnalysisContext ctx = make_analysis_context(m, {});
  auto predict = [&](const std::vector<std::string>& removals, const std::vector<std::string>& speedups) {
    RetimeChanges c;
    for (const std::string& r : removals) parse_whatif_removal(r, c);
    for (const std::string& s : speedups) parse_whatif_speedup(s, c);
    return analyze_whatif(m, ctx, c);
  };
  const WhatIfResult none = predict({}, {});
  EXPECT_EQ(none.baseline_step_ns, 100'000);
  EXPECT_EQ(none.predicted_step_ns, 100'000);

  const WhatIfResult faster_b = predict({}, {"kernel_b=2"});
  EXPECT_EQ(faster_b.predicted_step_ns, 90'000);
  ASSERT_EQ(faster_b.touched.speedup_events.size(), 1u);
  EXPECT_EQ(faster_b.touched.speedup_events[0], 1u);

  const WhatIfResult no_sync = predict({"host-sync"}, {});
  EXPECT_EQ(no_sync.predicted_step_ns, 80'000);
  EXPECT_EQ(no_sync.touched.host_syncs, 1u);

  const WhatIfResult faster_linear = predict({}, {"aten::linear=2"});
  EXPECT_EQ(faster_linear.predicted_step_ns, 80'000);
  EXPECT_EQ(faster_linear.touched.speedup_events[0], 1u);  // kernel_a, not the op's host time

  const WhatIfResult no_launch = predict({"launch-overhead"}, {});
  EXPECT_EQ(no_launch.predicted_step_ns, 100'000);
  EXPECT_EQ(no_launch.touched.launch_calls, 2u);

  // No host overhead (a captured graph's replay): the host's time stops passing outside the sync
  // and the CPU-only aten::relu. Both launches at 0: kernel_a [10,50) (its 10 us latency after a
  // start on an idle stream), kernel_b back to back [50,70); the sync returns at 70 + its 5 us
  // tail = 75; aten::relu keeps its 10 us [75,85); the step ends there: 85. Collapsed: aten::linear
  // and the top-level launch (the nested launch counts with its op).
  const WhatIfResult no_overhead = predict({"host-overhead"}, {});
  EXPECT_EQ(no_overhead.predicted_step_ns, 85'000);
  EXPECT_EQ(no_overhead.touched.host_overhead_spans, 2u);

  const WhatIfResult nothing = predict({}, {"no_such_kernel=3"});
  EXPECT_EQ(nothing.predicted_step_ns, 100'000);
  EXPECT_EQ(nothing.touched.speedup_events[0], 0u);
}

// A blocking `.to("cuda")` from pageable memory (us), as PyTorch records it:
//   ProfilerStep#1 [0,200)
//   aten::to [10,110) > cudaMemcpyAsync [15,95) -> copy [20,90) on stream 7; cudaStreamSynchronize [96,105)
//   aten::relu [120,190) (CPU-only)
// Pinned and non_blocking: the copy call keeps 5 us [15,20), the sync goes ([21,21)), aten::relu
// moves 84 us earlier to [36,106), the step's span ends at 116; the copy keeps its [20,90): 116.
// A device-to-host copy keeps its wait: 200.
std::string pageable_copy_step(const std::string& copy) {
  return trace({
      host("user_annotation", "ProfilerStep#1", 0, 200),
      host("cpu_op", "aten::to", 10, 100),
      host("cuda_runtime", "cudaMemcpyAsync", 15, 80, 1),
      host("cuda_runtime", "cudaStreamSynchronize", 96, 9),
      host("cpu_op", "aten::relu", 120, 70),
      gpu("gpu_memcpy", copy, 7, 20, 70, 1),
  });
}

TEST(WhatIf, PinnedUploadsByHand) {
  for (const bool upload : {true, false}) {
    SCOPED_TRACE(upload);
    const TraceModel m = load_trace_text(
        pageable_copy_step(upload ? "Memcpy HtoD (Pageable -> Device)" : "Memcpy DtoH (Device -> Pageable)"));
    const AnalysisContext ctx = make_analysis_context(m, {});
    RetimeChanges c;
    parse_whatif_removal("pageable-uploads", c);
    const WhatIfResult w = analyze_whatif(m, ctx, c);
    EXPECT_EQ(w.baseline_step_ns, 200'000);
    EXPECT_EQ(w.predicted_step_ns, upload ? 116'000 : 200'000);
    EXPECT_EQ(w.touched.pageable_uploads, upload ? 2u : 0u);  // the copy call and its sync
  }
}

// Two CPU-only steps (us), the loader in the main process:
//   ProfilerStep#1 [0,50):   enumerate(DataLoader) [2,22)  aten::mm [25,45)
//   ProfilerStep#2 [50,110): enumerate(DataLoader) [51,91) aten::mm [92,105)
// Critical path: step 1 input 20, cpu 30; step 2 input 40, cpu 20. Mean input 30, cpu 25: input.
// Without the loader: step 1 50 - 20 = 30; step 2 starts at 30 and its span ends at
// 110 - 60 = 50: 20. Medians (of two: their mean) 55 -> 25.
// aten::mm x2 (a CPU op launching no GPU work: its host time halves): 50 - 10 = 40, 60 - 6.5 = 53.5.
const std::string kLoaderSteps = trace({
    host("user_annotation", "ProfilerStep#1", 0, 50),
    host("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 2, 20),
    host("cpu_op", "aten::mm", 25, 20),
    host("user_annotation", "ProfilerStep#2", 50, 60),
    host("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 51, 40),
    host("cpu_op", "aten::mm", 92, 13),
});

TEST(CriticalPath, CpuStepsBoundByInput) {
  const TraceModel m = load_trace_text(kLoaderSteps);
  const CriticalPathResult r = analyze_critical_path(m, make_analysis_context(m, {}));
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(of(r.steps[0], PathCategory::kInput), 20'000);
  EXPECT_EQ(of(r.steps[0], PathCategory::kCpu), 30'000);
  EXPECT_EQ(r.steps[0].bound_by, PathCategory::kCpu);
  EXPECT_EQ(of(r.steps[1], PathCategory::kInput), 40'000);
  EXPECT_EQ(of(r.steps[1], PathCategory::kCpu), 20'000);
  EXPECT_EQ(r.steps[1].bound_by, PathCategory::kInput);
  EXPECT_DOUBLE_EQ(r.mean_ns[static_cast<int>(PathCategory::kInput)], 30'000);
  EXPECT_EQ(r.bound_by, PathCategory::kInput);
}

TEST(WhatIf, CpuStepsRetimedByHand) {
  const TraceModel m = load_trace_text(kLoaderSteps);
  const AnalysisContext ctx = make_analysis_context(m, {});
  RetimeChanges loader;
  parse_whatif_removal("dataloader", loader);
  const WhatIfResult r = analyze_whatif(m, ctx, loader);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].baseline_ns, 50'000);
  EXPECT_EQ(r.steps[0].predicted_ns, 30'000);
  EXPECT_EQ(r.steps[1].baseline_ns, 60'000);
  EXPECT_EQ(r.steps[1].predicted_ns, 20'000);
  EXPECT_EQ(r.baseline_step_ns, 55'000);
  EXPECT_EQ(r.predicted_step_ns, 25'000);
  EXPECT_EQ(r.touched.dataloader_spans, 2u);

  RetimeChanges mm;
  parse_whatif_speedup("aten::mm=2", mm);
  const WhatIfResult f = analyze_whatif(m, ctx, mm);
  EXPECT_EQ(f.steps[0].predicted_ns, 40'000);
  EXPECT_EQ(f.steps[1].predicted_ns, 53'500);
  EXPECT_EQ(f.touched.speedup_events[0], 2u);
}

// Exposed communication (us): ProfilerStep#1 [0,20) launches a compute kernel on stream 7
// [20,60) and an all-reduce on stream 8 [40,90); the step ends with it at 90. Compute covers
// [40,60) of it: 30 us exposed. Without it the all-reduce ends at 60: the step is 60.
TEST(WhatIf, ExposedCommunicationByHand) {
  const TraceModel m = load_trace_text(trace({
      host("user_annotation", "ProfilerStep#1", 0, 20),
      host("cuda_runtime", "cudaLaunchKernel", 5, 2, 1),
      host("cuda_runtime", "cudaLaunchKernel", 10, 2, 2),
      gpu("kernel", "gemm", 7, 20, 40, 1),
      gpu("kernel", "ncclDevKernel_AllReduce_Sum_f32", 8, 40, 50, 2),
  }));
  const AnalysisContext ctx = make_analysis_context(m, {});
  const CriticalPathResult cp = analyze_critical_path(m, ctx);
  ASSERT_EQ(cp.steps.size(), 1u);
  // all-reduce [40,90) communication 50, its launch [10,40) 30, host [0,10): the first launch
  // call [5,7) is launch overhead (2), the rest cpu (8).
  EXPECT_EQ(of(cp.steps[0], PathCategory::kCommunication), 50'000);
  EXPECT_EQ(of(cp.steps[0], PathCategory::kLaunchOverhead), 32'000);
  EXPECT_EQ(of(cp.steps[0], PathCategory::kCpu), 8'000);
  EXPECT_EQ(cp.steps[0].bound_by, PathCategory::kCommunication);
  RetimeChanges c;
  parse_whatif_removal("exposed-communication", c);
  const WhatIfResult r = analyze_whatif(m, ctx, c);
  EXPECT_EQ(r.baseline_step_ns, 90'000);
  EXPECT_EQ(r.predicted_step_ns, 60'000);
  EXPECT_EQ(r.touched.communication, 1u);
}

// The backward pass on the autograd engine's thread (us): the steps' thread waits for the loader
// [0,40) and then blocks in the backward call [45,95); thread 2 runs the backward [50,90) and
// launches a kernel at [55,60) that runs [60,150) on stream 7. The step ends with the kernel: 150.
// Critical path: kernel [60,150) gpu 90; its launch [55,60) 5; thread 2 back to its span's start
// [50,55) cpu 5; then the steps' thread: [40,50) cpu 10, the loader [0,40) input 40.
// Without the loader the steps' thread is 40 us earlier, thread 2 starts 40 earlier (at 10), the
// kernel runs [20,110): the step is 110 (the host ends at 60).
const std::string kBackwardThread = trace({
    host("user_annotation", "ProfilerStep#1", 0, 100),
    host("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 40),
    host("cpu_op", "autograd::backward", 45, 50),
    span("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 1, 2, 50, 40),
    span("cuda_runtime", "cudaLaunchKernel", 1, 2, 55, 5, "\"correlation\":1"),
    gpu("kernel", "gemm_backward", 7, 60, 90, 1),
});

TEST(CriticalPath, BackwardThreadFollowsTheStepsThread) {
  const TraceModel m = load_trace_text(kBackwardThread);
  const AnalysisContext ctx = make_analysis_context(m, {});
  const CriticalPathResult cp = analyze_critical_path(m, ctx);
  ASSERT_EQ(cp.steps.size(), 1u);
  const CriticalPathStep& s = cp.steps[0];
  EXPECT_EQ(s.duration_ns, 150'000);
  EXPECT_EQ(of(s, PathCategory::kGpuCompute), 90'000);
  EXPECT_EQ(of(s, PathCategory::kLaunchOverhead), 5'000);
  EXPECT_EQ(of(s, PathCategory::kCpu), 15'000);
  EXPECT_EQ(of(s, PathCategory::kInput), 40'000);
  RetimeChanges c;
  parse_whatif_removal("dataloader", c);
  const WhatIfResult r = analyze_whatif(m, ctx, c);
  EXPECT_EQ(r.baseline_step_ns, 150'000);
  EXPECT_EQ(r.predicted_step_ns, 110'000);
}

TEST(WhatIf, BadArgumentsAreOptionErrors) {
  RetimeChanges c;
  EXPECT_THROW(parse_whatif_removal("gpu", c), OptionError);
  EXPECT_THROW(parse_whatif_speedup("aten::mm", c), OptionError);
  EXPECT_THROW(parse_whatif_speedup("=2", c), OptionError);
  EXPECT_THROW(parse_whatif_speedup("aten::mm=0", c), OptionError);
  EXPECT_THROW(parse_whatif_speedup("aten::mm=-1", c), OptionError);
  EXPECT_THROW(parse_whatif_speedup("aten::mm=x", c), OptionError);
  EXPECT_THROW(parse_whatif_speedup("aten::mm=inf", c), OptionError);
  EXPECT_TRUE(c.speedups.empty());
  parse_whatif_speedup("a=b=1.5", c);  // the last '=' splits
  ASSERT_EQ(c.speedups.size(), 1u);
  EXPECT_EQ(c.speedups[0].pattern, "a=b");
  EXPECT_DOUBLE_EQ(c.speedups[0].factor, 1.5);
}

// A kernel that starts long after its launch waited on its device, not on the host: only the launch
// latency is launch overhead, and the path runs on through the work it waited for. Times in us:
//   ProfilerStep#1 [0,100); launch A [5,10) -> kA [20,300) stream 7 (latency 15);
//   launch B [10,15) -> kB [300,400) stream 8, starting as kA ends (290 us after its launch).
// Walking back from 400: kB gpu 100; its wait reaches kA's end (gap 0); kA gpu 280; its launch
// latency [5,20) 15; host [0,5) cpu 5: gpu 380 + launch 15 + cpu 5 = 400. Before: kB's 290 us
// wait was launch overhead (295 in all) and GPU compute 100.
TEST(CriticalPath, AKernelThatWaitedOnItsDeviceIsNotLaunchOverhead) {
  const TraceModel m = load_trace_text(trace({
      host("user_annotation", "ProfilerStep#1", 0, 100),
      host("cuda_runtime", "cudaLaunchKernel", 5, 5, 1),
      host("cuda_runtime", "cudaLaunchKernel", 10, 5, 2),
      gpu("kernel", "kernel_a", 7, 20, 280, 1),
      gpu("kernel", "kernel_b", 8, 300, 100, 2),
  }));
  const CriticalPathResult r = analyze_critical_path(m, make_analysis_context(m, {}));
  ASSERT_EQ(r.steps.size(), 1u);
  const CriticalPathStep& s = r.steps[0];
  EXPECT_EQ(s.duration_ns, 400'000);
  EXPECT_EQ(of(s, PathCategory::kGpuCompute), 380'000);
  EXPECT_EQ(of(s, PathCategory::kLaunchOverhead), 15'000);
  EXPECT_EQ(of(s, PathCategory::kCpu), 5'000);
  EXPECT_EQ(of(s, PathCategory::kKernelGaps), 0);
  EXPECT_EQ(s.bound_by, PathCategory::kGpuCompute);
}

// The A100 recommender whose kernels wait a median 162 ms after their launch: its path was 87%
// launch overhead; the device's queue is device time.
TEST(CriticalPathCorpus, ADeepQueueIsNotLaunchOverhead) {
  FERRET_REQUIRE_CORPUS(path, "a100-recsys-rank0-deep-queue.json.gz");
  const TraceModel m = load_trace(path);
  const CriticalPathResult r = analyze_critical_path(m, make_analysis_context(m, {}));
  ASSERT_GT(r.mean_duration_ns, 0);
  EXPECT_LT(r.mean_ns[static_cast<int>(PathCategory::kLaunchOverhead)], 0.10 * r.mean_duration_ns);
  // The device's own time (its work and the gaps between queued work) holds the path.
  EXPECT_GT(r.mean_ns[static_cast<int>(PathCategory::kGpuCompute)] +
                r.mean_ns[static_cast<int>(PathCategory::kCommunication)] +
                r.mean_ns[static_cast<int>(PathCategory::kKernelGaps)],
            0.50 * r.mean_duration_ns);
  EXPECT_NE(r.bound_by, PathCategory::kLaunchOverhead);
}

// A device busy >= 90% of its span has GPU compute as the largest part of its path: the V100
// ResNet whose host is held by a full launch queue (184 launches a step over 50 us, 48 ms of the
// 96 ms step, with a 77 ms queue) waits on the device in those launches, not on its own work.
TEST(CriticalPathCorpus, ABusyDevicesPathRunsThroughItsKernels) {
  FERRET_REQUIRE_CORPUS(path, "resnet-ddp-v100-2024-ns.pt.trace.json.gz");
  const TraceModel m = load_trace(path);
  const AnalysisContext ctx = make_analysis_context(m, {});
  const CausalityResult c = analyze_causality(m, ctx);
  ASSERT_EQ(c.devices.size(), 1u);
  const DeviceCausality& d = c.devices[0];
  ASSERT_GE(static_cast<double>(d.busy_ns), 0.90 * static_cast<double>(d.window_ns));
  // The queue-held launches are the host's waits: over half the window.
  EXPECT_GT(static_cast<double>(d.host_waited_on_device_ns), 0.5 * static_cast<double>(d.window_ns));
  const CriticalPathResult r = analyze_critical_path(m, ctx);
  ASSERT_GT(r.mean_duration_ns, 0);
  EXPECT_EQ(r.bound_by, PathCategory::kGpuCompute);
  EXPECT_GT(r.mean_ns[static_cast<int>(PathCategory::kGpuCompute)], 0.9 * r.mean_duration_ns);
}

// No removal predicts a step shorter than the busiest device's own work per step (the recommender
// with a 160 ms queue: removing its host syncs predicted 62.8 ms a step while its kernels, copies
// and collectives alone keep the device busy about 88 ms a step), and removing nothing predicts the
// re-timed step itself, on every corpus trace at hand.
TEST(WhatIfCorpus, NoPredictionBelowTheDevicesOwnWork) {
  FERRET_REQUIRE_CORPUS(recsys, "a100-recsys-rank0-deep-queue.json.gz");
  {
    const TraceModel m = load_trace(recsys);
    const AnalysisContext ctx = make_analysis_context(m, {});
    RetimeChanges changes;
    changes.remove_host_sync = true;
    const WhatIfResult w = analyze_whatif(m, ctx, changes);
    ASSERT_GT(w.device_floor_ns, 80'000'000);
    EXPECT_GE(w.predicted_mean_ns, static_cast<double>(w.device_floor_ns));
  }
  for (const char* name : {"a100-rank3of8-2022.json.gz", "mtia-inference-backlog.json.gz",
                           "mi300-sglang-prefill-edge-wait.json.gz", "cnn-ddp-a100-rank0of2-nccl.json.gz",
                           "resnet50-v100-torch19-dataloader.pt.trace.json.gz", "b200-eager-rank0of8.json.gz"}) {
    const std::string path = test::corpus_path(name);
    if (path.empty()) continue;
    const TraceModel m = load_trace(path);
    const AnalysisContext ctx = make_analysis_context(m, {});
    const WhatIfResult none = analyze_whatif(m, ctx, {});
    EXPECT_EQ(none.predicted_mean_ns, none.baseline_mean_ns) << name;
    EXPECT_FALSE(none.floor_binds) << name;
    for (const WhatIfRemoval& removal : whatif_removal_table()) {
      RetimeChanges c;
      c.*removal.flag = true;
      const WhatIfResult w = analyze_whatif(m, ctx, c);
      for (const WhatIfStep& s : w.steps) {
        EXPECT_GE(s.predicted_ns, std::min(w.device_floor_ns, s.baseline_ns)) << name << " " << removal.name;
      }
      // Over the window a removal takes time out, never adds it (a step's boundary is the host's,
      // so one step can gain what its predecessor lost).
      EXPECT_LE(w.predicted_mean_ns, w.baseline_mean_ns * 1.0001) << name << " " << removal.name;
    }
  }
}

}  // namespace critical_path_test
}  // namespace
}  // namespace ferret
