#include "diagnosis/device_fixes.h"

#include <algorithm>

#include <fmt/format.h>

#include "analysis/operator/conv_layout.h"
#include "base/text.h"

namespace ferret {

namespace {

bool mentions_any(std::string_view text, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return contains(text, w); });
}

// fp16 named as such: "fp16", or "float16" not inside "bfloat16".
bool mentions_fp16(std::string_view text) {
  if (contains(text, "fp16")) return true;
  for (std::size_t at = text.find("float16"); at != std::string_view::npos; at = text.find("float16", at + 1))
    if (at == 0 || text[at - 1] != 'b') return true;
  return false;
}

constexpr std::string_view kFp16LossScaling =
    "fp16 autocast with loss scaling (this GPU has fp16 Tensor Cores, not bf16): `scaler = "
    "torch.cuda.amp.GradScaler()`; `with torch.autocast(\"cuda\", dtype=torch.float16): loss = loss_fn(model(x), y)`; "
    "`scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()` (inference: "
    "`model.half()` or the same autocast)";

}  // namespace

DeviceFeatures device_features(const TraceModel& model) {
  DeviceFeatures f;
  for (const DeviceProperties& d : model.info.devices) {
    if (d.compute_major < 0 || d.name.empty()) continue;
    f.known = true;
    f.name = d.name;
    const bool amd = contains(d.name, "AMD") || contains(d.name, "Instinct") || contains(d.name, "Radeon");
    f.amd = amd;
    if (amd) {
      // CDNA2/3/4 (MI200, MI300, MI350) run bf16 on their matrix cores and flash attention; FP8
      // from MI300 (gfx942, which the trace reports as 9.4; CDNA 4 is gfx950, 9.5).
      f.fp8 = (d.compute_major == 9 && d.compute_minor >= 4) || contains(d.name, "MI300") ||
              contains(d.name, "MI325") || contains(d.name, "MI35");
      f.tf32 = false;  // an NVIDIA format
      return f;
    }
    const int cc = d.compute_major * 10 + std::max(0, d.compute_minor);
    f.bf16 = cc >= 80;
    f.tf32 = cc >= 80;
    f.fp8 = cc >= 89;
    f.flash_attention = cc >= 80;
    f.fp16_matrix = cc >= 70;
    return f;
  }
  return f;
}

void fit_fixes_to_device(std::vector<Finding>& findings, const DeviceFeatures& device) {
  if (!device.known) return;
  for (Finding& f : findings) {
    std::vector<Fix> kept;
    std::size_t dropped = 0;
    bool precision_dropped = false;
    for (Fix& fix : f.fixes) {
      const bool bf16 = mentions_any(fix.text, {"bf16", "bfloat16"}) && !mentions_fp16(fix.text);
      const bool tf32 = mentions_any(fix.text, {"TF32", "tf32", "set_float32_matmul_precision"});
      const bool fp8 = mentions_any(fix.text, {"FP8", "fp8", "float8", "transformer_engine"});
      const bool flash = mentions_any(fix.text, {"flash_attention_2", "flash-attn"});
      if ((bf16 && !device.bf16) || (tf32 && !device.tf32) || (fp8 && !device.fp8) ||
          (flash && !device.flash_attention)) {
        ++dropped;
        precision_dropped = precision_dropped || bf16 || tf32 || fp8;
        const char* what = bf16 && !device.bf16   ? "bf16"
                           : tf32 && !device.tf32 ? "TF32"
                           : fp8 && !device.fp8   ? "FP8"
                                                  : "FlashAttention";
        f.fixes_left_out.push_back({fix.text, fmt::format("{} cannot run {}", device.name, what)});
        continue;
      }
      // Kept because the device runs it: said, as the fact that makes the fix fit.
      const char* runs = fp8 ? "FP8" : bf16 ? "bf16" : tf32 ? "TF32" : flash ? "FlashAttention-2" : nullptr;
      if (runs != nullptr)
        add_because(fix, fmt::format("{} runs {}{}", device.name, runs,
                                     flash        ? ""
                                     : device.amd ? " on its Matrix Cores"
                                                  : " on its Tensor Cores"));
      kept.push_back(std::move(fix));
    }
    if (dropped == 0) {
      f.fixes = std::move(kept);
      continue;
    }
    const bool has_fp16 =
        std::any_of(kept.begin(), kept.end(), [](const Fix& x) { return contains(x.text, "GradScaler"); });
    // fp16 takes the place of bf16 only: where bf16 runs (an MI300X without TF32) it stays the step.
    if (precision_dropped && !device.bf16 && device.fp16_matrix && !has_fp16)
      kept.insert(kept.begin(), Fix(std::string(kFp16LossScaling),
                                    fmt::format("{} runs fp16, not bf16, on its Tensor Cores", device.name)));
    f.fixes = std::move(kept);
  }
}

