// The input-bound scenario (registered in gen/scenarios.cpp).
#include <array>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "gen/scenario_kernels.h"
#include "gen/scenario_step.h"

namespace ferret::scenario {

namespace {

using kineto::kernels::kSingleProcessLoader;

// ResNet-style CNN, bf16 channels-last, batch 64, DataLoader with num_workers=0: every step
// first decodes and augments its batch in the main process while the GPU waits.
class InputBound final : public Scenario {
 public:
  using Scenario::Scenario;
  static constexpr std::int64_t kShareNumerator = 2, kShareDenominator = 5;  // DataLoader = 40% of the step

  void build_step(StepTimeline& t) override {
    Random& rng = t.rng();
    t.advance(rng.between(us(15), us(40)));
    const StepTimeline::Mark loader_at = t.mark();
    const std::int64_t loader_start = t.now();

    // Everything after the DataLoader is built first, starting where the loader starts.
    copy_batch_to_device(t, "[64, 3, 224, 224]", 64LL * 3 * 224 * 224 * 4, /*pinned=*/false);
    t.open("cpu_op", "aten::to", shapes("[[64], [], [], [], [], []]", "[\"long int\", \"\", \"\", \"\", \"\", \"\"]"));
    t.advance(rng.between(3000, 6000));
    t.memcpy("Memcpy HtoD (Pageable -> Device)", 512, rng.between(1500, 2500), true);
    t.advance(rng.between(1000, 2000));
    t.close();

    constexpr int kLayers = 16;
    std::array<std::int64_t, kLayers> conv_ns{}, bn_ns{}, relu_ns{}, seq{};
    for (int layer = 0; layer < kLayers; ++layer) {
      const int stage = layer / 4;
      const std::int64_t channels = 64LL << stage, size = 56 >> stage;
      const std::string act = fmt::format("[64, {}, {}, {}]", channels, size, size);
      conv_ns[layer] = rng.between(us(500), us(1100));
      bn_ns[layer] = rng.between(us(60), us(120));
      relu_ns[layer] = rng.between(us(30), us(60));
      seq[layer] = t.ids().sequence;
      t.ids().sequence += 3;
      op_kernel(t, {"aten::conv2d", "aten::convolution", "aten::cudnn_convolution"},
                shapes(fmt::format("[{}, [{}, {}, 3, 3], [], [], [], [], []]", act, channels, channels),
                       "[\"c10::BFloat16\", \"c10::BFloat16\", \"\", \"\", \"\", \"\", \"\"]")
                    .integer("Sequence number", seq[layer]),
                kernels::kConvFprop, {conv_ns[layer], conv_ns[layer]}, {6000, 10000}, {us(12), us(25)});
      op_kernel(t, {"aten::batch_norm", "aten::cudnn_batch_norm"},
                shapes(fmt::format("[{}, [{}], [{}], [{}], [{}], [], [], [], []]", act, channels, channels, channels,
                                   channels),
                       "[\"c10::BFloat16\", \"float\", \"float\", \"float\", \"float\", \"\", \"\", \"\", \"\"]")
                    .integer("Sequence number", seq[layer] + 1),
                kernels::kBatchNormFwd, {bn_ns[layer], bn_ns[layer]}, {5000, 9000}, {us(10), us(20)});
      op_kernel(t, {"aten::relu_", "aten::clamp_min_"}, shapes(fmt::format("[{}]", act), "[\"c10::BFloat16\"]"),
                kernels::kReluFwd, {relu_ns[layer], relu_ns[layer]}, {5000, 8000}, {us(5), us(10)});
    }
    t.open("cpu_op", "aten::cross_entropy_loss",
           shapes("[[64, 1000], [64], [], [], [], []]", "[\"float\", \"long int\", \"\", \"\", \"\", \"\"]"));
    t.advance(rng.between(3000, 6000));
    op_kernel(t, {"aten::log_softmax", "aten::_log_softmax"}, Args(), kernels::kLogSoftmax, {us(8), us(14)},
              {5000, 8000}, {us(6), us(10)});
    op_kernel(t, {"aten::nll_loss_nd", "aten::nll_loss_forward"}, Args(), kernels::kNllLoss, {us(4), us(7)},
              {5000, 8000}, {us(6), us(10)});
    t.advance(rng.between(1000, 3000));
    t.close();

    // loss.backward(): the autograd thread replays the layers in reverse.
    t.advance(rng.between(us(20), us(40)));
    t.on_thread(kAutogradTid);
    for (int layer = kLayers - 1; layer >= 0; --layer) {
      backward_op(t, "ReluBackward0", seq[layer] + 2, "aten::threshold_backward",
                  {{&kernels::kReluBwd, relu_ns[layer] * 12 / 10}}, {5000, 9000}, {us(8), us(16)});
      backward_op(t, "CudnnBatchNormBackward0", seq[layer] + 1, "aten::cudnn_batch_norm_backward",
                  {{&kernels::kBatchNormBwd, bn_ns[layer] * 15 / 10}}, {5000, 9000}, {us(8), us(16)});
      backward_op(t, "ConvolutionBackward0", seq[layer], "aten::convolution_backward",
                  {{&kernels::kConvDgrad, rng.jitter(conv_ns[layer], 8)},
                   {&kernels::kConvWgrad, rng.jitter(conv_ns[layer] * 11 / 10, 8)}},
                  {5000, 9000}, {us(10), us(20)});
    }
    t.advance(rng.between(us(10), us(20)));
    t.on_thread(kMainTid);

    t.open("user_annotation", "Optimizer.step#SGD.step");
    t.advance(rng.between(us(20), us(40)));
    for (int i = 0; i < 3; ++i)
      op_kernel(t, {"aten::_foreach_add_"}, Args(), kernels::kSgdForeach, {us(120), us(200)}, {6000, 9000},
                {us(15), us(30)});
    t.advance(rng.between(us(5), us(10)));
    t.close();
    t.open("user_annotation", "Optimizer.zero_grad#SGD.zero_grad");
    t.advance(rng.between(us(30), us(60)));
    t.close();
    t.item();
    t.advance(rng.between(us(10), us(30)));

    // The DataLoader span is 2/5 of the finished step: with R the rest of the step (made a
    // multiple of 3 ns), the loader takes 2R/3 and the step 5R/3, so its share is exactly 0.4.
    t.advance((3 - t.now() % 3) % 3);
    const std::int64_t rest = t.now();
    const std::int64_t loader_ns = rest * kShareNumerator / (kShareDenominator - kShareNumerator);
    t.shift_since(loader_at, loader_ns);
    t.span("user_annotation", std::string(kSingleProcessLoader), loader_start, loader_ns);
    // The collate at the end of __next__: torch.stack of the decoded images.
    const std::int64_t collate_ns = rng.between(us(900), us(1500));
    t.span("cpu_op", "aten::stack", loader_start + loader_ns - collate_ns - us(40), collate_ns,
           shapes("[[], []]", "[\"TensorList\", \"\"]"));
    loader_total_ns_ += loader_ns;
    step_total_ns_ += t.now();
    for (const GpuSpan& g : t.gpu())
      if (g.start < loader_start + loader_ns && g.end > loader_start) busy_during_loader_ = true;
  }

  void add_ground_truth(nlohmann::ordered_json& truth) const override {
    truth["dataloader_share"] = rounded(static_cast<double>(loader_total_ns_) / static_cast<double>(step_total_ns_));
    truth["dataloader_name"] = kSingleProcessLoader;
    truth["gpu_idle_during_dataloader"] = !busy_during_loader_;
    truth["expected_finding"] =
        "input-bound: 40% of each step waits for the next batch in the main process; raise num_workers, "
        "pin_memory=True, prefetch";
  }

 private:
  std::int64_t loader_total_ns_ = 0;
  std::int64_t step_total_ns_ = 0;
  bool busy_during_loader_ = false;
};

}  // namespace

std::unique_ptr<Scenario> make_input_bound(Random& rng) { return std::make_unique<InputBound>(rng); }

}  // namespace ferret::scenario
