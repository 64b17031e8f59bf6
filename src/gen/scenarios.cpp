#include "gen/scenarios.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gen/h100_kernels.h"
#include "gen/kineto_emitter.h"

namespace ferret {

const std::vector<ScenarioInfo>& scenario_list() {
  static const std::vector<ScenarioInfo> kList = {
      {"input-bound", "40% of every step waits in the DataLoader while the GPU idles"},
      {"launch-bound", "1400 kernels of 2-5 us per step behind 10-20 us launch calls: the GPU mostly idles"},
      {"compute-bound", "large fp32 SIMT sgemm kernels (no Tensor Cores) keep the GPU over 90% busy"},
      {"communication-heavy", "NCCL all-reduce over a slow network takes ~35% of each step, mostly exposed"},
      {"fragmented-memory", "variable sequence lengths leave reserved memory far above allocated"},
  };
  return kList;
}

std::vector<std::string> scenario_names() {
  std::vector<std::string> names;
  for (const ScenarioInfo& s : scenario_list()) names.push_back(s.name);
  return names;
}

namespace {

using kineto::Args;
using kineto::GpuKind;
using kineto::GpuSpan;
using kineto::KernelShape;
using kineto::Random;
using kineto::Range;
using kineto::rounded;
using kineto::shapes;
using kineto::TraceEvent;
using kineto::us;

// ---------------------------------------------------------------------------------------------
// The simulated machine: one Python process driving GPU 0 of an H100 node.
constexpr std::int32_t kHostPid = 2917;
constexpr std::int32_t kMainTid = 2917;
constexpr std::int32_t kAutogradTid = 2985;  // torch's autograd engine thread for the CUDA device
constexpr std::int32_t kDevice = 0;
constexpr std::int32_t kComputeStream = 7;
constexpr std::int32_t kNcclStream = 20;
constexpr std::int64_t kBaseTimeNs = 1717171200000000000;  // baseTimeNanoseconds: 2024-05-31T16:00:00Z
constexpr std::int64_t kTraceStartNs = 2417385114000;      // first ts, relative to baseTimeNanoseconds
constexpr std::int64_t kFirstStepNumber = 5;               // schedule(wait=1, warmup=4): ProfilerStep#5 first
constexpr std::int64_t kDeviceMemory = kineto::kH100Memory;

// Kernel names as cuDNN, cuBLAS, ATen and NCCL print them on an H100 with CUDA 12.
namespace kernels {
// Shared with the job generator; references keep one address per kernel (backward_kernel_of).
constexpr const KernelShape& kLayerNorm = kineto::kernels::kLayerNormFwd;
constexpr const KernelShape& kLayerNormBwd = kineto::kernels::kLayerNormBwdInput;
constexpr const KernelShape& kNllLoss = kineto::kernels::kNllLossFwd;
using kineto::kernels::kAdamForeach;
const KernelShape kConvFprop{
    "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cudnn",
    {392, 1, 1},
    {384, 1, 1},
    168,
    213248,
    18};
const KernelShape kConvDgrad{
    "sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cudnn",
    {392, 1, 1},
    {384, 1, 1},
    168,
    213248,
    18};
const KernelShape kConvWgrad{
    "sm90_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cudnn",
    {132, 1, 1},
    {384, 1, 1},
    168,
    213248,
    18};
const KernelShape kBatchNormFwd{
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<__nv_bfloat16, float, 512, true, 1>(cudnnTensorStruct, __nv_bfloat16 "
    "const*, cudnnTensorStruct, __nv_bfloat16*, float const*, float const*, float, float, float*, float*, float*, "
    "float*, float, float)",
    {256, 1, 1},
    {512, 1, 1},
    32,
    4096,
    94};
const KernelShape kBatchNormBwd{
    "void cudnn::bn_bw_1C11_kernel_new<__nv_bfloat16, float, float2, 512, true, 1>(float, float, float, float, "
    "cudnnTensorStruct, __nv_bfloat16 const*, cudnnTensorStruct, __nv_bfloat16 const*, cudnnTensorStruct, "
    "__nv_bfloat16*, float const*, float*, float*, float const*, float const*, float)",
    {256, 1, 1},
    {512, 1, 1},
    40,
    4096,
    90};
const KernelShape kReluFwd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::clamp_min_scalar_kernel_"
    "impl(at::TensorIteratorBase&, c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#14}::operator()() "
    "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::clamp_min_"
    "scalar_kernel_impl(at::TensorIteratorBase&, c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#14}::"
    "operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
    {98304, 1, 1},
    {128, 1, 1},
    26,
    0,
    88};
const KernelShape kReluBwd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::threshold_kernel_impl<c10::"
    "BFloat16>(at::TensorIteratorBase&, c10::BFloat16, c10::BFloat16)::{lambda(c10::BFloat16, c10::BFloat16)#1}, "
    "std::array<char*, 3ul> >(int, at::native::(anonymous namespace)::threshold_kernel_impl<c10::BFloat16>(at::"
    "TensorIteratorBase&, c10::BFloat16, c10::BFloat16)::{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, "
    "3ul>)",
    {98304, 1, 1},
    {128, 1, 1},
    28,
    0,
    87};
const KernelShape kLogSoftmax{kineto::kernels::kLogSoftmaxFwdName, {64, 1, 1}, {1024, 1, 1}, 38, 0, 48};
const KernelShape kSgdForeach{
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
    "TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<"
    "float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::"
    "BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)",
    {2688, 1, 1},
    {512, 1, 1},
    30,
    0,
    85};

// Tiny kernels of an unfused small model (launch-bound).
const KernelShape kSmallGemm{
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x64x32_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    {4, 2, 1},
    {128, 1, 1},
    128,
    49152,
    6};
const KernelShape kSmallAdd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
    {16, 1, 1},
    {128, 1, 1},
    20,
    0,
    12};
const KernelShape kSmallMul{
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
    "float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >"
    "(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::"
    "MulFunctor<float> >, std::array<char*, 3ul>)",
    {16, 1, 1},
    {128, 1, 1},
    20,
    0,
    12};
const KernelShape kSmallGelu{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::"
    "TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()"
    "#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::"
    "GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
    "operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<"
    "char*, 2ul>)",
    {16, 1, 1},
    {128, 1, 1},
    24,
    0,
    12};
const KernelShape kSmallLayerNorm{
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
    "(int, float, float const*, float const*, float const*, float*, float*, float*)",
    {64, 1, 1},
    {256, 1, 1},
    32,
    0,
    9};
const KernelShape kSmallDropout{
    "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, "
    "unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<float const, unsigned int>, "
    "at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<bool, "
    "unsigned int>, unsigned int, float, at::PhiloxCudaState)",
    {16, 1, 1},
    {256, 1, 1},
    30,
    0,
    12};
const KernelShape kSmallReduce{
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
    "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::"
    "TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::"
    "ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
    "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, "
    "float, 4>)",
    {8, 1, 1},
    {512, 1, 1},
    32,
    16,
    6};

// fp32 GEMMs on CUDA cores: cuBLAS picks its SIMT sgemm when TF32 is off (the default for matmul).
const KernelShape kSgemmNN{"ampere_sgemm_128x64_nn", {64, 32, 1}, {128, 1, 1}, 122, 12544, 24};
const KernelShape kSgemmNT{"ampere_sgemm_128x64_nt", {64, 32, 1}, {128, 1, 1}, 122, 12544, 24};
const KernelShape kSgemmTN{"ampere_sgemm_128x64_tn", {64, 32, 1}, {128, 1, 1}, 122, 12544, 24};
const KernelShape kGeluFwd{kSmallGelu.name, {65536, 1, 1}, {128, 1, 1}, 24, 0, 90};
const KernelShape kGeluBwd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl("
    "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()"
    "#2}::operator()() const::{lambda(float, float)#1}, std::array<char*, 3ul> >(int, at::"
    "native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()"
    "#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1}, std::"
    "array<char*, 3ul>)",
    {65536, 1, 1},
    {128, 1, 1},
    28,
    0,
    89};
const KernelShape kBiasReduce{kSmallReduce.name, {128, 1, 1}, {512, 1, 1}, 32, 16, 45};
const KernelShape kMseLoss{
    "void at::native::vectorized_elementwise_kernel<4, at::native::mse_kernel_cuda(at::"
    "TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#1}::operator()() const::"
    "{lambda(float, float)#1}, std::array<char*, 3ul> >(int, at::native::mse_kernel_cuda(at::"
    "TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#1}::operator()() const::"
    "{lambda(float, float)#1}, std::array<char*, 3ul>)",
    {2048, 1, 1},
    {128, 1, 1},
    24,
    0,
    70};

// bf16 Tensor Core GEMMs (communication-heavy and fragmented-memory models use AMP).
const KernelShape kBf16Gemm{kineto::kernels::kBf16GemmTN, {128, 8, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kBf16GemmNN{kineto::kernels::kBf16GemmNN, {128, 8, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kSoftmax{
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::"
    "BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::"
    "BFloat16 const*, int)",
    {65536, 1, 1},
    {1024, 1, 1},
    40,
    0,
    60};
const KernelShape kSoftmaxBwd{
    "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<8, c10::BFloat16, float, "
    "c10::BFloat16, at::native::(anonymous namespace)::SoftMaxBackwardEpilogue>(c10::BFloat16*, "
    "c10::BFloat16 const*, c10::BFloat16 const*, int)",
    {65536, 1, 1},
    {1024, 1, 1},
    40,
    0,
    58};
const KernelShape kNcclAllReduce{
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", {32, 1, 1}, {640, 1, 1}, 96, 87568, 0};
}  // namespace kernels

// ---------------------------------------------------------------------------------------------
// One step's events on a timeline that starts at 0 (the step's start); the step is placed in
// the trace when it is written. Each step ends with the host waiting for the GPU (loss.item()),
// so no GPU work crosses from one step to the next, as in most training loops.
class StepTimeline : public kineto::HostTimeline {
 public:
  StepTimeline(kineto::ProfilerIds& ids, Random& rng)
      : HostTimeline(ids, rng, {kHostPid, kMainTid, kDevice, kNcclStream}) {}

  // Most work goes to the compute stream.
  using HostTimeline::launch;
  GpuSpan launch(const KernelShape& k, std::int64_t kernel_ns, std::int64_t launch_ns) {
    return launch(k, kernel_ns, launch_ns, kComputeStream);
  }
  using HostTimeline::memcpy;
  void memcpy(std::string_view name, std::int64_t bytes, std::int64_t copy_ns, bool host_waits) {
    memcpy(name, bytes, copy_ns, host_waits, kComputeStream);
  }
  void item() { HostTimeline::item(kComputeStream); }

  // A [memory] record of the caching allocator (profile_memory=True).
  void memory_record(std::int64_t bytes, std::uint64_t addr, std::int64_t total_allocated,
                     std::int64_t total_reserved) {
    TraceEvent e;
    e.phase = 'i';
    e.category = "cpu_instant_event";
    e.name = "[memory]";
    e.pid = kHostPid;
    e.tid = process().tid;
    e.ts = now_;
    Args a;
    a.integer("Total Reserved", total_reserved)
        .integer("Total Allocated", total_allocated)
        .integer("Bytes", bytes)
        .integer("Addr", static_cast<std::int64_t>(addr))
        .integer("Device Id", kDevice)
        .integer("Device Type", 1)
        .integer("Ev Idx", ids_.event_index++);
    e.args = a.text();
    events_.push_back(std::move(e));
  }

  // Everything recorded from `mark` on moves later by `delta`: used to insert a wait of a length
  // that is only known once the rest of the step is built.
  struct Mark {
    std::size_t events = 0, gpu = 0, open = 0;
    std::int64_t time = 0;
  };
  Mark mark() const { return {events_.size(), gpu_.size(), open_.size(), now_}; }
  void shift_since(const Mark& m, std::int64_t delta) {
    if (open_.size() != m.open) throw std::logic_error("shift_since with spans opened after the mark");
    for (std::size_t i = m.events; i < events_.size(); ++i) events_[i].ts += delta;
    for (std::size_t i = m.gpu; i < gpu_.size(); ++i) gpu_[i].start += delta, gpu_[i].end += delta;
    for (auto& [stream, free_at] : stream_free_)
      if (free_at >= m.time) free_at += delta;
    now_ += delta;
  }
};

// An op chain launching one kernel on the compute stream; draws kernel, launch, then overhead.
GpuSpan op_kernel(StepTimeline& t, std::initializer_list<std::string_view> ops, const Args& outer_args,
                  const KernelShape& k, Range kernel, Range launch, Range overhead) {
  Random& rng = t.rng();
  const std::int64_t kernel_ns = rng.draw(kernel);
  const std::int64_t launch_ns = rng.draw(launch);
  const std::int64_t overhead_ns = rng.draw(overhead);
  return kineto::op_kernel(t, std::span<const std::string_view>(ops.begin(), ops.size()), outer_args, k, kernel_ns,
                           launch_ns, overhead_ns, kComputeStream);
}

// ---------------------------------------------------------------------------------------------
// A scenario: a training step builder plus what it knows about itself.
class Scenario {
 public:
  explicit Scenario(Random& rng) : rng_(rng) {}
  virtual ~Scenario() = default;

  virtual int world_size() const { return 1; }
  virtual bool profiles_memory() const { return false; }
  // Builds one step after ProfilerStep#N opened at time 0; the runner closes it at t.now().
  virtual void build_step(StepTimeline& t) = 0;
  // Scenario-specific ground truth, after all steps.
  virtual void add_ground_truth(nlohmann::ordered_json& truth) const = 0;

 protected:
  Random& rng_;
};

// The DataLoader's __next__ span: a worker queue wait, or the whole load in the main process.
using kineto::kernels::kSingleProcessLoader;
constexpr std::string_view kMultiProcessLoader = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";

// With worker processes the main process only dequeues a ready batch.
void short_dataloader_wait(StepTimeline& t) {
  t.open("user_annotation", std::string(kMultiProcessLoader));
  t.advance(t.rng().between(us(120), us(300)));
  t.close();
  t.advance(t.rng().between(us(5), us(15)));
}

// Host-to-device copy of a batch: aten::to > aten::_to_copy > aten::copy_ > cudaMemcpyAsync.
void copy_batch_to_device(StepTimeline& t, std::string_view dims, std::int64_t bytes, bool pinned) {
  Random& rng = t.rng();
  t.open("cpu_op", "aten::to",
         shapes(fmt::format("[{}, [], [], [], [], []]", dims), "[\"float\", \"\", \"\", \"\", \"\", \"\"]"));
  t.advance(rng.between(2000, 5000));
  t.open("cpu_op", "aten::_to_copy");
  t.advance(rng.between(3000, 6000));
  t.open("cpu_op", "aten::copy_");
  t.advance(rng.between(3000, 6000));
  // Pinned memory moves at ~24 GB/s over PCIe 5; pageable memory is staged by the driver at ~11 GB/s.
  const std::int64_t bytes_per_us = pinned ? 24000 : 11000;
  const std::int64_t copy_ns = std::max<std::int64_t>(1200, rng.jitter(bytes * 1000 / bytes_per_us, 5));
  t.memcpy(pinned ? "Memcpy HtoD (Pinned -> Device)" : "Memcpy HtoD (Pageable -> Device)", bytes, copy_ns, !pinned);
  for (int i = 0; i < 3; ++i) {
    t.advance(rng.between(1000, 3000));
    t.close();
  }
}

// One autograd node: evaluate_function > Node > aten op, launching one kernel per entry of `work`
// (kernel durations drawn by the caller inside one braced list are evaluated in order).
struct KernelWork {
  const KernelShape* kernel;
  std::int64_t ns;
};

void backward_op(StepTimeline& t, std::string_view node, std::int64_t sequence, std::string_view op,
                 std::initializer_list<KernelWork> work, Range launch, Range overhead) {
  Random& rng = t.rng();
  const std::int64_t overhead_ns = rng.draw(overhead);
  kineto::open_autograd_node(t, node, sequence, overhead_ns);
  t.open("cpu_op", op);
  t.advance(overhead_ns / 3 + rng.between(200, 600));
  for (const KernelWork& w : work) {
    t.launch(*w.kernel, w.ns, rng.draw(launch));
    t.advance(rng.between(500, 1500));
  }
  for (int i = 0; i < 3; ++i) {
    t.advance(rng.between(500, 1500));
    t.close();
  }
}

// ------------------------------------------------------------------ input-bound
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

// ------------------------------------------------------------------ launch-bound
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

// ------------------------------------------------------------------ compute-bound
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

// ------------------------------------------------------------------ communication-heavy
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

// ------------------------------------------------------------------ fragmented-memory
// PyTorch's CUDA caching allocator, large pool only (every tensor here is over 1 MB). A request
// rounds up to 512 bytes and takes the smallest cached free block that fits, split when more
// than 1 MB would remain; with none, cudaMalloc adds a segment (20 MB for requests under 10 MB,
// else the request rounded up to 2 MB). A freed block merges with free neighbours of its own
// segment only. Segments are kept (no empty_cache()) until a cudaMalloc would not fit the
// device: then wholly free segments are released and the cudaMalloc retried, as PyTorch does.
class CachingAllocatorModel {
 public:
  static constexpr std::int64_t kMiB = 1 << 20;

  struct Allocation {
    std::uint64_t addr = 0;
    std::int64_t size = 0;               // block size, as "Bytes" reports it
    std::int64_t new_segment_bytes = 0;  // cudaMalloc'd for this request
    std::int64_t released_bytes = 0;     // cudaFree'd first to make room
  };

  explicit CachingAllocatorModel(std::int64_t device_limit) : limit_(device_limit) {}

  Allocation allocate(std::int64_t request) {
    Allocation result;
    const std::int64_t size = (request + 511) / 512 * 512;
    auto best = blocks_.end();
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
      if (it->second.free && it->second.size >= size && (best == blocks_.end() || it->second.size < best->second.size))
        best = it;
    if (best == blocks_.end()) {
      const std::int64_t segment = size < 10 * kMiB ? 20 * kMiB : (size + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
      if (reserved_ + segment > limit_) result.released_bytes = release_free_segments();
      if (reserved_ + segment > limit_)
        throw std::logic_error("fragmented-memory scenario exceeds the device's memory");
      const std::uint64_t base = next_base_;
      next_base_ += static_cast<std::uint64_t>(segment + 2 * kMiB);  // the driver leaves gaps between mappings
      segments_[base] = segment;
      reserved_ += segment;
      best = blocks_.emplace(base, Block{segment, true, base}).first;
      result.new_segment_bytes = segment;
    }
    Block& block = best->second;
    if (block.size - size > kMiB) {
      blocks_.emplace(best->first + static_cast<std::uint64_t>(size), Block{block.size - size, true, block.segment});
      block.size = size;
    }
    block.free = false;
    allocated_ += block.size;
    result.addr = best->first;
    result.size = block.size;
    return result;
  }

  // Frees the block at `addr`; returns its size.
  std::int64_t release(std::uint64_t addr) {
    auto it = blocks_.find(addr);
    if (it == blocks_.end() || it->second.free) throw std::logic_error("allocator model: bad free");
    it->second.free = true;
    const std::int64_t size = it->second.size;
    allocated_ -= size;
    auto next = std::next(it);
    if (next != blocks_.end() && next->second.free && next->second.segment == it->second.segment &&
        it->first + static_cast<std::uint64_t>(it->second.size) == next->first) {
      it->second.size += next->second.size;
      blocks_.erase(next);
    }
    if (it != blocks_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.free && prev->second.segment == it->second.segment &&
          prev->first + static_cast<std::uint64_t>(prev->second.size) == it->first) {
        prev->second.size += it->second.size;
        blocks_.erase(it);
      }
    }
    return size;
  }

  std::int64_t allocated() const { return allocated_; }
  std::int64_t reserved() const { return reserved_; }
  std::int64_t retries() const { return retries_; }

 private:
  struct Block {
    std::int64_t size;
    bool free;
    std::uint64_t segment;
  };

  std::int64_t release_free_segments() {
    ++retries_;
    std::int64_t released = 0;
    for (auto it = segments_.begin(); it != segments_.end();) {
      auto block = blocks_.find(it->first);
      if (block != blocks_.end() && block->second.free && block->second.size == it->second) {
        released += it->second;
        reserved_ -= it->second;
        blocks_.erase(block);
        it = segments_.erase(it);
      } else {
        ++it;
      }
    }
    return released;
  }

  std::int64_t limit_;
  std::map<std::uint64_t, Block> blocks_;           // by address
  std::map<std::uint64_t, std::int64_t> segments_;  // base address -> size
  std::uint64_t next_base_ = 0x7f3a00000000;
  std::int64_t allocated_ = 0, reserved_ = 0, retries_ = 0;
};

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
  void run_step(StepTimeline* t, std::int64_t length) {
    const std::int64_t token_bytes = kBatch * length * 2;  // one bf16 value per token
    const std::int64_t hidden = token_bytes * kHidden;
    const std::int64_t scores = kBatch * kHeads * length * length * 2;
    const std::int64_t tokens = kBatch * length;
    struct Saved {
      std::uint64_t addr;
      std::int64_t bytes;
      std::string_view node;  // autograd node that frees it
      std::string_view op;
      std::int64_t grad_ns;
      const KernelShape* kernel;
      std::int64_t sequence;
    };
    std::vector<Saved> saved;

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

    // Backward: each node allocates its input gradient, then frees its saved tensor and the
    // gradient it received.
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
    if (t) {
      t->advance(t->rng().between(us(10), us(20)));
      t->on_thread(kMainTid);
      t->open("user_annotation", "Optimizer.step#AdamW.step");
      t->advance(t->rng().between(us(20), us(40)));
      for (std::string_view op : {"aten::_foreach_mul_", "aten::_foreach_addcmul_", "aten::_foreach_addcdiv_"})
        op_kernel(*t, {op}, Args(), kernels::kAdamForeach, {us(300), us(500)}, {6000, 9000}, {us(10), us(20)});
      t->advance(t->rng().between(us(5), us(10)));
      t->close();
    }
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

std::unique_ptr<Scenario> make_scenario(std::string_view name, Random& rng) {
  if (name == "input-bound") return std::make_unique<InputBound>(rng);
  if (name == "launch-bound") return std::make_unique<LaunchBound>(rng);
  if (name == "compute-bound") return std::make_unique<ComputeBound>(rng);
  if (name == "communication-heavy") return std::make_unique<CommunicationHeavy>(rng);
  if (name == "fragmented-memory") return std::make_unique<FragmentedMemory>(rng);
  std::string known;
  for (const std::string& n : scenario_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument(fmt::format("unknown scenario \"{}\" (known: {})", name, known));
}

// The root keys Kineto writes before traceEvents, for an H100 node running torch 2.3.
void write_leading_header(TraceWriter& writer, const Scenario& scenario, Random& rng) {
  kineto::TraceHeader h;
  h.devices = scenario.world_size() > 1 ? 8 : 1;  // every GPU of the node is visible
  h.distributed = kineto::DistributedInfo{0, scenario.world_size(), "2.20.5"};
  h.cuda_runtime_version = "12040";
  h.cupti_version = "22";
  h.cuda_driver_version = "12040";
  h.profile_memory = scenario.profiles_memory();
  h.trace_id_high = rng.bits();  // separate statements: the draws are sequenced
  h.trace_id_low = rng.bits();
  kineto::write_header(writer, h);
}

void write_metadata(TraceWriter& writer, bool nccl_stream) {
  kineto::ProcessNames names{kHostPid, kMainTid, kAutogradTid, kDevice, {kComputeStream}};
  if (nccl_stream) names.streams.push_back(kNcclStream);
  kineto::write_metadata(writer, names, kTraceStartNs);
}

}  // namespace

ScenarioResult write_scenario(const ScenarioOptions& options) {
  if (options.steps < 1 || options.steps > 100000)
    throw std::invalid_argument(fmt::format("steps must be between 1 and 100000 (got {})", options.steps));
  // Mixing the name in keeps the scenarios' random streams apart for the same seed.
  std::uint64_t stream = 0;
  for (const char c : options.name) stream = stream * 131 + static_cast<unsigned char>(c);
  Random rng(options.seed * 0x9E3779B97F4A7C15ULL + stream);
  std::unique_ptr<Scenario> scenario = make_scenario(options.name, rng);

  OutputFile out(options.output, options.compression);
  TraceWriter writer(out);
  write_leading_header(writer, *scenario, rng);
  write_metadata(writer, scenario->world_size() > 1);

  kineto::ProfilerIds ids;
  ids.correlation = 41207;
  ids.sequence = 3174;
  std::int64_t step_start = kTraceStartNs + us(412);  // the profiler starts shortly before step 1
  std::int64_t total_step_ns = 0, busy_ns = 0, kernels = 0;
  for (int i = 0; i < options.steps; ++i) {
    StepTimeline t(ids, rng);
    t.open("user_annotation", fmt::format("ProfilerStep#{}", kFirstStepNumber + i));
    scenario->build_step(t);
    t.close();
    const std::int64_t step_ns = t.now();
    std::vector<std::pair<std::int64_t, std::int64_t>> kernel_spans;
    for (const GpuSpan& g : t.gpu()) {
      if (g.kind == GpuKind::kCopy) continue;
      if (g.end > step_ns) throw std::logic_error("GPU work outlives its step");
      kernel_spans.emplace_back(g.start, g.end);
    }
    kernels += static_cast<std::int64_t>(kernel_spans.size());
    busy_ns += kineto::union_length(std::move(kernel_spans));
    total_step_ns += step_ns;

    kineto::sort_for_writing(t.events());
    kineto::write_events(writer, t.events(), step_start);
    step_start += step_ns;
  }
  kineto::write_profiler_markers(writer, kTraceStartNs, step_start + us(20));

  nlohmann::ordered_json truth;
  truth["generator"] = "ferret gen scenario";
  truth["scenario"] = options.name;
  truth["seed"] = options.seed;
  truth["steps"] = options.steps;
  truth["first_step"] = kFirstStepNumber;
  truth["device"] = "NVIDIA H100 80GB HBM3";
  truth["step_ns"] = total_step_ns / options.steps;
  truth["kernels"] = kernels;
  truth["gpu_busy_share"] = rounded(static_cast<double>(busy_ns) / static_cast<double>(total_step_ns));
  scenario->add_ground_truth(truth);

  ScenarioResult result;
  result.ground_truth_json = truth.dump();
  kineto::write_trailer(writer, result.ground_truth_json,
                        fmt::format("/tmp/ferret-gen/{}-seed{}.pt.trace.json", options.name, options.seed),
                        kBaseTimeNs);
  writer.finish();
  out.close();
  result.events = writer.events();
  result.json_bytes = out.bytes_in();
  result.file_bytes = out.bytes_out();
  return result;
}

}  // namespace ferret