namespace {

constexpr std::string_view kCompiledNextStep =
    "The model is already compiled (Inductor kernels run): find what stays eager - graph breaks and recompiles "
    "(`TORCH_LOGS=\"graph_breaks,recompiles\" python train.py`, or `torch._dynamo.explain(model)(x)`)";

}  // namespace

std::string WorkDone::what() const {
  std::string out;
  auto add = [&](const char* w) { out += (out.empty() ? "" : ", ") + std::string(w); };
  if (compiled) add("torch.compile");
  if (graphs) add("graph replay");
  if (fused_optimizer) add("a fused optimizer");
  if (fp8) add("FP8");
  if (fp4) add("FP4");
  if (channels_last) add("channels-last");
  if (reduced_precision) add("reduced precision");
  return out;
}

namespace {

// A name `s` that shows a number format in use. A kernel's or op's name says it best (kept, and
// true returned: the search for that format is over); a recorded input-type list only that such
// tensors flow (`inputs_only` unless a name is found later).
bool note_format_in_use(std::string_view s, const char* inputs_only, bool& used, std::string& by) {
  used = true;
  if (s.starts_with("[") || s.starts_with("{")) {
    if (by.empty()) by = inputs_only;
    return false;
  }
  by = std::string(s.substr(0, 120));
  return true;
}

}  // namespace

WorkDone work_done(const TraceAnalysis& a) {
  WorkDone d;
  d.graphs = a.timeline.launch.graph_launches > 0;
  std::int64_t matrix_ns = 0, reduced_ns = 0;
  for (const RooflineGroup& g : a.roofline.groups) {
    if (!is_matrix_op(g.kind) || g.dtype == Dtype::kUnknown) continue;
    matrix_ns += g.kernel_ns;
    if (is_matrix_format(g.dtype)) reduced_ns += g.kernel_ns;
  }
  if (matrix_ns > 0 && reduced_ns * 2 > matrix_ns) {
    d.reduced_precision = true;
    d.reduced_precision_by = fmt::format(
        "{:.0f}% of the GEMM, convolution and attention GPU time runs in reduced "
        "precision (bf16, fp16, fp8 or narrower)",
        100.0 * static_cast<double>(reduced_ns) / static_cast<double>(matrix_ns));
  }
  d.compiled = a.elementwise_chains.compiled;
  if (a.model == nullptr) return d;
  const TraceModel& m = *a.model;
  d.compiled = d.compiled || !m.inductor_kernels.empty();
  // Interned names: each distinct op or kernel name once, not each event.
  const ConvolutionLayout layout = convolution_layout(m);
  d.channels_last = layout.channels_last();
  d.layout_by = layout.evidence();
  bool fp8_named = false, fp4_named = false;
  for (std::size_t id = 0; id < m.strings.size() && !(d.compiled && d.fused_optimizer && fp8_named && fp4_named);
       ++id) {
    const std::string_view s = m.strings.view(static_cast<StrId>(id));
    // A Python frame names the code, not the data ("mxfp4_utils.py(82): _can_support_mxfp4").
    if (contains(s, ".py(")) continue;
    if (s.rfind("aten::_fused_adam", 0) == 0 || s.rfind("aten::_fused_sgd", 0) == 0) d.fused_optimizer = true;
    if (s.rfind("triton_poi_", 0) == 0 || s.rfind("triton_per_", 0) == 0 || s.rfind("triton_red_", 0) == 0)
      d.compiled = true;
    // Compiled code on any device (Inductor's C++ on a CPU too): torch names each call of it.
    if (s.starts_with("Torch-Compiled Region") || s == "CompiledFunction") d.compiled = true;
    // FP8 and FP4 by type names only a kernel or op of such data carries.
    if (!fp8_named && (contains(s, "e4m3") || contains(s, "e5m2") || contains(s, "E4M3") || contains(s, "E5M2") ||
                       contains(s, "_scaled_mm") || contains(s, "scaled_fp8_quant")))
      fp8_named = note_format_in_use(s, "operators with FP8 inputs", d.fp8, d.fp8_by);
    if (!fp4_named && (contains(s, "e2m1") || contains(s, "E2m1") || contains(s, "E2M1") || contains(s, "mxfp4") ||
                       contains(s, "MXFP4") || contains(s, "nvfp4") || contains(s, "NVFP4") || contains(s, "Float4_")))
      fp4_named = note_format_in_use(s, "operators with FP4 inputs", d.fp4, d.fp4_by);
  }
  return d;
}

