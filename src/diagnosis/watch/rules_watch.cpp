#include "diagnosis/watch/rules_watch.h"
#include "diagnosis/rule_registry.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ferret {

namespace {

// The cores the workers could use at most: one each, no more than the CPUs available.
double watch_worker_capacity(const WatchSummary& s) { return std::min(s.workers_alive_mean, s.cores_available); }

bool watch_workers_pegged(const WatchSummary& s) {
  const double capacity = watch_worker_capacity(s);
  return s.role_processes[static_cast<int>(ProcessRole::kWorkers)] > 0 && capacity > 0 &&
         s.roles[static_cast<int>(ProcessRole::kWorkers)].mean >= kWatchPeggedShare * capacity;
}

bool watch_main_one_core(const WatchSummary& s) {
  return s.busiest_main.mean >= kWatchOneCoreMean && s.busiest_main.p95 <= kWatchOneCoreP95;
}

Evidence cores_evidence(const char* name, double cores) { return {name, std::round(cores * 1000) / 1000, "cores"}; }

std::vector<Evidence> cpu_evidence(const WatchSummary& s) {
  return {cores_evidence("main_cpu_mean", s.roles[0].mean),
          cores_evidence("workers_cpu_mean", s.roles[1].mean),
          cores_evidence("other_cpu_mean", s.roles[2].mean),
          cores_evidence("cores_available", s.cores_available),
          {"workers_alive_mean", std::round(s.workers_alive_mean * 100) / 100, "count"}};
}

const char* kProfileFix = "Profile a few steps with `ferret run -- python train.py ...` to see where each step goes";

// GPU starved while the workers are pegged: the input pipeline is CPU-bound.
void rule_watch_cpu_bound_input(const WatchSummary& s, bool starved, std::vector<Finding>& out) {
  if (!starved || !watch_workers_pegged(s)) return;
  const double workers = s.roles[static_cast<int>(ProcessRole::kWorkers)].mean;
  Finding f = finding_for("watch-cpu-bound-input");
  f.title = fmt::format(
      "CPU-bound input: the GPU was busy {:.0f}% of the time while the workers used {:.1f} of the {:.1f} cores they "
      "could have",
      s.gpu_util_mean, workers, watch_worker_capacity(s));
  f.layer = Layer::kMacro;
  f.severity = s.gpu_util_mean < 30 ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "The data-loading workers ran flat out ({:.0f}% of min(workers alive {:.1f}, cores available {:.1f})) and "
      "still did not keep the GPU fed: the input pipeline's CPU work is the limit. More workers help only while "
      "there are idle cores: this tree may use {:.1f} cores ({}).",
      100 * workers / std::max(watch_worker_capacity(s), 1e-9), s.workers_alive_mean, s.cores_available,
      s.cores_available, s.cores_origin);
  f.evidence = cpu_evidence(s);
  f.evidence.push_back({"gpu_util_mean_pct", std::round(s.gpu_util_mean * 10) / 10, "%"});
  if (s.workers_alive_mean + 1 < s.cores_available)
    f.fixes.push_back(
        fmt::format("Raise DataLoader(num_workers=...) toward {:.0f} (the cores available less one for "
                    "the main process): there are idle cores",
                    std::max(1.0, s.cores_available - 1)));
  else
    f.fixes.push_back(
        fmt::format("More workers will not help past the {:.0f} cores available: make each sample "
                    "cheaper instead",
                    s.cores_available));
  f.fixes.push_back("Decode faster: Pillow-SIMD or torchvision.io.decode_jpeg (on the GPU with device='cuda')");
  f.fixes.push_back("Lighter CPU augmentation, or move it to the GPU (torchvision.transforms.v2 on CUDA tensors)");
  f.fixes.push_back("GPU decoding and augmentation with NVIDIA DALI");
  f.fixes.push_back("Cache preprocessed samples (decoded, resized) once and read those instead");
  // The GPU's idle share bounds what feeding it faster can gain.
  f.time_share = std::clamp(1 - s.gpu_util_mean / 100, 0.0, 1.0);
  f.max_speedup = amdahl_speedup(f.time_share);
  f.threshold = fmt::format(
      "GPU busy < {:.0f}% (ferret; TensorBoard plugin < 50%, SageMaker p95 < 70%) and workers "
      ">= {:.0f}% of min(workers, cores)",
      kWatchGpuStarvedPct, 100 * kWatchPeggedShare);
  out.push_back(std::move(f));
}

