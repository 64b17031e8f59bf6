// Host preprocessing and the Python frames behind host time: which Python code holds the host while
// the GPU waits (analysis/causal/python_frames.h). host-preprocessing is the rule; the Python frames are
// also evidence in the findings that say the GPU waits on the host (launch-bound, cpu-bound,
// input-bound, low-gpu-utilization), and without Python events those say how to record them.
// docs/rules/host.md describes the rule, its threshold and its source.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// The host-overhead scale of the other host rules: >= 15% of the window high, >= 3% medium
// (XProf's levels for kernel launch overhead), and ferret's 1% floor below which no fix is worth
// a user's time.
constexpr double kPreprocessingHigh = 0.15;
constexpr double kPreprocessingMedium = 0.03;
constexpr double kPreprocessingFloor = 0.01;
// Frames enclosing at least this share of the Python time ("<module>", "main", a training loop)
// name no particular code: only the innermost of them is listed, then the frames where the time
// is spent (self time), from 1% of the Python time up.
constexpr double kTrunkShare = 0.90;
constexpr double kShownSelfShare = 0.01;
constexpr std::size_t kFramesShown = 5;

Severity preprocessing_severity(double share) {
  if (share >= kPreprocessingHigh) return Severity::kHigh;
  return share >= kPreprocessingMedium ? Severity::kMedium : Severity::kLow;
}

double per_step(const PythonFramesResult& p, std::int64_t ns) {
  return ns_to_ms(ns) / static_cast<double>(std::max<std::uint64_t>(1, p.steps));
}

// "`file: function` 118.0 ms, ..." with each frame's GPU idle per step (or in the window).
std::string frame_list(const PythonFramesResult& p, const std::vector<PythonFrameStat>& rows) {
  std::string out;
  for (const PythonFrameStat& r : rows)
    out += fmt::format("{}`{}` {:.1f} ms", out.empty() ? "" : ", ", r.frame, per_step(p, r.inclusive_ns));
  return out;
}

// The frames worth naming: the innermost frame of the common trunk, then the frames holding the
// most GPU idle themselves (self time).
std::vector<PythonFrameStat> frames_to_show(const PythonFramesResult& p) {
  const double python = static_cast<double>(p.python_idle_ns);
  auto in_trunk = [&](const PythonFrameStat& r) { return static_cast<double>(r.inclusive_ns) >= kTrunkShare * python; };
  std::vector<PythonFrameStat> shown;
  const PythonFrameStat* trunk = nullptr;
  for (const PythonFrameStat& r : p.top)
    if (in_trunk(r) && (trunk == nullptr || r.depth > trunk->depth)) trunk = &r;
  if (trunk != nullptr) shown.push_back(*trunk);
  for (const PythonFrameStat& r : p.top_self)
    if (!in_trunk(r) && static_cast<double>(r.self_ns) >= kShownSelfShare * python) shown.push_back(r);
  if (shown.size() > kFramesShown) shown.resize(kFramesShown);
  return shown;
}

std::string per_period(const PythonFramesResult& p) { return p.steps > 0 ? "per step" : "in the window"; }

std::string kinds_text(const std::vector<std::string>& kinds) {
  std::string out;
  for (std::size_t i = 0; i < kinds.size(); ++i)
    out += (i == 0 ? "" : i + 1 == kinds.size() ? " and " : ", ") + kinds[i];
  return out;
}

bool has_kind(const PythonFramesResult& p, std::string_view kind) {
  return std::find(p.preprocessing_kinds.begin(), p.preprocessing_kinds.end(), kind) != p.preprocessing_kinds.end();
}

