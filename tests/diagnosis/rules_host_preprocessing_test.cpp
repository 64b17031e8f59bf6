// Host waits with their causes named: host preprocessing (Python frames of tokenisers, decoding,
// resizing, pipeline pre/post-processing), Python frames as evidence, and blocking device-to-host
// copies that are syncs. Generated traces with the shapes of issue 14; numbers worked by hand.
#include <gtest/gtest.h>

#include <string>

#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rules_host_preprocessing_test {

using test::span;
using test::trace;

constexpr double kUsPerMs = 1000.0;

std::string host(const char* cat, const std::string& name, double ts_us, double dur_us, const std::string& args = "") {
  return span(cat, name, 1, 1, ts_us, dur_us, args);
}
std::string gpu(const char* cat, const std::string& name, double ts_us, double dur_us, int corr,
                const std::string& extra = "") {
  return span(cat, name, 0, 7, ts_us, dur_us, "\"correlation\":" + std::to_string(corr) + extra);
}
// A python_function frame; ids <= 0 leave the ids out (the call tree then comes from nesting).
std::string frame(const std::string& name, double ts_us, double dur_us, int id, int parent) {
  std::string args;
  if (id > 0) args = "\"Python id\":" + std::to_string(id) + ",\"Python parent id\":" + std::to_string(parent);
  return host("python_function", name, ts_us, dur_us, args);
}

