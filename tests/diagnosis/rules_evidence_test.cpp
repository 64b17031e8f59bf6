// When the evidence cannot answer, or no rule names a cause: the largest cost is still named
// (top-cost), and inference that runs in training mode is told apart from training.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rules_evidence_test {

using test::corr;
using test::span;
using test::trace;

const Finding* find(const Diagnosis& d, const std::string& id) {
  const auto it = std::find_if(d.findings.begin(), d.findings.end(), [&](const Finding& f) { return f.id == id; });
  return it == d.findings.end() ? nullptr : &*it;
}

Diagnosis diagnose_text(const std::vector<std::string>& events) {
  return diagnose(analyze_trace(load_trace_text(trace(events)), {}));
}

TEST(TopCost, SlowConvolutionIsNamedWhenNoRuleFires) {
  // A CPU forward: conv2d (40 us self) around PyTorch's fallback convolution (760 us), then relu
  // (200 us): 1,000 us in operators over a 1,000 us trace. conv2d's 4% is far from matmul-dominated.
  const Diagnosis d = diagnose_text({
      span("cpu_op", "aten::conv2d", 1, 1, 0, 800),
      span("cpu_op", "aten::_slow_conv2d_forward", 1, 1, 20, 760),
      span("cpu_op", "aten::relu", 1, 1, 800, 200),
  });
  EXPECT_FALSE(d.verdict.bottleneck_found);
  const Finding* f = find(d, "top-cost");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_DOUBLE_EQ(f->max_speedup, 1.0);
  EXPECT_NEAR(f->time_share, 0.76, 1e-9);  // 760 / 1,000
  EXPECT_NE(f->title.find("aten::_slow_conv2d_forward: 76% of the host time in operators (1 call, 760.000 us)"),
            std::string::npos)
      << f->title;
  EXPECT_NE(f->title.find("slow fallback"), std::string::npos);
  EXPECT_NE(f->detail.find("oneDNN"), std::string::npos);
  EXPECT_TRUE(std::ranges::any_of(fix_texts(*f),
                                  [](const std::string& s) { return s.find("channels_last") != std::string::npos; }));
  // The headline never reads as "healthy": it names the cost.
  EXPECT_NE(d.verdict.headline.find("No rule crossed its threshold"), std::string::npos) << d.verdict.headline;
  EXPECT_NE(d.verdict.headline.find("; the largest cost is aten::_slow_conv2d_forward: 76%"), std::string::npos)
      << d.verdict.headline;
  EXPECT_EQ(d.verdict.headline.find("minor findings"), std::string::npos) << d.verdict.headline;
}

// Two CPU ops of 100 us in a 600 us trace, Python between them: 400 us (67%) pass in no operator,
// more than either op: the largest cost is named as that, the op beside it.
TEST(TopCost, TimeOutsideOperatorsNamedFirstWhenLargest) {
  const Diagnosis d =
      diagnose_text({span("cpu_op", "aten::mm", 1, 1, 0, 100), span("cpu_op", "aten::add", 1, 1, 500, 100)});
  const Finding* f = find(d, "top-cost");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("host time outside every operator: 67% of the trace (400.000 us), more than aten::mm"),
            std::string::npos)
      << f->title;
  EXPECT_NE(f->fixes.front().text.find("with_stack=True"), std::string::npos);
}

TEST(TopCost, NotWrittenBesideAVerdict) {
  // 600 us of 1,000 in a matmul on the CPU: matmul-dominated is the verdict; no top-cost.
  const Diagnosis d = diagnose_text({
      span("cpu_op", "aten::mm", 1, 1, 0, 600),
      span("cpu_op", "aten::relu", 1, 1, 600, 400),
  });
  EXPECT_TRUE(d.verdict.bottleneck_found);
  EXPECT_EQ(find(d, "top-cost"), nullptr);
}

// An inference forward on the CPU: linear 500 us, dropout 200 us (bernoulli_ 140 us, div_ 40 us
// inside it), relu 300 us; 1,000 us in all. `extra` adds events (a backward op, ...).
std::vector<std::string> cpu_forward_with_dropout(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> events = {
      span("cpu_op", "aten::linear", 1, 1, 0, 500),       span("cpu_op", "aten::dropout", 1, 1, 500, 200),
      span("cpu_op", "aten::bernoulli_", 1, 1, 510, 140), span("cpu_op", "aten::div_", 1, 1, 650, 40),
      span("cpu_op", "aten::relu", 1, 1, 700, 300),
  };
  events.insert(events.end(), extra.begin(), extra.end());
  return events;
}