// host-preprocessing. The GPU idles while the launching thread runs host preprocessing - tokenisers,
// image/video decoding, resizing, Hugging Face pipeline pre/post-processing - named by its Python
// frames. Gain: the GPU idle during it (a DataLoader, GPU decode or overlap with the previous
// batch takes it off the critical path; CUDA graphs and torch.compile speed up the GPU's work and
// its launches, not this). Fires at >= 1% of the window; severity on the host-overhead scale.
void rule_host_preprocessing(const PythonFramesResult& p, std::vector<Finding>& out) {
  if (!p.has_gpu || p.window_ns <= 0) return;
  const double share = share_of(p.preprocessing_idle_ns, p.window_ns);
  if (share < kPreprocessingFloor) return;
  const double step_ms = per_step(p, p.window_ns);
  const double host_ms = per_step(p, p.preprocessing_ns);
  const double idle_ms = per_step(p, p.preprocessing_idle_ns);
  const std::string kinds = kinds_text(p.preprocessing_kinds);
  Finding f = finding_for("host-preprocessing");
  const std::string period =
      p.steps > 0 ? fmt::format("each {:.1f} ms step", step_ms) : fmt::format("the {:.1f} ms window", step_ms);
  f.title = fmt::format("Host preprocessing: {:.1f} ms of {} ({:.0f}%) is {} while the GPU waits", host_ms, period,
                        share_to_pct(share_of(p.preprocessing_ns, p.window_ns)), kinds);
  f.layer = Layer::kFramework;
  f.severity = preprocessing_severity(share);
  f.detail = fmt::format(
      "The thread launching the GPU work spends {:.1f} ms {} in host preprocessing ({}), and the GPU idles "
      "{:.1f} ms of it ({:.1f}% of the time). Frames holding it (GPU idle {} while on the stack): {}. This is "
      "work outside the model: CUDA graphs or torch.compile cannot help, they speed up the GPU's work and its "
      "launches, not the host's; taking it off the critical path does.",
      host_ms, per_period(p), kinds, idle_ms, share_to_pct(share), per_period(p), frame_list(p, p.preprocessing));
  f.evidence = {{"preprocessing_ms_per_step", host_ms, "ms"},
                {"preprocessing_pct", share_to_pct(share_of(p.preprocessing_ns, p.window_ns)), "%"},
                {"gpu_idle_in_preprocessing_ms_per_step", idle_ms, "ms"},
                {"gpu_idle_in_preprocessing_pct", share_to_pct(share), "%"},
                {"step_ms", step_ms, "ms"}};
  f.fixes.push_back(
      "Run it in DataLoader workers: do the decode / resize / tokenize in `Dataset.__getitem__` (or a `collate_fn`) "
      "and "
      "iterate `DataLoader(ds, batch_size=B, num_workers=8, pin_memory=True, persistent_workers=True)`; a Hugging Face "
      "pipeline does this when given a dataset: `pipe(KeyDataset(ds, \"image\"), batch_size=B, num_workers=8)`");
  if (has_kind(p, "image/video/audio decoding"))
    f.fixes.push_back(
        "Decode on the GPU: `torchvision.io.decode_jpeg(torchvision.io.read_file(path), device=\"cuda\")` (nvJPEG), "
        "video with NVDEC (`torchcodec.decoders.VideoDecoder(path, device=\"cuda\")`), or NVIDIA DALI "
        "(`fn.decoders.image(jpegs, device=\"mixed\")`, `fn.readers.video(device=\"gpu\", ...)`)");
  if (has_kind(p, "resizing/array work") || has_kind(p, "image/video/audio decoding"))
    f.fixes.push_back(
        "Resize and normalize on the GPU after the copy: `x = "
        "torch.nn.functional.interpolate(x.cuda(non_blocking=True), "
        "size=(H, W), mode=\"bilinear\", antialias=True)` (or `torchvision.transforms.v2` on CUDA tensors)");
  if (has_kind(p, "tokenization"))
    f.fixes.push_back(
        "Tokenize once per batch with the Rust tokenizer: `tok = AutoTokenizer.from_pretrained(name, use_fast=True)`; "
        "`tok(texts, padding=True, truncation=True, return_tensors=\"pt\")` on the whole batch, not per sample");
  if (has_kind(p, "pipeline pre/post-processing"))
    f.fixes.push_back(
        "Batch the pipeline: `pipe(inputs, batch_size=B)` so preprocessing and postprocessing run once per batch");
  f.fixes.push_back(
      "Overlap it with the previous batch's forward: prepare batch N+1 in a background thread "
      "(`concurrent.futures.ThreadPoolExecutor(1).submit(preprocess, next_inputs)`) while the GPU runs batch N, and "
      "copy it with `.to(\"cuda\", non_blocking=True)` from pinned memory");
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  // Predicted: the frames leave the launching thread (DataLoader workers run them beside the
  // step), a thousandth of their time left; frames that launch device work stay (step graph).
  const double preprocessing_ns = static_cast<double>(p.preprocessing_ns);
  fix_speeds_up_host_events(f, "host preprocessing in DataLoader workers", preprocessing_ns, 0.999 * preprocessing_ns,
                            p.preprocessing_events);
  f.threshold =
      "GPU idle while the launching thread runs preprocessing frames (tokenisers, decoding, resizing, pipeline "
      "pre/post-processing) >= 1% of the window (ferret); >= 3% medium, >= 15% high (XProf's host-overhead levels)";
  out.push_back(std::move(f));
}

