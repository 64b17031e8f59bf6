// The compute-bound scenario (registered in gen/scenarios.cpp).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "gen/scenario_kernels.h"
#include "gen/scenario_step.h"

namespace ferret::scenario {

namespace {

// A 12-layer fp32 MLP (batch 256, width 16384) with TF32 off: every GEMM runs cuBLAS's SIMT
// sgemm on CUDA cores for milliseconds. The GPU is saturated; the fix is precision, not overlap.
class ComputeBound final : public Scenario {
 public:
  using Scenario::Scenario;
  static constexpr int kLayers = 12;

  void build_step(StepTimeline& t) override {
    Random& rng = t.rng();
    t.advance(rng.between(us(15), us(40)));
    short_dataloader_wait(t);
    copy_batch_to_device(t, "[256, 16384]", 256LL * 16384 * 4, /*pinned=*/true);

    std::array<std::int64_t, kLayers> gemm_ns{}, seq{};
    const Args linear = shapes("[[256, 16384], [16384, 16384], [16384]]", "[\"float\", \"float\", \"float\"]");
    for (int layer = 0; layer < kLayers; ++layer) {
      gemm_ns[layer] = rng.between(us(2200), us(3000));
      seq[layer] = t.ids().sequence;
      t.ids().sequence += 2;
      op_kernel(t, {"aten::linear", "aten::addmm"}, Args(linear).integer("Sequence number", seq[layer]),
                kernels::kSgemmNN, {gemm_ns[layer], gemm_ns[layer]}, {6000, 9000}, {us(10), us(20)});
      op_kernel(t, {"aten::gelu"},
                shapes("[[256, 16384], []]", "[\"float\", \"\"]").integer("Sequence number", seq[layer] + 1),
                kernels::kGeluFwd, {us(60), us(90)}, {5000, 8000}, {us(5), us(10)});
    }
    op_kernel(t, {"aten::mse_loss"}, shapes("[[256, 16384], [256, 16384], []]", "[\"float\", \"float\", \"Scalar\"]"),
              kernels::kMseLoss, {us(20), us(30)}, {5000, 8000}, {us(5), us(10)});

    t.advance(rng.between(us(20), us(40)));
    t.on_thread(kAutogradTid);
    for (int layer = kLayers - 1; layer >= 0; --layer) {
      backward_op(t, "GeluBackward0", seq[layer] + 1, "aten::gelu_backward",
                  {{&kernels::kGeluBwd, rng.between(us(80), us(120))}}, {5000, 8000}, {us(8), us(14)});
      backward_op(t, "AddmmBackward0", seq[layer], "aten::mm",
                  {{&kernels::kSgemmNT, rng.jitter(gemm_ns[layer], 5)},
                   {&kernels::kSgemmTN, rng.jitter(gemm_ns[layer], 5)},
                   {&kernels::kBiasReduce, rng.between(us(20), us(40))}},
                  {5000, 8000}, {us(10), us(20)});
    }
    t.advance(rng.between(us(5), us(10)));
    t.on_thread(kMainTid);

    t.open("user_annotation", "Optimizer.step#Adam.step");
    t.advance(rng.between(us(30), us(60)));
    for (std::string_view op : {"aten::_foreach_mul_", "aten::_foreach_add_", "aten::_foreach_addcmul_",
                                "aten::_foreach_sqrt", "aten::_foreach_div_", "aten::_foreach_addcdiv_"})
      op_kernel(t, {op}, Args(), kernels::kAdamForeach, {us(150), us(250)}, {6000, 9000}, {us(10), us(20)});
    t.advance(rng.between(us(5), us(10)));
    t.close();
    t.item();
    t.advance(rng.between(us(10), us(30)));

    for (const GpuSpan& g : t.gpu()) {
      if (g.kind != GpuKind::kKernel) continue;
      kernel_total_ns_ += g.end - g.start;
    }
    for (const TraceEvent& e : t.events())
      if (e.category == "kernel" && e.name.find("sgemm") != std::string::npos) sgemm_ns_ += e.dur;
  }

  void add_ground_truth(nlohmann::ordered_json& truth) const override {
    truth["sgemm_share_of_kernel_time"] =
        rounded(static_cast<double>(sgemm_ns_) / static_cast<double>(kernel_total_ns_));
    truth["tensor_core_share_of_kernel_time"] = 0.0;
    truth["dominant_kernel"] = kernels::kSgemmNN.name;
    truth["expected_finding"] =
        "compute-bound: the GPU is busy over 90% of each step, almost all in fp32 SIMT sgemm; enable TF32 or "
        "bf16 autocast to use Tensor Cores";
  }

 private:
  std::int64_t kernel_total_ns_ = 0;
  std::int64_t sgemm_ns_ = 0;
};

}  // namespace

std::unique_ptr<Scenario> make_compute_bound(Random& rng) { return std::make_unique<ComputeBound>(rng); }

}  // namespace ferret::scenario