void fit_fixes_to_work_done(std::vector<Finding>& findings, const WorkDone& done) {
  for (Finding& f : findings) {
    std::vector<Fix> kept;
    std::size_t dropped = 0;
    bool compile_dropped = false;
    for (Fix& fix : f.fixes) {
      const bool graph_fix = mentions_any(fix.text, {"CUDAGraph", "torch.cuda.graph", "reduce-overhead"});
      // Adding compilation, not tuning a compile already there (dynamic shapes, whole graphs).
      const bool compile_fix = contains(fix.text, "torch.compile(") &&
                               !mentions_any(fix.text, {"reduce-overhead", "dynamic=True", "fullgraph=True"});
      const bool fused_fix = contains(fix.text, "fused=True");
      const bool fp8_fix = mentions_any(fix.text, {"FP8", "fp8", "float8", "transformer_engine"});
      if (done.fp8 && fp8_fix) {
        f.fixes_left_out.push_back({fix.text, fmt::format("the trace shows FP8 already in use ({})", done.fp8_by)});
        continue;
      }
      if (done.fp4 && fp8_fix) {
        f.fixes_left_out.push_back(
            {fix.text, fmt::format("the trace shows FP4 already in use ({}): FP8 would widen it", done.fp4_by)});
        continue;
      }
      const bool channels_last_fix = contains(fix.text, "channels_last");
      // Autocasting down to bf16/fp16 (not FP8, not TF32: those are further steps).
      const bool half_fix = !fp8_fix && (mentions_any(fix.text, {"dtype=torch.bfloat16", "dtype=torch.float16"}) ||
                                         fix.text.starts_with("bf16 ") || fix.text.starts_with("Run it in bf16"));
      if (done.reduced_precision && half_fix) {
        f.fixes_left_out.push_back({fix.text, fmt::format("the trace shows it done: {}", done.reduced_precision_by)});
        continue;
      }
      if (done.channels_last && channels_last_fix) {
        f.fixes_left_out.push_back({fix.text, fmt::format("the model already runs channels-last: {}", done.layout_by)});
        continue;
      }
      if ((done.graphs && graph_fix) || (done.compiled && compile_fix) || (done.fused_optimizer && fused_fix)) {
        ++dropped;
        f.fixes_left_out.push_back({fix.text, fmt::format("the trace shows {} already in place",
                                                          done.graphs && graph_fix       ? "graph replay"
                                                          : done.compiled && compile_fix ? "torch.compile"
                                                                                         : "a fused optimizer")});
        compile_dropped = compile_dropped || (done.compiled && compile_fix);
        continue;
      }
      // Kept because the trace shows it not yet done.
      if (graph_fix) add_because(fix, "no graph is replayed in the trace");
      if (compile_fix) add_because(fix, "no compiled (Inductor) code runs in the trace");
      if (fused_fix) add_because(fix, "the optimizer step runs unfused (no _fused_adam or _fused_sgd op)");
      if (channels_last_fix && !done.layout_by.empty()) add_because(fix, done.layout_by);
      kept.push_back(std::move(fix));
    }
    if (compile_dropped && std::find(kept.begin(), kept.end(), Fix(kCompiledNextStep)) == kept.end())
      kept.emplace_back(std::string(kCompiledNextStep), "compiled (Inductor) code runs in the trace");
    f.fixes = std::move(kept);
  }
}