TEST(InferenceInTrainingMode, DropoutDrawingMasksInInference) {
  const Diagnosis d = diagnose_text(cpu_forward_with_dropout());
  const Finding* f = find(d, "inference-in-training-mode");
  ASSERT_NE(f, nullptr);
  // The whole aten::dropout call (200 us of 1,000): the mask and its multiply.
  EXPECT_NEAR(f->time_share, 0.2, 1e-9);
  EXPECT_NEAR(f->max_speedup, 1.25, 1e-9);  // 1 / (1 - 0.2)
  // Predicted: eval mode leaves the dropout nothing (a thousandth of its 200 us): 1000 / 800.2.
  EXPECT_NEAR(f->predicted_speedup, 1000.0 / 800.2, 1e-4);
  EXPECT_NE(f->title.find("1 dropout call drawing masks (200.000 us of host time, 20.0% of the trace)"),
            std::string::npos)
      << f->title;
  EXPECT_NE(f->fixes.front().text.find("model.eval()"), std::string::npos);
  EXPECT_TRUE(std::ranges::any_of(
      fix_texts(*f), [](const std::string& s) { return s.find("torch.inference_mode()") != std::string::npos; }));
}

TEST(InferenceInTrainingMode, TrainingTracesAreLeftAlone) {
  // A backward op anywhere in the trace makes it training: dropout is meant.
  EXPECT_EQ(find(diagnose_text(cpu_forward_with_dropout(
                     {span("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 2, 2, 1000, 100)})),
                 "inference-in-training-mode"),
            nullptr);
  EXPECT_EQ(
      find(diagnose_text(cpu_forward_with_dropout({span("cpu_op", "aten::convolution_backward", 1, 1, 1000, 50)})),
           "inference-in-training-mode"),
      nullptr);
  EXPECT_EQ(find(diagnose_text(
                     cpu_forward_with_dropout({span("user_annotation", "Optimizer.step#SGD.step", 1, 1, 1000, 50)})),
                 "inference-in-training-mode"),
            nullptr);
}

TEST(InferenceInTrainingMode, EvalDropoutDrawsNothing) {
  // In eval mode aten::dropout returns its input: no bernoulli_ below it.
  EXPECT_EQ(
      find(diagnose_text({span("cpu_op", "aten::linear", 1, 1, 0, 500), span("cpu_op", "aten::dropout", 1, 1, 500, 2),
                          span("cpu_op", "aten::relu", 1, 1, 502, 300)}),
           "inference-in-training-mode"),
      nullptr);
  // native_dropout recorded with train=False.
  EXPECT_EQ(find(diagnose_text({span("cpu_op", "aten::native_dropout", 1, 1, 0, 100,
                                     R"("Concrete Inputs": ["", "0.1", "False"])"),
                                span("cpu_op", "aten::relu", 1, 1, 100, 300)}),
                 "inference-in-training-mode"),
            nullptr);
}

std::string batch_norm_args(const char* training, const char* running_mean_dims) {
  return std::string(R"("Input Dims": [[8, 64, 32, 32], [64], [64], )") + running_mean_dims +
         R"(, [64], [], [], [], []], "Concrete Inputs": ["", "", "", "", "", ")" + training +
         R"(", "0.1", "1e-05", "True"])";
}

TEST(InferenceInTrainingMode, BatchNormUpdatingRunningStatistics) {
  // batch_norm 300 us (its native_batch_norm inside) of a 1,000 us forward, training=True with
  // running stats: one call, 30%.
  const Diagnosis d = diagnose_text({
      span("cpu_op", "aten::batch_norm", 1, 1, 0, 300, batch_norm_args("True", "[64]")),
      span("cpu_op", "aten::native_batch_norm", 1, 1, 10, 280, batch_norm_args("True", "[64]")),
      span("cpu_op", "aten::relu", 1, 1, 300, 700),
  });
  const Finding* f = find(d, "inference-in-training-mode");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->time_share, 0.3, 1e-9);
  // Predicted: batch norm in eval mode makes one pass of the two (half its 300 us): 1000 / 850.
  EXPECT_NEAR(f->predicted_speedup, 1000.0 / 850.0, 1e-4);
  EXPECT_NE(f->title.find("1 batch norm computing batch statistics (300.000 us of host time, 30.0% of the trace)"),
            std::string::npos)
      << f->title;
  // training=False (eval), or no running stats (instance norm, track_running_stats=False): no finding.
  for (const auto& [training, mean] : {std::pair{"False", "[64]"}, std::pair{"True", "[]"}})
    EXPECT_EQ(find(diagnose_text({span("cpu_op", "aten::batch_norm", 1, 1, 0, 300, batch_norm_args(training, mean)),
                                  span("cpu_op", "aten::relu", 1, 1, 300, 700)}),
                   "inference-in-training-mode"),
              nullptr)
        << training << " " << mean;
}