// GPU starved while the workers are not pegged: something else holds the GPU back.
void rule_watch_gpu_starved(const WatchSummary& s, bool starved, std::vector<Finding>& out) {
  if (!starved || watch_workers_pegged(s)) return;
  const bool one_core = watch_main_one_core(s);
  Finding f = finding_for("watch-gpu-starved");
  f.title = s.role_processes[1] == 0
                ? fmt::format("GPU starved: busy {:.0f}% of the time, with no data workers", s.gpu_util_mean)
                : fmt::format("GPU starved: busy {:.0f}% of the time while the data workers used {:.1f} cores",
                              s.gpu_util_mean, s.roles[1].mean);
  f.layer = Layer::kMacro;
  f.severity = s.gpu_util_mean < 30 ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "The GPU waited, but not for the input workers ({}). Something else blocks: {}",
      s.role_processes[1] == 0 ? "there were none" : "they had CPU to spare",
      one_core ? fmt::format("the main process ran at one core ({:.2f} cores on average), the most one Python thread "
                             "can use: Python overhead, small kernels launched one by one, or data loading in the "
                             "main process",
                             s.busiest_main.mean)
      : s.total.mean < kWatchIdleCores
          ? fmt::format("the whole command used {:.2f} cores: it waited on I/O, the network, a lock or "
                        "host-device synchronisation",
                        s.total.mean)
          : "the main process (Python overhead, host-device syncs such as .item()) or I/O");
  f.evidence = cpu_evidence(s);
  f.evidence.push_back(cores_evidence("busiest_main_cpu_mean", s.busiest_main.mean));
  f.evidence.push_back({"gpu_util_mean_pct", std::round(s.gpu_util_mean * 10) / 10, "%"});
  f.fixes.push_back(kProfileFix);
  if (one_core)
    f.fixes.push_back(
        "Cut per-step Python work: torch.compile, CUDA graphs, larger batches; move data loading into "
        "DataLoader(num_workers=N) workers");
  else
    f.fixes.push_back("Look for host-device syncs (.item(), .cpu(), printing tensors) and blocking I/O in the loop");
  f.time_share = std::clamp(1 - s.gpu_util_mean / 100, 0.0, 1.0);
  f.max_speedup = amdahl_speedup(f.time_share);
  f.threshold =
      fmt::format("GPU busy < {:.0f}% (ferret; TensorBoard plugin < 50%, SageMaker p95 < 70%), workers not pegged",
                  kWatchGpuStarvedPct);
  out.push_back(std::move(f));
}

// The main process at one core: Python-bound (or single-threaded). Said when no GPU verdict
// already says it (no GPU watched, or the GPU was busy).
void rule_watch_main_one_core(const WatchSummary& s, bool starved, std::vector<Finding>& out) {
  if (starved || !watch_main_one_core(s)) return;
  Finding f = finding_for("watch-main-one-core");
  f.title = fmt::format("The main process ran at one core ({:.2f} cores on average): {}", s.busiest_main.mean,
                        s.main_is_python ? "Python-bound" : "single-threaded");
  f.layer = Layer::kFramework;
  f.severity = s.gpu_watched ? Severity::kLow : Severity::kMedium;
  f.detail = s.main_is_python
                 ? "One Python thread runs at a time (the GIL): a main process at one core is as fast as its Python "
                   "code. Whatever it does per step - preprocessing, launching kernels one by one, bookkeeping - "
                   "is the limit unless it waits on the GPU."
                 : "The command's own process used one core throughout: it is limited by one thread.";
  if (s.gpu_watched)
    f.detail +=
        fmt::format(" The GPU was busy {:.0f}% of the time, so this is not holding it back now.", s.gpu_util_mean);
  f.evidence = cpu_evidence(s);
  f.evidence.push_back(cores_evidence("busiest_main_cpu_mean", s.busiest_main.mean));
  f.evidence.push_back(cores_evidence("busiest_main_cpu_p95", s.busiest_main.p95));
  f.fixes.push_back(kProfileFix);
  if (s.main_is_python)
    f.fixes.push_back("Move per-sample work into DataLoader(num_workers=N) workers; vectorise Python loops");
  f.threshold = fmt::format("busiest main process >= {:.2f} cores on average, p95 <= {:.2f} (ferret)",
                            kWatchOneCoreMean, kWatchOneCoreP95);
  out.push_back(std::move(f));
}