void fit_fixes_to_workload(std::vector<Finding>& findings, Workload workload, std::string_view evidence) {
  const bool inference = workload == Workload::kInference || workload == Workload::kServing;
  const bool training = workload == Workload::kTraining;
  if (!inference && !training) return;
  const std::string runs = evidence.empty() ? fmt::format("the trace runs {}", workload_name(workload))
                                            : fmt::format("the trace runs {} ({})", workload_name(workload), evidence);
  for (Finding& f : findings) {
    std::vector<Fix> kept;
    std::size_t dropped = 0;
    for (Fix& fix : f.fixes) {
      const bool for_training =
          mentions_any(fix.text, {"optimizer", "Optimizer", "zero_grad", "no_sync", "ccumulation", ".backward()",
                                  "bucket_cap_mb", "register_comm_hook", "shuffle=True", "training loop",
                                  "ShardingStrategy", "backward_prefetch", "utils.checkpoint"});
      const bool for_inference = mentions_any(fix.text, {"TensorRT", "torch_tensorrt"});
      if ((inference && for_training) || (training && for_inference)) {
        ++dropped;
        f.fixes_left_out.push_back(
            {fix.text, fmt::format("it applies to {}, and this window runs {}", inference ? "training" : "inference",
                                   workload_name(workload))});
        continue;
      }
      // An engine's own memory setting applies where an engine serves.
      if (workload != Workload::kServing && contains(fix.text, "--gpu-memory-utilization")) {
        ++dropped;
        f.fixes_left_out.push_back({fix.text, fmt::format("it applies to a serving engine, and this window runs {}",
                                                          workload_name(workload))});
        continue;
      }
      // A serving engine (vLLM, SGLang, TGI, TensorRT-LLM) builds and runs its own kernels: exporting
      // the model yourself is not its lever.
      if (workload == Workload::kServing && for_inference) {
        ++dropped;
        f.fixes_left_out.push_back({fix.text, "a serving engine runs this model with its own kernels"});
        continue;
      }
      // FP8 through Transformer Engine means rebuilding the model's layers; an engine quantizes by
      // its own options, so that is the FP8 step to offer.
      if (workload == Workload::kServing && mentions_any(fix.text, {"transformer_engine"})) {
        ++dropped;
        f.fixes_left_out.push_back({fix.text, "a serving engine quantizes by its own options"});
        Fix engine_fp8(
            "Serve in FP8 with the engine's own quantization: vLLM or SGLang `--quantization fp8` (with an FP8 KV "
            "cache: `--kv-cache-dtype fp8`), Text Generation Inference `--quantize fp8`; compare output quality "
            "against the bf16 baseline",
            runs);
        for (const std::string& b : fix.because) add_because(engine_fp8, b);  // the device runs FP8
        kept.push_back(std::move(engine_fp8));
        continue;
      }
      if (for_training || for_inference) add_because(fix, runs);
      kept.push_back(std::move(fix));
    }
    f.fixes = std::move(kept);
  }
}

