// The communication-heavy scenario (registered in gen/scenarios.cpp).
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gen/scenario_kernels.h"
#include "gen/scenario_step.h"

namespace ferret::scenario {

namespace {

// Rank 0 of 16 (two nodes of 8 H100s joined by 100 GbE, so NCCL rings run at ~12 GB/s bus
// bandwidth). A 24-layer bf16 model whose fp32 gradients (173 MB) are all-reduced in three
// buckets: a small first bucket overlaps the end of backward, the two large ones run after it,
// with nothing left to hide them behind. The optimizer waits for the last all-reduce.
class CommunicationHeavy final : public Scenario {
 public:
  using Scenario::Scenario;
  static constexpr int kWorldSize = 16;
  static constexpr int kLayers = 24;
  static constexpr std::int64_t kBusBytesPerUs = 12000;  // 12 GB/s bus bandwidth
  static constexpr std::array<std::int64_t, 3> kBucketElements = {5242880, 19005440, 19005440};
  static constexpr int kFirstBucketAfterLayers = 3;  // the last three layers' gradients fill bucket 0

  int world_size() const override { return kWorldSize; }

  void build_step(StepTimeline& t) override {
    Random& rng = t.rng();
    t.advance(rng.between(us(15), us(40)));
    short_dataloader_wait(t);
    copy_batch_to_device(t, "[32, 1024]", 32 * 1024 * 8, /*pinned=*/true);

    std::array<std::int64_t, kLayers> gemm_ns{}, seq{};
    const Args linear =
        shapes("[[32, 1024, 1344], [1344, 1344], [1344]]", "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\"]");
    t.open("user_annotation", "DistributedDataParallel.forward");
    t.advance(rng.between(us(30), us(60)));
    for (int layer = 0; layer < kLayers; ++layer) {
      gemm_ns[layer] = rng.between(us(600), us(800));
      seq[layer] = t.ids().sequence;
      t.ids().sequence += 2;
      op_kernel(t, {"aten::linear", "aten::addmm"}, Args(linear).integer("Sequence number", seq[layer]),
                kernels::kBf16Gemm, {gemm_ns[layer], gemm_ns[layer]}, {5000, 8000}, {us(10), us(20)});
      op_kernel(
          t, {"aten::gelu"},
          shapes("[[32, 1024, 1344], []]", "[\"c10::BFloat16\", \"\"]").integer("Sequence number", seq[layer] + 1),
          kernels::kGeluFwd, {us(30), us(50)}, {5000, 8000}, {us(5), us(10)});
    }
    t.advance(rng.between(us(10), us(20)));
    t.close();
    op_kernel(t, {"aten::cross_entropy_loss"}, Args(), kernels::kLogSoftmax, {us(40), us(60)}, {5000, 8000},
              {us(8), us(15)});

    t.advance(rng.between(us(20), us(40)));
    t.on_thread(kAutogradTid);
    for (int layer = kLayers - 1; layer >= 0; --layer) {
      backward_op(t, "GeluBackward0", seq[layer] + 1, "aten::gelu_backward",
                  {{&kernels::kGeluBwd, rng.between(us(40), us(60))}}, {5000, 8000}, {us(8), us(14)});
      backward_op(t, "AddmmBackward0", seq[layer], "aten::mm",
                  {{&kernels::kBf16GemmNN, rng.jitter(gemm_ns[layer], 5)},
                   {&kernels::kBf16Gemm, rng.jitter(gemm_ns[layer], 5)}},
                  {5000, 8000}, {us(10), us(20)});
      if (kLayers - layer == kFirstBucketAfterLayers) all_reduce(t, 0);
    }
    // The reducer's last hook: the remaining buckets are ready only now.
    all_reduce(t, 1);
    all_reduce(t, 2);
    t.advance(rng.between(us(10), us(20)));
    t.on_thread(kMainTid);

    // DDP's finalize makes the compute stream wait for the NCCL stream before the optimizer.
    t.runtime("cudaStreamWaitEvent", rng.between(1500, 3000), 147);
    t.open("user_annotation", "Optimizer.step#SGD.step");
    t.advance(rng.between(us(20), us(40)));
    for (int i = 0; i < 3; ++i) {
      t.open("cpu_op", "aten::_foreach_add_");
      t.advance(rng.between(us(10), us(20)));
      const std::int64_t kernel_ns = rng.between(us(150), us(250));
      const std::int64_t launch_ns = rng.between(6000, 9000);
      const std::int64_t after_nccl = rng.between(1000, 2000);
      t.launch(kernels::kSgdForeach, kernel_ns, launch_ns, kComputeStream, t.stream_free(kNcclStream) + after_nccl);
      t.advance(rng.between(1000, 3000));
      t.close();
    }
    t.advance(rng.between(us(5), us(10)));
    t.close();
    t.item();
    t.advance(rng.between(us(10), us(30)));

    std::vector<std::pair<std::int64_t, std::int64_t>> comm, compute;
    for (const GpuSpan& g : t.gpu()) {
      if (g.kind == GpuKind::kCommunication)
        comm.emplace_back(g.start, g.end);
      else if (g.kind == GpuKind::kKernel)
        compute.emplace_back(g.start, g.end);
    }
    std::sort(comm.begin(), comm.end());
    std::sort(compute.begin(), compute.end());
    for (const auto& [s, e] : comm) comm_ns_ += e - s;
    overlap_ns_ += kineto::overlap_length(comm, compute);
    step_ns_ += t.now();
  }

