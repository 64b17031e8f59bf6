// The launch-bound scenario (registered in gen/scenarios.cpp).
#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "gen/scenario_kernels.h"
#include "gen/scenario_step.h"

namespace ferret::scenario {

namespace {

// A small MLP-mixer-like model trained at batch 8 in eager mode: 100 blocks of six unfused ops,
// per-parameter SGD (foreach=False). Every op pays 10-20 us in cudaLaunchKernel for 2-5 us of GPU work.
class LaunchBound final : public Scenario {
 public:
  using Scenario::Scenario;
  static constexpr int kBlocks = 100;
  static constexpr int kOpsPerBlock = 6;
  static constexpr int kParameters = 200;
  static constexpr int kKernelsPerStep = 2 * kBlocks * kOpsPerBlock + kParameters;
  static constexpr Range kTinyKernel{2000, 4999};
  static constexpr Range kLaunchCall{10000, 20000};

  void build_step(StepTimeline& t) override {
    Random& rng = t.rng();
    t.advance(rng.between(us(10), us(20)));
    short_dataloader_wait(t);
    copy_batch_to_device(t, "[8, 512]", 8 * 512 * 4, /*pinned=*/true);

    struct OpKind {
      std::string_view outer, inner, node, backward_op;
      const KernelShape* forward;
      const KernelShape* backward;
    };
    static const std::array<OpKind, kOpsPerBlock> kOps = {{
        {"aten::linear", "aten::addmm", "AddmmBackward0", "aten::mm", &kernels::kSmallGemm, &kernels::kSmallGemm},
        {"aten::add", "", "AddBackward0", "aten::sum", &kernels::kSmallAdd, &kernels::kSmallReduce},
        {"aten::mul", "", "MulBackward0", "aten::mul", &kernels::kSmallMul, &kernels::kSmallMul},
        {"aten::gelu", "", "GeluBackward0", "aten::gelu_backward", &kernels::kSmallGelu, &kernels::kSmallGelu},
        {"aten::layer_norm", "aten::native_layer_norm", "NativeLayerNormBackward0", "aten::native_layer_norm_backward",
         &kernels::kSmallLayerNorm, &kernels::kSmallLayerNorm},
        {"aten::dropout", "aten::native_dropout", "NativeDropoutBackward0", "aten::native_dropout_backward",
         &kernels::kSmallDropout, &kernels::kSmallMul},
    }};
    const std::int64_t first_sequence = t.ids().sequence;
    for (int block = 0; block < kBlocks; ++block) {
      for (const OpKind& op : kOps) {
        const Args dims =
            shapes("[[8, 512], [512, 512]]", "[\"float\", \"float\"]").integer("Sequence number", t.ids().sequence++);
        if (op.inner.empty())
          op_kernel(t, {op.outer}, dims, *op.forward, kTinyKernel, kLaunchCall, {us(3), us(8)});
        else
          op_kernel(t, {op.outer, op.inner}, dims, *op.forward, kTinyKernel, kLaunchCall, {us(3), us(8)});
      }
    }
    t.open("cpu_op", "aten::mse_loss", shapes("[[8, 512], [8, 512], []]", "[\"float\", \"float\", \"Scalar\"]"));
    t.advance(rng.between(us(3), us(6)));
    t.close();

    t.advance(rng.between(us(15), us(30)));
    t.on_thread(kAutogradTid);
    for (int block = kBlocks - 1; block >= 0; --block) {
      for (int i = kOpsPerBlock - 1; i >= 0; --i) {
        const OpKind& op = kOps[static_cast<std::size_t>(i)];
        const std::int64_t sequence = first_sequence + block * kOpsPerBlock + i;
        backward_op(t, op.node, sequence, op.backward_op, {{op.backward, rng.draw(kTinyKernel)}}, kLaunchCall,
                    {us(4), us(9)});
      }
    }
    t.advance(rng.between(us(5), us(10)));
    t.on_thread(kMainTid);

    t.open("user_annotation", "Optimizer.step#SGD.step");
    t.advance(rng.between(us(15), us(30)));
    for (int p = 0; p < kParameters; ++p)
      op_kernel(t, {"aten::add_"}, shapes("[[512, 512], [512, 512], []]", "[\"float\", \"float\", \"Scalar\"]"),
                kernels::kSmallAdd, kTinyKernel, kLaunchCall, {us(2), us(5)});
    t.advance(rng.between(us(5), us(10)));
    t.close();
    t.item();
    t.advance(rng.between(us(10), us(30)));

    for (const GpuSpan& g : t.gpu())
      if (g.kind == GpuKind::kKernel) kernel_ns_.push_back(g.end - g.start);
    for (const TraceEvent& e : t.events())
      if (e.category == "cuda_runtime" && e.name == "cudaLaunchKernel") launch_ns_.push_back(e.dur);
  }

  void add_ground_truth(nlohmann::ordered_json& truth) const override {
    std::vector<std::int64_t> kernels = kernel_ns_, launches = launch_ns_;
    std::sort(kernels.begin(), kernels.end());
    std::sort(launches.begin(), launches.end());
    truth["kernels_per_step"] = kKernelsPerStep;
    truth["kernel_ns_range"] = {kTinyKernel.lo, kTinyKernel.hi};
    truth["launch_ns_range"] = {kLaunchCall.lo, kLaunchCall.hi};
    // Lower median (element (n-1)/2 of the sorted values).
    truth["median_kernel_ns"] = kernels.empty() ? 0 : kernels[(kernels.size() - 1) / 2];
    truth["median_launch_ns"] = launches.empty() ? 0 : launches[(launches.size() - 1) / 2];
    truth["expected_finding"] =
        "launch-bound: thousands of tiny kernels per step, each shorter than its launch call; the GPU idles "
        "between them. Fuse ops (torch.compile), CUDA graphs, larger batches";
  }

 private:
  std::vector<std::int64_t> kernel_ns_;
  std::vector<std::int64_t> launch_ns_;
};

}  // namespace

std::unique_ptr<Scenario> make_launch_bound(Random& rng) { return std::make_unique<LaunchBound>(rng); }

}  // namespace ferret::scenario
