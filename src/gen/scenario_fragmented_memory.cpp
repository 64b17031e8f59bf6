// The fragmented-memory scenario (registered in gen/scenarios.cpp).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "gen/caching_allocator_model.h"
#include "gen/scenario_kernels.h"
#include "gen/scenario_step.h"

namespace ferret::scenario {

namespace {

constexpr std::int64_t kDeviceMemory = kineto::kH100Memory;

// A GPT-style model (12 layers, hidden 2048, 16 heads, eager attention, bf16) trained at batch 8
// on variable-length batches after a sequence-length warm-up: every new length needs blocks of
// new sizes, so the cache keeps segments the next batches cannot use.
class FragmentedMemory final : public Scenario {
 public:
  static constexpr std::int64_t kBatch = 8, kHidden = 2048, kHeads = 16;
  static constexpr int kLayers = 12;
  static constexpr int kWarmupSteps = 6;   // before the profiler's window, simulated but not written
  static constexpr int kGrowingSteps = 3;  // the length warm-up continues into the first profiled steps
  static constexpr std::int64_t kGrowthPerStep = 176;
  static constexpr std::int64_t kFlopsPerNs = 600000;            // ~600 TFLOP/s achieved bf16 GEMM
  static constexpr std::int64_t kBytesPerNs = 2500;              // ~2.5 TB/s achieved HBM3 bandwidth
  static constexpr std::int64_t kDeviceHeadroom = 1536LL << 20;  // CUDA context and libraries

  explicit FragmentedMemory(Random& rng) : Scenario(rng), allocator_(kDeviceMemory - kDeviceHeadroom) {
    // Parameters, gradients and Adam states: four tensors per layer, alive for the whole run.
    for (int layer = 0; layer < kLayers; ++layer)
      for (int k = 0; k < 4; ++k) static_bytes_ += allocator_.allocate(12 * kHidden * kHidden).size;
    for (int step = 0; step < kWarmupSteps; ++step) run_step(nullptr, next_length());
  }

  bool profiles_memory() const override { return true; }

  void build_step(StepTimeline& t) override {
    const std::int64_t length = next_length();
    lengths_.push_back(length);
    t.advance(t.rng().between(us(15), us(40)));
    short_dataloader_wait(t);
    copy_batch_to_device(t, fmt::format("[{}, {}]", kBatch, length), kBatch * length * 8, /*pinned=*/true);
    run_step(&t, length);
    t.item();
    t.advance(t.rng().between(us(10), us(30)));
  }

  void add_ground_truth(nlohmann::ordered_json& truth) const override {
    const Record& at_reserved = records_[peak_reserved_index_];
    const Record& at_allocated = records_[peak_allocated_index_];
    auto fragmentation = [](const Record& r) {
      return rounded(static_cast<double>(r.reserved - r.allocated) / static_cast<double>(r.reserved));
    };
    truth["peak_reserved_bytes"] = at_reserved.reserved;
    truth["allocated_at_peak_reserved_bytes"] = at_reserved.allocated;
    truth["fragmentation_at_peak_reserved"] = fragmentation(at_reserved);
    truth["peak_allocated_bytes"] = at_allocated.allocated;
    truth["reserved_at_peak_allocated_bytes"] = at_allocated.reserved;
    truth["fragmentation_at_peak_allocated"] = fragmentation(at_allocated);
    truth["first_reserved_bytes"] = records_.front().reserved;
    truth["memory_events"] = records_.size();
    truth["cuda_malloc_calls"] = malloc_calls_;
    truth["alloc_retries"] = allocator_.retries();
    truth["persistent_bytes"] = static_bytes_;
    truth["sequence_lengths"] = lengths_;
    truth["definition"] =
        "fragmentation = (Total Reserved - Total Allocated) / Total Reserved at a [memory] event; "
        "peak_reserved is the first event with the largest Total Reserved";
    truth["expected_finding"] =
        "fragmented-memory: reserved memory far above allocated at the peak; set "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True or pad batches to a few fixed lengths";
  }

 private:
  struct Record {
    std::int64_t allocated, reserved;
  };

  std::int64_t next_length() {
    const int step = step_counter_++;
    if (step < kWarmupSteps + kGrowingSteps) return 512 + kGrowthPerStep * step + 64 * rng_.between(0, 2);
    return 64 * rng_.between(8, 32);  // 512 .. 2048 tokens
  }

  // One training step's allocations; with a timeline, also its ops, kernels and [memory] events.
  // A tensor the forward pass saved for backward: its autograd node frees it.
  struct SavedTensor {
    std::uint64_t addr;
    std::int64_t bytes;
    std::string_view node;  // autograd node that frees it
    std::string_view op;
    std::int64_t grad_ns;
    const KernelShape* kernel;
    std::int64_t sequence;
  };

