// One check for every rule's fixes: a fix is offered only where the trace's device can run it.
// bf16 and TF32 need an NVIDIA GPU of compute capability 8.0 or later (Ampere), FP8 8.9 or later
// (Ada, Hopper, Blackwell) or an MI300-class AMD part, FlashAttention-2 (the flash-attn package)
// 8.0 or later or AMD MI200/MI300; a Volta or Turing part (7.x) runs fp16 on its Tensor Cores with
// loss scaling instead. Sources: NVIDIA CUDA C++ Programming Guide (compute capabilities, "Tensor
// Cores"), the flash-attn README, AMD CDNA3 ISA guide (FP8 on MI300).
#pragma once

#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "diagnosis/finding.h"
#include "model/trace_model.h"

namespace ferret {

struct DeviceFeatures {
  bool known = false;  // a GPU whose capabilities the trace records
  std::string name;
  bool bf16 = true;
  bool tf32 = true;
  bool fp8 = true;
  bool flash_attention = true;
  bool fp16_matrix = true;  // fp16 on the matrix units (Tensor Cores since 7.0)
  bool amd = false;         // its matrix units are Matrix Cores, not Tensor Cores
};

// The features of the trace's GPU (the first device with recorded properties); unknown (every fix
// kept) for a CPU-only trace or a device without properties.
DeviceFeatures device_features(const TraceModel& model);

// Drops from each finding the fixes its device cannot run (a fix naming bf16 without fp16, TF32,
// FP8, flash-attn); where a precision fix was dropped and the device has fp16 matrix units, the
// fp16-with-loss-scaling fix takes its place, once. Counts what it dropped in the finding's detail.
void fit_fixes_to_device(std::vector<Finding>& findings, const DeviceFeatures& device);

// What the trace shows already in place, so that no fix asks for it again (the next step instead).
struct WorkDone {
  bool compiled = false;         // torch.compile's Inductor (Triton) kernels run in the window
  bool graphs = false;           // CUDA/HIP graphs are replayed in the window
  bool fused_optimizer = false;  // a fused optimizer step runs (aten::_fused_adam_, _fused_adamw_, _fused_sgd_)
  // FP8 runs: a kernel or op of FP8 types (e4m3/e5m2 template arguments, aten::_scaled_mm, an
  // engine's FP8 quantization kernel); `fp8_by` names the first seen.
  bool fp8 = false;
  std::string fp8_by;
  // FP4 runs: a kernel or op of fp4 data (e2m1, MXFP4, NVFP4, torch.float4_e2m1fn_x2); `fp4_by`
  // names the first seen. Weights already narrower than FP8 make an FP8 step a step back.
  bool fp4 = false;
  std::string fp4_by;
  // The convolutions' layout (analysis/conv_layout): channels-last already, or what says they are
  // not ("12 of 12 convolution calls take NCHW inputs (...)"); empty when the trace cannot tell.
  bool channels_last = false;
  std::string layout_by;
  // The matrix work (GEMMs, convolutions, attention the roofline placed) runs in a reduced precision
  // already - bf16, fp16, fp8, fp6, fp4 or int8 for most of its GPU time - so no fix asks to
  // autocast to bf16 again; `reduced_precision_by` says how much.
  bool reduced_precision = false;
  std::string reduced_precision_by;
  std::string what() const;  // "torch.compile, CUDA graphs", for the detail
};
WorkDone work_done(const TraceAnalysis& a);

// Drops from each finding the fixes the trace shows done (and says of those it keeps that the
// trace shows them not done): compiling (where Inductor kernels run;
// a "reduce-overhead" compile stays as the next step while no graph is replayed), CUDA/HIP graph
// capture (where graphs replay), fused optimizers (where one runs). Where a compile fix went, the
// next step - graph breaks and recompiles - takes its place once. Counts what it dropped in the
// finding's detail.
void fit_fixes_to_work_done(std::vector<Finding>& findings, const WorkDone& done);

// Drops the fixes that need NVIDIA's libraries on another platform: GPU decoding with DALI, nvJPEG
// (`decode_jpeg(..., device="cuda")`) or NVDEC on ROCm and MTIA; where one went and no fix that
// decodes on the CPU is left, decoding in the DataLoader workers (libjpeg-turbo) takes its place.
// Counts what it dropped in the finding's detail.
void fit_fixes_to_platform(std::vector<Finding>& findings, Platform platform);

// Words of another vendor outside code spans (`...`): on ROCm "CUDA graph", "CUDA runtime", "CUDA
// sync", "CUDA IPC" become HIP's; on other accelerators (MTIA) the words without "CUDA". Code
// stays: PyTorch's ROCm build keeps the `torch.cuda` names.
void fit_vocabulary_to_platform(std::vector<Finding>& findings, Platform platform);

// Drops the fixes that do not fit the workload: on inference and serving, those for training
// (optimizer steps, gradients, backward, DDP buckets, `shuffle`, "the training loop"); on training,
// inference-engine exports (TensorRT). Counts what it dropped in the finding's detail.
// A kept fix that names one workload says so, with `evidence` (what decided the workload).
void fit_fixes_to_workload(std::vector<Finding>& findings, Workload workload, std::string_view evidence = {});

// Appends to each finding's detail one sentence on the fixes left out of it (Finding::
// fixes_left_out, after folding): how many, and why.
void say_fixes_left_out(std::vector<Finding>& findings);

}  // namespace ferret