const Finding* find(const Diagnosis& d, const std::string& id) {
  for (const Finding& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}
double evidence(const Finding& f, const std::string& name) {
  for (const Evidence& e : f.evidence)
    if (e.name == name) return e.value;
  ADD_FAILURE() << "no evidence " << name << " in " << f.id;
  return -1;
}
bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// The inference step of issue 14 (an H100 video transformer): 382 ms, of which 218 ms host
// preprocessing before the forward, and a forward that keeps the GPU busy. Per step at S:
//   ProfilerStep#k [S, S+382 ms); a root frame `infer.py: infer_one` over the whole step;
//   the middle frame [S+1, S+219) - `preprocess` of a transformers pipeline, or (no preprocessing)
//   `train.py: compute_metrics`; under it two children [S+2, S+120) and [S+121, S+218);
//   the forward `torch/nn/modules/module.py: _call_impl` [S+220, S+381): 100 aten::linear ops
//   [S+220 ms + 10i us, +8 us) each launching one 1.58 ms kernel, run back to back on the GPU from
//   S+221 ms every 1.6 ms (GPU busy 158 ms of the step, the last kernel ending at S+380.98).
// GPU idle per step: [S, S+221) = 221 ms (the first step starts idle; later ones after the previous
// step's last kernel ends at S-1.02 ms, which lies in the previous step), 99 gaps of 0.02 ms and
// [S+380.98, S+382): 221 + 1.98 + 1.02 = 224 ms (58.6% of 382 ms).
std::string inference_steps(int steps, const std::string& middle, const std::string& child1, const std::string& child2,
                            bool ids, bool python = true) {
  std::vector<std::string> ev;
  int corr = 1, id = 1;
  for (int k = 0; k < steps; ++k) {
    const double s = k * 382 * kUsPerMs;
    ev.push_back(host("user_annotation", "ProfilerStep#" + std::to_string(k + 1), s, 382 * kUsPerMs));
    const int root = id++, mid = id++, c1 = id++, c2 = id++, fwd = id++;
    if (python) {
      ev.push_back(frame("infer.py(20): infer_one", s, 382 * kUsPerMs, ids ? root : 0, 0));
      ev.push_back(frame(middle, s + 1 * kUsPerMs, 218 * kUsPerMs, ids ? mid : 0, root));
      ev.push_back(frame(child1, s + 2 * kUsPerMs, 118 * kUsPerMs, ids ? c1 : 0, mid));
      ev.push_back(frame(child2, s + 121 * kUsPerMs, 97 * kUsPerMs, ids ? c2 : 0, mid));
      ev.push_back(frame("torch/nn/modules/module.py(1501): _call_impl", s + 220 * kUsPerMs, 161 * kUsPerMs,
                         ids ? fwd : 0, root));
    }
    for (int i = 0; i < 100; ++i, ++corr) {
      const double op = s + 220 * kUsPerMs + 10 * i;
      ev.push_back(host("cpu_op", "aten::linear", op, 8));
      ev.push_back(host("cuda_runtime", "cudaLaunchKernel", op + 1, 5, "\"correlation\":" + std::to_string(corr)));
      ev.push_back(gpu("kernel", "sm90_xmma_gemm", s + 221 * kUsPerMs + 1600 * i, 1580, corr));
    }
  }
  return trace(ev);
}

bool suggests_graphs_or_compile(const Finding& f) {
  for (const std::string& fix : fix_texts(f))
    if (mentions(fix, "CUDA graph") || mentions(fix, "torch.compile") || mentions(fix, "reduce-overhead") ||
        mentions(fix, "CUDAGraph"))
      return true;
  return false;
}

// Preprocessing frames under a Hugging Face pipeline (decord decoding, PIL resizing): per step the
// pipeline's preprocess holds the host 218 ms, all of it with the GPU idle (the forward has not
// started). Three steps: 1146 ms; 654 ms of GPU idle in preprocessing = 57.07% of the window, a
// bound of 1 / (1 - 0.5707) = 2.329x. Verdict host-preprocessing (low-gpu-utilization and
// cpu-bound are its symptoms), with no CUDA graph / compile advice.
TEST(HostPreprocessing, PipelinePreprocessingIsTheVerdict) {
  const TraceModel m =
      load_trace_text(inference_steps(3, "transformers/pipelines/video_classification.py(110): preprocess",
                                      "decord/video_reader.py(200): get_batch", "PIL/Image.py(2200): resize", true));
  const TraceAnalysis a = analyze_trace(m, {});
  const PythonFramesResult& p = a.python_frames;
  EXPECT_TRUE(p.recorded);
  EXPECT_EQ(p.preprocessing_ns, 654'000'000);       // 3 x 218 ms
  EXPECT_EQ(p.preprocessing_idle_ns, 654'000'000);  // the GPU idles through all of it
  ASSERT_EQ(p.preprocessing.size(), 3u);
  EXPECT_EQ(p.preprocessing[0].frame, "transformers/pipelines/video_classification.py: preprocess");
  EXPECT_EQ(p.preprocessing[0].inclusive_ns, 654'000'000);
  EXPECT_EQ(p.preprocessing[0].self_ns, 9'000'000);  // 218 - 118 - 97 = 3 ms per step
  EXPECT_EQ(p.preprocessing[1].frame, "decord/video_reader.py: get_batch");
  EXPECT_EQ(p.preprocessing[1].inclusive_ns, 354'000'000);
  EXPECT_EQ(p.preprocessing[2].frame, "PIL/Image.py: resize");
  EXPECT_EQ(p.preprocessing[2].inclusive_ns, 291'000'000);
  // Host blockers see the preprocessing too: it is no launch or operator overhead.
  EXPECT_EQ(a.host_blockers.launch.idle.preprocessing_ns, 654'000'000);
  EXPECT_NE(a.host_blockers.launch.regime, HostRegime::kLaunchBound);

  const Diagnosis d = diagnose(a);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.verdict.finding_id, "host-preprocessing");
  const Finding& f = d.findings.front();
  ASSERT_EQ(f.id, "host-preprocessing");
  EXPECT_EQ(f.severity, Severity::kHigh);
  EXPECT_NEAR(evidence(f, "preprocessing_ms_per_step"), 218.0, 1e-9);
  EXPECT_NEAR(evidence(f, "step_ms"), 382.0, 1e-9);
  EXPECT_NEAR(evidence(f, "gpu_idle_in_preprocessing_pct"), 100.0 * 218 / 382, 1e-9);  // 57.07%
  EXPECT_NEAR(f.max_speedup, 382.0 / 164.0, 1e-9);                                     // 2.329x
  // Predicted: the preprocess frame keeps a thousandth of its 218 ms (0.218 ms); the forward, its
  // kernels and the step's end move 217.782 ms earlier: 382 / 164.218 = 2.326x.
  EXPECT_NEAR(f.predicted_speedup, 382.0 / 164.218, 1e-6);
  EXPECT_TRUE(mentions(f.title, "218.0 ms of each 382.0 ms step")) << f.title;
  EXPECT_TRUE(mentions(f.detail, "`decord/video_reader.py: get_batch` 118.0 ms")) << f.detail;
  EXPECT_TRUE(mentions(f.detail, "`PIL/Image.py: resize` 97.0 ms")) << f.detail;
  EXPECT_FALSE(suggests_graphs_or_compile(f));
  EXPECT_TRUE(mentions(f.fixes.front().text, "num_workers"));
  // No finding blames launch overhead for it.
  EXPECT_EQ(find(d, "launch-bound"), nullptr);
}