  // Backward: each node allocates its input gradient, then frees its saved tensor and the
  // gradient it received.
  void run_backward(StepTimeline* t, std::int64_t hidden, const std::vector<SavedTensor>& saved) {
    if (t) {
      t->advance(t->rng().between(us(20), us(40)));
      t->on_thread(kAutogradTid);
    }
    std::uint64_t grad = allocate(t, hidden);
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (t) {
        const Args node_args = Args().integer("Sequence number", it->sequence).integer("Fwd thread id", 1);
        t->open("cpu_op", fmt::format("autograd::engine::evaluate_function: {}", it->node), node_args);
        t->advance(t->rng().between(us(3), us(6)));
        t->open("cpu_op", std::string(it->node), node_args);
        t->advance(t->rng().between(us(3), us(6)));
        t->open("cpu_op", std::string(it->op));
        t->advance(t->rng().between(us(3), us(6)));
      }
      const std::uint64_t input_grad = allocate(t, it->bytes);
      if (t) {
        t->advance(t->rng().between(us(2), us(4)));
        const std::int64_t ns = t->rng().jitter(it->grad_ns, 4);
        t->launch(backward_kernel_of(*it->kernel), ns, t->rng().between(5000, 8000));
        t->advance(t->rng().between(1000, 2000));
        t->close();
        t->advance(t->rng().between(1000, 2000));
      }
      release(t, it->addr);
      release(t, grad);
      grad = input_grad;
      if (t) {
        t->close();
        t->advance(t->rng().between(1000, 2000));
        t->close();
      }
    }
    release(t, grad);
  }

  // AdamW's foreach step on the main thread.
  void run_optimizer(StepTimeline& t) {
    t.advance(t.rng().between(us(10), us(20)));
    t.on_thread(kMainTid);
    t.open("user_annotation", "Optimizer.step#AdamW.step");
    t.advance(t.rng().between(us(20), us(40)));
    for (std::string_view op : {"aten::_foreach_mul_", "aten::_foreach_addcmul_", "aten::_foreach_addcdiv_"})
      op_kernel(t, {op}, Args(), kernels::kAdamForeach, {us(300), us(500)}, {6000, 9000}, {us(10), us(20)});
    t.advance(t.rng().between(us(5), us(10)));
    t.close();
  }

  void run_step(StepTimeline* t, std::int64_t length) {
    const std::int64_t token_bytes = kBatch * length * 2;  // one bf16 value per token
    const std::int64_t hidden = token_bytes * kHidden;
    const std::int64_t scores = kBatch * kHeads * length * length * 2;
    const std::int64_t tokens = kBatch * length;
    std::vector<SavedTensor> saved;

    auto gemm_ns = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
      return std::max<std::int64_t>(us(8), 2 * m * n * k / kFlopsPerNs);
    };
    auto stream_ns = [&](std::int64_t bytes) { return std::max<std::int64_t>(us(3), bytes / kBytesPerNs); };

    // A forward op producing one saved tensor.
    auto forward = [&](std::initializer_list<std::string_view> ops, std::string_view node, std::string_view backward_op,
                       std::int64_t bytes, const KernelShape& k, std::int64_t kernel_ns, std::int64_t grad_ns) {
      const std::int64_t sequence = t ? t->ids().sequence++ : 0;
      if (t) {
        bool outer = true;
        for (std::string_view op : ops) {
          t->open("cpu_op", std::string(op), outer ? Args().integer("Sequence number", sequence) : Args());
          outer = false;
          t->advance(t->rng().between(us(4), us(8)));
        }
      }
      const std::uint64_t addr = allocate(t, bytes);
      if (t) {
        t->advance(t->rng().between(us(2), us(5)));
        const std::int64_t ns = t->rng().jitter(kernel_ns, 4);
        t->launch(k, ns, t->rng().between(5000, 8000));
        for (std::size_t i = 0; i < ops.size(); ++i) {
          t->advance(t->rng().between(500, 1500));
          t->close();
        }
      }
      saved.push_back({addr, bytes, node, backward_op, grad_ns, &k, sequence});
      return addr;
    };