TEST(InferenceInTrainingMode, CudnnTrainingKernelsWithoutShapes) {
  // No record_shapes: the cuDNN forward-training kernel (40 us of a 1,000 us window) says it.
  const Diagnosis d = diagnose_text({
      span("cpu_op", "aten::linear", 1, 1, 0, 1000),
      span("cpu_op", "aten::cudnn_batch_norm", 1, 1, 100, 50),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 110, 5, corr(1)),
      span("kernel", "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>", 0, 7, 120, 40, corr(1)),
      span("cuda_runtime", "cudaLaunchKernel", 1, 1, 200, 5, corr(2)),
      span("kernel", "gemm_kernel", 0, 7, 210, 700, corr(2)),
  });
  const Finding* f = find(d, "inference-in-training-mode");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->time_share, 0.04, 1e-9);  // 40 us of GPU time over the 1,000 us window
  EXPECT_NE(f->title.find("1 batch norm computing batch statistics (40.000 us of GPU time, 4.0% of the trace)"),
            std::string::npos)
      << f->title;
}

// Real traces (tests/data/evidence/record_forward_modes.py, PyTorch 1.13 on the CPU): five no_grad
// forwards of a small CNN with dropout, in training mode and after model.eval(). Recorded, so only
// what the recording fixes is checked: which rule fires and on which op.
std::string evidence_path(const std::string& name) {
  return std::string(FERRET_SOURCE_DIR) + "/tests/data/evidence/" + name;
}

// Each recording twice: Debian's torch 1.13 (legacy export) and torch 2.x (Kineto, ".torch2").
const char* const kRecordings[] = {"", ".torch2"};

TEST(InferenceInTrainingMode, RecordedForwardInTrainingMode) {
  for (const std::string suffix : kRecordings) {
    const Diagnosis d = diagnose(analyze_trace(load_trace(evidence_path("forward-train" + suffix + ".json.gz")), {}));
    const Finding* f = find(d, "inference-in-training-mode");
    ASSERT_NE(f, nullptr) << suffix;
    EXPECT_NE(f->title.find("5 dropout calls drawing masks"), std::string::npos) << f->title;
    EXPECT_GT(f->time_share, 0.0);
  }
}

// A C++ extension (tests/data/evidence/record_cpp_extension.py, PyTorch 1.13 on the CPU): the
// same operator registered with the dispatcher (recorded as ferret_demo::row_norms) and bound with
// pybind11 alone (not recorded). A second reader over the raw events: the registered op's self time
// (its duration less its children's), and the time outside every operator (the trace's span less
// the union of the operators' spans, all on one thread).
class RecordedCppExtension : public testing::TestWithParam<std::string> {};