// Without a GPU to judge by: workers running flat out.
void rule_watch_workers_pegged(const WatchSummary& s, bool starved, std::vector<Finding>& out) {
  if (s.gpus_judged > 0 || starved || !watch_workers_pegged(s)) return;
  Finding f = finding_for("watch-workers-pegged");
  f.title = fmt::format("Workers pegged: {:.1f} cores used of the {:.1f} they could have", s.roles[1].mean,
                        watch_worker_capacity(s));
  f.layer = Layer::kMacro;
  f.severity = Severity::kMedium;
  f.detail = fmt::format(
      "The worker processes ran flat out ({:.1f} alive on average, {:.1f} cores available: {}). No GPU was watched, "
      "so whether the consumer waits on them is not measured; if it does, the input is CPU-bound and more workers "
      "help only while cores are idle.",
      s.workers_alive_mean, s.cores_available, s.cores_origin);
  f.evidence = cpu_evidence(s);
  f.fixes.push_back(kProfileFix);
  f.fixes.push_back("Make each sample cheaper: faster decode, lighter augmentation, cached preprocessed data");
  f.threshold = fmt::format("workers >= {:.0f}% of min(workers, cores) (ferret)", 100 * kWatchPeggedShare);
  out.push_back(std::move(f));
}

// The whole tree mostly waited.
void rule_watch_waiting(const WatchSummary& s, bool starved, std::vector<Finding>& out) {
  if (starved || s.samples == 0 || s.total.mean >= kWatchIdleCores) return;
  if (s.gpus_judged > 0 && s.gpu_util_mean >= kWatchGpuStarvedPct) return;  // waiting on a busy GPU is fine
  Finding f = finding_for("watch-waiting");
  f.title = fmt::format("Waiting: the command used {:.2f} cores on average over {:.1f} s", s.total.mean, s.wall_s);
  f.layer = Layer::kMacro;
  f.severity = Severity::kInfo;
  f.detail =
      "Neither the main process nor any other process of the command used the CPU: it slept or waited on I/O, the "
      "network or a lock.";
  f.evidence = cpu_evidence(s);
  f.evidence.push_back(cores_evidence("total_cpu_mean", s.total.mean));
  f.fixes.push_back("If it should be computing: look at what it waits on (py-spy dump --pid PID, strace -p PID)");
  f.threshold = fmt::format("the tree's CPU < {:.2f} cores on average (ferret)", kWatchIdleCores);
  out.push_back(std::move(f));
}

void watch_rules(const WatchSummary& s, std::vector<Finding>& out) {
  const bool starved = s.gpus_judged > 0 && s.gpu_util_mean < kWatchGpuStarvedPct;
  rule_watch_cpu_bound_input(s, starved, out);
  rule_watch_gpu_starved(s, starved, out);
  rule_watch_main_one_core(s, starved, out);
  rule_watch_workers_pegged(s, starved, out);
  rule_watch_waiting(s, starved, out);
}

constexpr RuleInfo kWatchRules[] = {
    RuleInfo{"watch-cpu-bound-input", RuleSource::kWatch, Dimension::kDataPipeline, RuleRole::kCause},
    RuleInfo{"watch-gpu-starved", RuleSource::kWatch, Dimension::kCompute, RuleRole::kCause},
    RuleInfo{"watch-main-one-core", RuleSource::kWatch, Dimension::kCompute, RuleRole::kCause},
    RuleInfo{"watch-workers-pegged", RuleSource::kWatch, Dimension::kDataPipeline, RuleRole::kCause},
    RuleInfo{"watch-waiting", RuleSource::kWatch, Dimension::kCompute, RuleRole::kCause},
};

}  // namespace

FERRET_RULE_FAMILY(watch){"rules_watch", 10, kWatchRules, rule_run<watch_rules>()};

void rules_watch(const WatchSummary& s, std::vector<Finding>& out) { run_rule_families(s, out); }

}  // namespace ferret