  void add_ground_truth(nlohmann::ordered_json& truth) const override {
    const double steps = static_cast<double>(step_ns_);
    truth["nccl_share"] = rounded(static_cast<double>(comm_ns_) / steps);
    truth["comm_overlap_share"] = rounded(static_cast<double>(overlap_ns_) / static_cast<double>(comm_ns_));
    truth["exposed_comm_share"] = rounded(static_cast<double>(comm_ns_ - overlap_ns_) / steps);
    truth["world_size"] = kWorldSize;
    truth["collective"] = "allreduce";
    truth["buckets_per_step"] = kBucketElements.size();
    std::int64_t elements = 0;
    for (std::int64_t e : kBucketElements) elements += e;
    truth["allreduce_bytes_per_step"] = elements * 4;
    // nccl-tests convention: busbw = bytes / time * 2(n-1)/n for AllReduce.
    truth["busbw_gbps"] = rounded(static_cast<double>(bus_bytes_) / static_cast<double>(comm_ns_), 3);
    truth["nominal_busbw_gbps"] = static_cast<double>(kBusBytesPerUs) / 1000.0;
    truth["expected_finding"] =
        "communication-heavy: NCCL all-reduce takes ~35% of each step and most of it is exposed (not "
        "overlapped with backward); busbw ~12 GB/s points at the inter-node network";
  }

 private:
  // DDP's reducer launching one bucket's all-reduce: record_param_comms > nccl:all_reduce >
  // event record, stream wait, cudaLaunchKernelExC of the NCCL kernel on the NCCL stream.
  void all_reduce(StepTimeline& t, std::size_t bucket) {
    Random& rng = t.rng();
    const std::int64_t elements = kBucketElements[bucket];
    const std::int64_t seq = t.ids().collective_seq++;
    const std::string ranks = fmt::format("[{}]", kineto::rank_list(kWorldSize));
    Args collective;
    collective.string("Collective name", "allreduce")
        .integer("In msg nelems", elements)
        .integer("Out msg nelems", elements)
        .integer("Group size", kWorldSize)
        .string("dtype", "Float")
        .string("In split size", "[]")
        .string("Out split size", "[]")
        .string("Process Group Name", "0")
        .string("Process Group Description", "default_pg")
        .string("Process Group Ranks", ranks)
        .integer("Rank", 0)
        .integer("Seq", seq);
    kineto::open_all_reduce(t, collective);
    // The NCCL stream waits for the gradients computed so far on the compute stream.
    const std::int64_t gradients_ready = t.stream_free(kComputeStream);
    const std::int64_t bytes = elements * 4;
    const std::int64_t bus_bytes = bytes * 2 * (kWorldSize - 1) / kWorldSize;
    const std::int64_t ns = rng.jitter(bus_bytes * 1000 / kBusBytesPerUs, 3);
    t.launch(kernels::kNcclAllReduce, ns, rng.between(10000, 15000), kNcclStream, gradients_ready, collective,
             "cudaLaunchKernelExC", 430);
    bus_bytes_ += bus_bytes;
    kineto::close_all_reduce(t);
  }

  std::int64_t comm_ns_ = 0, overlap_ns_ = 0, step_ns_ = 0, bus_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Scenario> make_communication_heavy(Random& rng) { return std::make_unique<CommunicationHeavy>(rng); }

}  // namespace ferret::scenario
