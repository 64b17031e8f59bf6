// What the traced job does (analysis/timeline/workload.h), by hand, and the fixes that fit it
// (diagnosis/device_fixes.h): text and JSON say the same.
#include "analysis/timeline/workload.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/trace_analysis.h"
#include "base/text.h"
#include "diagnosis/device_fixes.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace workload_test {

using test::span;

WorkloadResult of(const std::vector<std::string>& events) {
  const TraceModel m = load_trace_text(test::trace(events));
  return analyze_trace(m, {}).workload;
}

// Training: two backward functions and an optimizer step among forward ops; inference: forward
// ops only; serving: the same, from a vLLM frame; nothing at all: unknown.
TEST(Workload, TrainingInferenceServingByHand) {
  const std::vector<std::string> forward = {span("user_annotation", "ProfilerStep#1", 1, 1, 0, 100),
                                            span("cpu_op", "aten::linear", 1, 1, 10, 10),
                                            span("cpu_op", "aten::relu", 1, 1, 25, 5)};
  std::vector<std::string> training = forward;
  training.push_back(span("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 1, 2, 40, 10));
  training.push_back(span("cpu_op", "aten::threshold_backward", 1, 2, 52, 3));
  training.push_back(span("user_annotation", "Optimizer.step#AdamW.step", 1, 1, 70, 20));
  const WorkloadResult t = of(training);
  EXPECT_EQ(t.kind, Workload::kTraining);
  EXPECT_EQ(t.backward_ops, 2u);
  EXPECT_EQ(t.optimizer_steps, 1u);
  EXPECT_EQ(t.evidence, "2 backward ops, 1 optimizer step");

  const WorkloadResult i = of(forward);
  EXPECT_EQ(i.kind, Workload::kInference);
  EXPECT_EQ(i.forward_ops, 2u);
  EXPECT_EQ(i.evidence, "2 operators, no backward or optimizer op");

  std::vector<std::string> serving = forward;
  serving.push_back(span("python_function", "vllm/worker/model_runner.py(1500): execute_model", 1, 1, 5, 90));
  const WorkloadResult s = of(serving);
  EXPECT_EQ(s.kind, Workload::kServing);
  EXPECT_EQ(s.server, "vLLM");

  EXPECT_EQ(of({span("user_annotation", "ProfilerStep#1", 1, 1, 0, 100)}).kind, Workload::kUnknown);
}

// Inference and serving drop training's fixes; training drops inference-engine exports.
TEST(Workload, FixesFitTheWorkload) {
  Finding f;
  f.id = "exposed-communication";
  f.fixes = {"Gradient accumulation with `model.no_sync()` on all but the last micro-batch",
             "Fused optimizer step: `torch.optim.AdamW(model.parameters(), lr=lr, fused=True)`",
             "Export for inference with TensorRT: `torch_tensorrt.compile(model)`", "Raise the batch size"};
  std::vector<Finding> inference = {f};
  fit_fixes_to_workload(inference, Workload::kInference, "4 operators, no backward or optimizer op");
  ASSERT_EQ(inference[0].fixes.size(), 2u);
  EXPECT_TRUE(contains(inference[0].fixes[0].text, "TensorRT"));
  EXPECT_EQ(inference[0].fixes[0].because,
            std::vector<std::string>{"the trace runs inference (4 operators, no backward or optimizer op)"});
  say_fixes_left_out(inference);
  EXPECT_TRUE(
      contains(inference[0].detail, "2 fixes left out: it applies to training, and this window runs inference."))
      << inference[0].detail;
  ASSERT_EQ(inference[0].fixes_left_out.size(), 2u);
  EXPECT_EQ(inference[0].fixes_left_out[1].fix, f.fixes[1].text);
  // A serving engine runs its own kernels: no export of the model either.
  std::vector<Finding> serving = {f};
  fit_fixes_to_workload(serving, Workload::kServing);
  ASSERT_EQ(serving[0].fixes.size(), 1u);
  EXPECT_EQ(serving[0].fixes[0].text, "Raise the batch size");
  say_fixes_left_out(serving);
  EXPECT_TRUE(contains(serving[0].detail,
                       "3 fixes left out: it applies to training, and this window runs serving (2); a serving engine "
                       "runs this model with its own kernels."))
      << serving[0].detail;
  std::vector<Finding> training = {f};
  fit_fixes_to_workload(training, Workload::kTraining);
  ASSERT_EQ(training[0].fixes.size(), 3u);
  say_fixes_left_out(training);
  EXPECT_TRUE(contains(training[0].detail, "1 fix left out: it applies to inference, and this window runs training."));
  ASSERT_EQ(training[0].fixes_left_out.size(), 1u);
  EXPECT_EQ(training[0].fixes_left_out[0].fix, f.fixes[2].text);
  std::vector<Finding> unknown = {f};
  fit_fixes_to_workload(unknown, Workload::kUnknown);
  EXPECT_EQ(unknown[0].fixes, f.fixes);
}

// The report's third line and the JSON agree, on a sample the repository ships.
TEST(Workload, TextAndJsonAgreeOnASample) {
  const std::string path = std::string(FERRET_SOURCE_DIR) + "/examples/traces/cpu-host-sync.json.gz";
  const test::CommandResult text = test::run_ferret("analyze " + path);
  const test::CommandResult json = test::run_ferret("analyze --json " + path);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const nlohmann::json w = nlohmann::json::parse(json.out)["traces"][0]["window"]["workload"];
  EXPECT_EQ(w["kind"], "training");
  const std::string line = "workload: training (" + w["evidence"].get<std::string>() + ")";
  EXPECT_NE(text.out.find(line), std::string::npos) << text.out.substr(0, 400);
  EXPECT_GT(w["backward_ops"].get<int>(), 0);
  EXPECT_GT(w["optimizer_steps"].get<int>(), 0);
}

}  // namespace workload_test
}  // namespace
}  // namespace ferret