// The same step with Python that is no preprocessing (metrics in plain Python, no ids: the tree
// comes from nesting): the frames are named in the host-wait findings, no host-preprocessing.
// `train.py: compute_metrics` holds 218 ms of GPU idle per step; it encloses 97% of the Python
// idle time (224 ms), like the root: the innermost such frame is named.
TEST(HostPreprocessing, PythonFramesNamedWithoutCallingThemPreprocessing) {
  const TraceModel m = load_trace_text(inference_steps(
      3, "train.py(88): compute_metrics", "train.py(120): per_class_recall", "train.py(140): confusion_matrix", false));
  const TraceAnalysis a = analyze_trace(m, {});
  const PythonFramesResult& p = a.python_frames;
  EXPECT_EQ(p.preprocessing_ns, 0);
  EXPECT_EQ(p.python_idle_ns, 3 * 224'000'000);
  EXPECT_EQ(p.python_only_idle_ns, 3 * (224'000'000 - 100 * 8'000));  // less the 100 x 8 us aten::linear per step
  ASSERT_GE(p.top.size(), 4u);
  EXPECT_EQ(p.top[0].frame, "infer.py: infer_one");
  EXPECT_EQ(p.top[0].depth, 0);
  EXPECT_EQ(p.top[1].frame, "train.py: compute_metrics");
  EXPECT_EQ(p.top[1].depth, 1);
  EXPECT_EQ(p.top[1].inclusive_ns, 654'000'000);
  EXPECT_EQ(p.top[1].self_ns, 9'000'000);

  const Diagnosis d = diagnose(a);
  EXPECT_EQ(find(d, "host-preprocessing"), nullptr);
  // Low utilization folds into cpu-bound, its more precise telling (one finding per cause).
  EXPECT_EQ(find(d, "low-gpu-utilization"), nullptr);
  const Finding* f = find(d, "cpu-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(mentions(f->detail, "`train.py: compute_metrics` 218.0 ms")) << f->detail;
  EXPECT_TRUE(mentions(f->detail, "`train.py: per_class_recall` 118.0 ms")) << f->detail;
  EXPECT_FALSE(mentions(f->detail, "`infer.py: infer_one`")) << f->detail;  // encloses everything
  EXPECT_FALSE(mentions(f->detail, "with_stack=True"));
  EXPECT_NEAR(evidence(*f, "gpu_idle_in_python_pct"), 100.0 * 224 / 382, 1e-9);
}

// No Python events: the host-wait findings say how to name the code.
TEST(HostPreprocessing, WithoutPythonEventsTheFindingsSayHowToRecordThem) {
  const TraceModel m = load_trace_text(inference_steps(3, "", "", "", false, /*python=*/false));
  const TraceAnalysis a = analyze_trace(m, {});
  EXPECT_FALSE(a.python_frames.recorded);
  const Diagnosis d = diagnose(a);
  const Finding* f = find(d, "cpu-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(mentions(f->detail, "with_stack=True")) << f->detail;
  EXPECT_EQ(find(d, "host-preprocessing"), nullptr);
}

// The recommendation-model step of issue 14 (A100): per 270 ms step at S (us):
//   1200 x aten::add [100i, 100i+95) each launching (cudaLaunchKernel [100i+5, 100i+25)) an 8 us
//     kernel at [100i+20, 100i+28): the GPU idles 92 of every 100 us while the host launches;
//   five ops [120000 + 6j, +6) (embedding_bag, index_select, cumsum, sort, scatter_add_: none holds
//     a quarter of the GPU time) launching 29.2 ms kernels back to back: GPU busy [120020, 266020);
//   aten::to [120040, 266100) > aten::_to_copy [120045, 266095) > aten::copy_ [120050, 266090) >
//     cudaMemcpyAsync [120055, 266085) (146.03 ms) reading 704 bytes: Memcpy DtoH (Device ->
//     Pageable) [266030, 266032), a 2 us transfer. The call waits 146 ms for big_gemm: a sync.
// Four steps, 1080 ms. GPU busy per step 1200 x 8 us + 146 ms + 2 us = 155.602 ms; idle 114.398.
// Stall after each sync: from its return (S+266085) for as long as it lasted (146.03 ms, to
// S'+142115 in the next step): idle [S+266085, S+270000) = 3.915 ms plus the next step's launch
// phase, 120.02 ms less 1200 x 8 us busy = 110.42 ms (the GPU is busy from S'+120020 on):
// 114.335 ms. The last step's sync is followed by no GPU work in the
// window: 3 x 114.335 = 343.005 ms = 31.76% of 1080 ms, 85.75 ms per step, a 1.4654x bound.
// Launch overhead keeps only step 1's launch phase, 20 us + 1200 x 87 us = 104.42 ms of idle in
// ops and launch calls (each 100 us slot idles [28, 120) of which [95, 100) outside any op), and
// the 15 us of the last step's aten::to after its sync returns: 104.435 ms, 22.8% of the 457.592 ms
// idle - not launch-bound any more (that needs half).
std::string sync_copy_steps(int steps) {
  std::vector<std::string> ev;
  int corr = 1;
  auto c = [](int n) { return "\"correlation\":" + std::to_string(n); };
  for (int k = 0; k < steps; ++k) {
    const double s = k * 270'000.0;
    ev.push_back(host("user_annotation", "ProfilerStep#" + std::to_string(k + 1), s, 270'000));
    for (int i = 0; i < 1200; ++i, ++corr) {
      ev.push_back(host("cpu_op", "aten::add", s + 100 * i, 95));
      ev.push_back(host("cuda_runtime", "cudaLaunchKernel", s + 100 * i + 5, 20, c(corr)));
      ev.push_back(gpu("kernel", "elementwise_kernel", s + 100 * i + 20, 8, corr));
    }
    const char* ops[] = {"aten::embedding_bag", "aten::index_select", "aten::cumsum", "aten::sort",
                         "aten::scatter_add_"};
    for (int j = 0; j < 5; ++j, ++corr) {
      ev.push_back(host("cpu_op", ops[j], s + 120'000 + 6 * j, 6));
      ev.push_back(host("cuda_runtime", "cudaLaunchKernel", s + 120'001 + 6 * j, 4, c(corr)));
      ev.push_back(gpu("kernel", std::string(ops[j] + 6) + "_kernel", s + 120'020 + 29'200 * j, 29'200, corr));
    }
    ev.push_back(host("cpu_op", "aten::to", s + 120'040, 146'060));
    ev.push_back(host("cpu_op", "aten::_to_copy", s + 120'045, 146'050));
    ev.push_back(host("cpu_op", "aten::copy_", s + 120'050, 146'040));
    ev.push_back(host("cuda_runtime", "cudaMemcpyAsync", s + 120'055, 146'030, c(corr)));
    ev.push_back(gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", s + 266'030, 2, corr++, ",\"bytes\":704"));
  }
  return trace(ev);
}

TEST(HostSyncCopies, SmallBlockingReadIsAHostSyncRankedAboveLaunchOverhead) {
  const TraceModel m = load_trace_text(sync_copy_steps(4));
  const TraceAnalysis a = analyze_trace(m, {});
  const HostBlockersResult& h = a.host_blockers;
  EXPECT_EQ(h.syncs.count, 4u);
  EXPECT_EQ(h.syncs.copy_syncs, 4u);
  EXPECT_EQ(h.syncs.copy_sync_bytes, 4 * 704);
  EXPECT_EQ(h.syncs.copy_sync_transfer_ns, 4 * 2'000);
  EXPECT_EQ(h.syncs.gpu_stall_ns, 343'005'000);
  ASSERT_EQ(h.syncs.copy_sync_stacks.size(), 1u);
  EXPECT_EQ(h.syncs.copy_sync_stacks[0].name, "aten::to > aten::_to_copy > aten::copy_ > cudaMemcpyAsync");
  EXPECT_EQ(h.copies.pageable_in_syncs, 4u);  // not a pageable-copy cost as well
  EXPECT_EQ(h.copies.pageable_cost_ns, 0);
  EXPECT_EQ(h.launch.launch_calls, 4u * 1205);  // the copies are no launch overhead
  EXPECT_EQ(h.launch.idle.gpu_idle_ns, 4 * 114'398'000);
  EXPECT_EQ(h.launch.idle.sync_ns, 343'005'000 + 4 * 63'000);  // + idle inside the calls: 10 + 53 us each
  EXPECT_EQ(h.launch.idle.issuing_ns(), 104'435'000);
  EXPECT_EQ(h.launch.regime, HostRegime::kOther);

  const Diagnosis d = diagnose(a);
  EXPECT_EQ(d.verdict.finding_id, "host-sync");
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings.front();
  ASSERT_EQ(f.id, "host-sync");
  // The stall alone bounds 1080 / (1080 - 343.005) = 1.4654x. The what-if re-times the steps
  // without the read: step 1 still ends with its GPU work at 266.032 ms (120.020 + 5 x 29.2 ms of
  // kernels, then the 2 us copy, 10 us after); steps 2-4 were launched while step 1's GPU work ran,
  // so their GPU runs back to back: 1200 x (8 us kernel + 4 us front-end gap) + 5 x 29.2 ms =
  // 160.4 ms, plus the copy. Mean step 270 -> (266.032 + 3 x 160.41) / 4 ms.
  const double predicted = 270.0 / ((266.032 + 3 * 160.41) / 4);
  EXPECT_NEAR(f.predicted_speedup, predicted, 0.005 * predicted);
  EXPECT_LE(f.predicted_speedup, 1080 / (1080 - 4 * 114.398));  // below the GPU-busy ceiling
  // The prediction, over a window whose first step cannot run ahead, is below the stall's bound:
  // the bound stays.
  EXPECT_NEAR(f.max_speedup, 1080 / (1080 - 343.005), 1e-9);
  EXPECT_NEAR(evidence(f, "gpu_stall_ms_per_step"), 343.005 / 4, 1e-9);
  EXPECT_NEAR(evidence(f, "copy_sync_bytes_per_copy"), 704, 1e-9);
  EXPECT_TRUE(mentions(f.title, "85.8 ms per step")) << f.title;
  EXPECT_TRUE(mentions(f.detail, "704 bytes")) << f.detail;
  EXPECT_TRUE(mentions(f.detail, "aten::to > aten::_to_copy > aten::copy_ > cudaMemcpyAsync")) << f.detail;
  // Launch overhead no longer claims the idle the sync causes: below host-sync if it fires at all.
  for (std::size_t i = 0; i < d.findings.size(); ++i)
    if (d.findings[i].id == "launch-bound") {
      EXPECT_GT(i, 0u);
      EXPECT_LE(d.findings[i].time_share, 104.435 / 1080 + 1e-9);
    }
  EXPECT_EQ(find(d, "pageable-copy"), nullptr);
}

}  // namespace rules_host_preprocessing_test
}  // namespace
}  // namespace ferret