// The findings that say the GPU waits on the host.
bool waits_on_host(const Finding& f) {
  const RuleInfo* rule = find_rule(f.id);
  return rule != nullptr && rule->waits_on_host;
}

// A finding explained by a fired one whose device idles with its work queued: the host's Python is
// not what it waits on.
bool explained_by_a_stalled_device(const Finding& f, const std::vector<Finding>& fired) {
  const RuleInfo* rule = find_rule(f.id);
  if (rule == nullptr) return false;
  return std::any_of(fired.begin(), fired.end(), [&](const Finding& g) {
    const RuleInfo* cause = find_rule(g.id);
    return cause != nullptr && cause->device_stalled && explains(*cause, rule->id);
  });
}

// The Python frames holding the host as evidence in those findings; without Python events, how
// to record them.
void annotate_with_python_frames(const TraceAnalysis& a, std::vector<Finding>& out) {
  const PythonFramesResult& p = a.python_frames;
  for (Finding& f : out) {
    if (!waits_on_host(f) || explained_by_a_stalled_device(f, out)) continue;
    if (!p.recorded) {
      f.notes.record_stacks = true;
      continue;
    }
    if (frames_to_show(p).empty() || p.python_idle_ns <= 0) continue;
    f.notes.python_frames = true;
    f.evidence.push_back({"gpu_idle_in_python_pct", share_to_pct(share_of(p.python_idle_ns, p.window_ns)), "%"});
    f.evidence.push_back(
        {"gpu_idle_in_python_outside_ops_pct", share_to_pct(share_of(p.python_only_idle_ns, p.window_ns)), "%"});
  }
}

}  // namespace

void say_python_frames(const TraceAnalysis& a, std::vector<Finding>& findings) {
  const PythonFramesResult& p = a.python_frames;
  // The legacy autograd export has no python_function events even with with_stack=True.
  const bool legacy = a.model != nullptr && a.model->info.generation == FormatGeneration::kLegacyAutograd;
  for (Finding& f : findings) {
    if (f.notes.record_stacks)
      f.detail += legacy ? " This legacy autograd export holds no Python frames; a Kineto trace (torch.profiler in a "
                           "torch built with Kineto) recorded with `with_stack=True` would name the Python code that "
                           "holds the host."
                         : " Recording with `torch.profiler.profile(..., with_stack=True)` would name the Python code "
                           "that holds the host.";
    if (f.notes.python_frames)
      f.detail += fmt::format(
          " Python frames on the launching thread while the GPU idles (GPU idle {} while on the stack): {}; {:.1f} ms "
          "{} of the idle time is in Python outside any operator.",
          per_period(p), frame_list(p, frames_to_show(p)), per_step(p, p.python_only_idle_ns), per_period(p));
  }
}

void rules_host_preprocessing(const TraceAnalysis& a, std::vector<Finding>& out) {
  rule_host_preprocessing(a.python_frames, out);
  annotate_with_python_frames(a, out);
}

namespace {
// After the rules whose findings it annotates (the device waiting on the host).
constexpr RuleInfo kHostPreprocessingRules[] = {
    explaining(kExplainsIdleHost,
               RuleInfo{"host-preprocessing", RuleSource::kTrace, Dimension::kDataPipeline, RuleRole::kCause}),
};
}  // namespace

FERRET_RULE_FAMILY(host_preprocessing){"rules_host_preprocessing", 52, kHostPreprocessingRules,
                                       rule_run<rules_host_preprocessing>()};

}  // namespace ferret