TEST_P(RecordedCppExtension, OperatorAndTimeOutsideOperators) {
  const std::string path = evidence_path("cpp-extension" + GetParam() + ".json.gz");
  const nlohmann::json doc = nlohmann::json::parse(test::gunzip(test::read_file(path)));
  const nlohmann::json& events = doc.is_array() ? doc : doc["traceEvents"];
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;  // ns
  std::vector<std::pair<std::int64_t, std::int64_t>> ext;
  for (const nlohmann::json& e : events) {
    // Operators (the legacy export gives them no category); not Kineto's span of the whole recording.
    if (e.value("ph", "") != "X" || e.value("cat", "cpu_op") != "cpu_op") continue;
    const auto ts = static_cast<std::int64_t>(e["ts"].get<double>() * 1000);
    const auto dur = static_cast<std::int64_t>(e["dur"].get<double>() * 1000);
    spans.push_back({ts, ts + dur});
    if (e["name"] == "ferret_demo::row_norms") ext.push_back({ts, ts + dur});
  }
  ASSERT_EQ(ext.size(), 5u);
  std::sort(spans.begin(), spans.end());
  std::int64_t union_ns = 0, covered_to = INT64_MIN, first = spans.front().first, last = first;
  for (const auto& [a, b] : spans) {
    if (b > std::max(a, covered_to)) union_ns += b - std::max(a, covered_to);
    covered_to = std::max(covered_to, b);
    last = std::max(last, b);
  }
  std::int64_t ext_self = 0;
  for (const auto& [a, b] : ext) {
    ext_self += b - a;
    for (const auto& [c, d] : spans)
      if (c >= a && d <= b && !(c == a && d == b)) ext_self -= d - c;  // its children (one level: aten::empty)
  }
  const std::int64_t outside = (last - first) - union_ns;

  const TraceModel model = load_trace(path);
  const TraceAnalysis a = analyze_trace(model, {});
  const auto row = std::find_if(a.hot_spots.ops_by_host.begin(), a.hot_spots.ops_by_host.end(),
                                [](const OpStat& o) { return o.name == "ferret_demo::row_norms"; });
  ASSERT_NE(row, a.hot_spots.ops_by_host.end());
  EXPECT_EQ(row->calls, 5u);
  EXPECT_EQ(row->host_self_ns, ext_self);
  const Diagnosis d = diagnose(a);
  const Finding* f = find(d, "top-cost");
  ASSERT_NE(f, nullptr);
  double outside_ms = -1;
  for (const Evidence& e : f->evidence)
    if (e.name == "outside_ops_ms") outside_ms = e.value;
  EXPECT_NEAR(outside_ms, static_cast<double>(outside) / 1e6, 1e-3);
  EXPECT_GT(outside, (last - first) / 10);  // the pybind11 calls: a quarter of the trace
  EXPECT_NE(f->detail.find("pybind11"), std::string::npos) << f->detail;
  EXPECT_TRUE(std::ranges::any_of(fix_texts(*f),
                                  [](const std::string& s) { return s.find("TORCH_LIBRARY") != std::string::npos; }));
}

INSTANTIATE_TEST_SUITE_P(TopCost, RecordedCppExtension, testing::Values(std::string(), std::string(".torch2")),
                         [](const testing::TestParamInfo<std::string>& i) {
                           return i.param.empty() ? std::string("Torch1") : std::string("Torch2");
                         });

TEST(TopCost, RecordedEvalForwardTorch2) {
  // torch 2.x's eager forward at batch 1 spends more of its 0.6 ms in Python than in any operator:
  // the headline names that first; eval mode draws no dropout masks.
  const TraceModel m = load_trace(evidence_path("forward-eval.torch2.json.gz"));
  const TraceAnalysis a = analyze_trace(m, {});
  const Diagnosis d = diagnose(a);
  EXPECT_EQ(find(d, "inference-in-training-mode"), nullptr);
  EXPECT_FALSE(d.verdict.bottleneck_found);
  ASSERT_FALSE(a.hot_spots.ops_by_host.empty());
  EXPECT_EQ(a.hot_spots.ops_by_host.front().name, "aten::_slow_conv2d_forward");
  const Finding* f = find(d, "top-cost");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->detail.find("aten::_slow_conv2d_forward"), std::string::npos) << f->detail;
}

TEST(TopCost, RecordedEvalForwardNamesTheSlowConvolution) {
  const Diagnosis d = diagnose(analyze_trace(load_trace(evidence_path("forward-eval.json.gz")), {}));
  EXPECT_EQ(find(d, "inference-in-training-mode"), nullptr);  // eval: aten::dropout draws nothing
  EXPECT_FALSE(d.verdict.bottleneck_found);
  const Finding* f = find(d, "top-cost");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("aten::_slow_conv2d_forward"), std::string::npos) << f->title;
  EXPECT_NE(d.verdict.headline.find("the largest cost is aten::_slow_conv2d_forward"), std::string::npos)
      << d.verdict.headline;
}

}  // namespace rules_evidence_test
}  // namespace
}  // namespace ferret