void fit_fixes_to_platform(std::vector<Finding>& findings, Platform platform) {
  if (platform != Platform::kRocm && platform != Platform::kMtia) return;
  const char* where = platform == Platform::kRocm ? "ROCm" : "this accelerator";
  for (Finding& f : findings) {
    std::vector<Fix> kept;
    bool dropped = false;
    for (Fix& fix : f.fixes) {
      if (mentions_any(fix.text, {"DALI", "nvJPEG", "NVDEC", "decode_jpeg(data, device=\"cuda\")"})) {
        f.fixes_left_out.push_back(
            {fix.text, fmt::format("NVIDIA's decoders (DALI, nvJPEG, NVDEC) do not run on {}", where)});
        dropped = true;
        continue;
      }
      kept.push_back(std::move(fix));
    }
    if (dropped &&
        std::none_of(kept.begin(), kept.end(), [](const Fix& x) { return contains(x.text, "libjpeg-turbo"); }))
      kept.emplace_back(
          "Make each sample cheaper: store samples pre-decoded and pre-resized, or decode in the DataLoader workers "
          "with `torchvision.io.decode_jpeg` (libjpeg-turbo) instead of PIL",
          fmt::format("NVIDIA's GPU decoders do not run on {}", where));
    f.fixes = std::move(kept);
  }
}

namespace {

// Replaces `from` by `to` in `text` outside backtick code spans.
void replace_outside_code(std::string& text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  bool code = false;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '`') {
      code = !code;
      out += text[i++];
      continue;
    }
    if (!code && text.compare(i, from.size(), from) == 0) {
      out += to;
      i += from.size();
      continue;
    }
    out += text[i++];
  }
  text = std::move(out);
}

}  // namespace

void fit_vocabulary_to_platform(std::vector<Finding>& findings, Platform platform) {
  if (platform != Platform::kRocm && platform != Platform::kMtia) return;
  const bool rocm = platform == Platform::kRocm;
  struct Words {
    std::string_view from, rocm, other;
  };
  // Prose, outside code spans.
  static constexpr Words kProse[] = {{"CUDA/HIP graph", "HIP graph", "graph"},
                                     {"CUDA graph", "HIP graph", "graph"},
                                     {"CUDA runtime", "HIP runtime", "runtime"},
                                     {"CUDA sync", "HIP sync", "sync"},
                                     {"CUDA IPC", "HIP IPC", "IPC"},
                                     {"CUDA context", "HIP context", "device context"},
                                     {"Initialise CUDA", "Initialise HIP", "Initialise the device"},
                                     {"C++/CUDA", "C++/HIP", "C++"},
                                     {"Apex/Transformer Engine fused", "Apex fused", "fused"}};
  // HIP's names of the runtime calls, in code too (an extension calls them by these names).
  static constexpr std::string_view kApis[] = {"cudaMemcpyAsync", "cudaMemsetAsync", "cudaMemcpy", "cudaMemset"};
  for (Finding& f : findings) {
    auto fit = [&](std::string& text) {
      for (const Words& w : kProse) replace_outside_code(text, w.from, rocm ? w.rocm : w.other);
      if (!rocm) return;
      for (std::string_view api : kApis)
        for (std::size_t at = text.find(api); at != std::string::npos; at = text.find(api, at + 3))
          text.replace(at, 4, "hip");
    };
    fit(f.title);
    fit(f.detail);
    for (Fix& fix : f.fixes) {
      fit(fix.text);
      for (std::string& b : fix.because) fit(b);
    }
  }
}

void say_fixes_left_out(std::vector<Finding>& findings) {
  for (Finding& f : findings) {
    if (f.fixes_left_out.empty()) continue;
    // Each reason once, in the order first met, with how many fixes it left out when several did.
    std::vector<std::pair<std::string, std::size_t>> reasons;
    for (const Finding::LeftOut& l : f.fixes_left_out) {
      auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& r) { return r.first == l.because; });
      if (it == reasons.end())
        reasons.emplace_back(l.because, 1);
      else
        ++it->second;
    }
    std::string text;
    for (const auto& [because, n] : reasons)
      text += (text.empty() ? "" : "; ") + (reasons.size() > 1 && n > 1 ? fmt::format("{} ({})", because, n) : because);
    const std::size_t n = f.fixes_left_out.size();
    f.detail += fmt::format(" {} fix{} left out: {}.", n, n == 1 ? "" : "es", text);
  }
}

}  // namespace ferret