    for (int layer = 0; layer < kLayers; ++layer) {
      forward({"aten::layer_norm", "aten::native_layer_norm"}, "NativeLayerNormBackward0",
              "aten::native_layer_norm_backward", hidden, kernels::kLayerNorm, stream_ns(2 * hidden),
              stream_ns(3 * hidden));
      forward({"aten::linear", "aten::addmm"}, "AddmmBackward0", "aten::mm", 3 * hidden, kernels::kBf16Gemm,
              gemm_ns(tokens, 3 * kHidden, kHidden), 2 * gemm_ns(tokens, 3 * kHidden, kHidden));
      // Attention scores: a temporary as large as the probabilities, freed once softmax is done.
      if (t) {
        t->open("cpu_op", "aten::matmul");
        t->advance(t->rng().between(us(4), us(8)));
        t->open("cpu_op", "aten::bmm");
      }
      const std::uint64_t scores_addr = allocate(t, scores);
      if (t) {
        t->advance(t->rng().between(us(2), us(5)));
        t->launch(kernels::kBf16GemmNN, gemm_ns(kBatch * kHeads * length, length, kHidden / kHeads),
                  t->rng().between(5000, 8000));
        t->advance(t->rng().between(1000, 2000));
        t->close();
        t->advance(t->rng().between(1000, 2000));
        t->close();
      }
      forward({"aten::softmax", "aten::_softmax"}, "SoftmaxBackward0", "aten::_softmax_backward_data", scores,
              kernels::kSoftmax, stream_ns(2 * scores), stream_ns(3 * scores));
      release(t, scores_addr);
      forward({"aten::matmul", "aten::bmm"}, "BmmBackward0", "aten::bmm", hidden, kernels::kBf16GemmNN,
              gemm_ns(kBatch * kHeads * length, kHidden / kHeads, length),
              2 * gemm_ns(kBatch * kHeads * length, kHidden / kHeads, length));
      forward({"aten::linear", "aten::addmm"}, "AddmmBackward0", "aten::mm", hidden, kernels::kBf16Gemm,
              gemm_ns(tokens, kHidden, kHidden), 2 * gemm_ns(tokens, kHidden, kHidden));
      forward({"aten::layer_norm", "aten::native_layer_norm"}, "NativeLayerNormBackward0",
              "aten::native_layer_norm_backward", hidden, kernels::kLayerNorm, stream_ns(2 * hidden),
              stream_ns(3 * hidden));
      forward({"aten::linear", "aten::addmm"}, "AddmmBackward0", "aten::mm", 4 * hidden, kernels::kBf16Gemm,
              gemm_ns(tokens, 4 * kHidden, kHidden), 2 * gemm_ns(tokens, 4 * kHidden, kHidden));
      forward({"aten::gelu"}, "GeluBackward0", "aten::gelu_backward", 4 * hidden, kernels::kGeluFwd,
              stream_ns(8 * hidden), stream_ns(12 * hidden));
      forward({"aten::linear", "aten::addmm"}, "AddmmBackward0", "aten::mm", hidden, kernels::kBf16Gemm,
              gemm_ns(tokens, kHidden, 4 * kHidden), 2 * gemm_ns(tokens, kHidden, 4 * kHidden));
    }

    run_backward(t, hidden, saved);
    if (t) run_optimizer(*t);
  }

  // The kernel a saved tensor's autograd node runs: GEMMs stay GEMMs, the rest have their own.
  static const KernelShape& backward_kernel_of(const KernelShape& forward) {
    if (&forward == &kernels::kLayerNorm) return kernels::kLayerNormBwd;
    if (&forward == &kernels::kSoftmax) return kernels::kSoftmaxBwd;
    if (&forward == &kernels::kGeluFwd) return kernels::kGeluBwd;
    return forward;
  }

  // An allocation inside the current op: cudaMalloc when the cache grows, then the [memory] record.
  std::uint64_t allocate(StepTimeline* t, std::int64_t bytes) {
    const CachingAllocatorModel::Allocation a = allocator_.allocate(bytes);
    if (t) {
      if (a.released_bytes > 0) t->runtime("cudaFree", us(200) + a.released_bytes / 4000000, 166);
      if (a.new_segment_bytes > 0) {
        t->runtime("cudaMalloc", us(25) + a.new_segment_bytes / 500000, 164);
        ++malloc_calls_;
      }
      record(*t, a.size, a.addr);
    }
    return a.addr;
  }

  void release(StepTimeline* t, std::uint64_t addr) {
    const std::int64_t size = allocator_.release(addr);
    if (t) record(*t, -size, addr);
  }

  void record(StepTimeline& t, std::int64_t bytes, std::uint64_t addr) {
    t.advance(t.rng().between(300, 900));  // records of one op never share a timestamp
    t.memory_record(bytes, addr, allocator_.allocated(), allocator_.reserved());
    const Record r{allocator_.allocated(), allocator_.reserved()};
    if (records_.empty() || r.reserved > records_[peak_reserved_index_].reserved)
      peak_reserved_index_ = records_.size();
    if (records_.empty() || r.allocated > records_[peak_allocated_index_].allocated)
      peak_allocated_index_ = records_.size();
    records_.push_back(r);
  }

  CachingAllocatorModel allocator_;
  int step_counter_ = 0;
  std::int64_t static_bytes_ = 0;
  std::int64_t malloc_calls_ = 0;
  std::vector<std::int64_t> lengths_;
  std::vector<Record> records_;
  std::size_t peak_reserved_index_ = 0, peak_allocated_index_ = 0;
};

}  // namespace

std::unique_ptr<Scenario> make_fragmented_memory(Random& rng) { return std::make_unique<FragmentedMemory>(rng); }

}  // namespace ferret::scenario
