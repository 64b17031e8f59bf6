// Data-pipeline rules: the training loop waiting for its next batch. They read the step breakdown
// (the share of each step in DataLoader, as the TensorBoard plugin counts it) and the data
// pipeline analysis (raw wait, GPU idle while waiting, calls, how the DataLoader was built).
#include <fmt/format.h>

#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// input-bound. Thresholds: XProf's input-pipeline analyzer (>= 20% of step time highly
// input-bound, 5-20% moderately); the TensorBoard plugin recommends a DataLoader fix above 5%.
// The share is the breakdown's DataLoader category: time inside DataLoader spans with no GPU work
// and no runtime call running - the wait the GPU does not hide, the plugin's own figure, and
// exactly what a faster input pipeline can buy back (so it is also the Amdahl share).
constexpr double kInputBoundHigh = 0.20, kInputBoundModerate = 0.05;

// How many workers load the batches: 0, more, or unknown (-1), with what says so.
struct Workers {
  int known = -1;  // 0: num_workers=0; 1: worker processes; -1: the trace does not say
  std::string by;
};

Workers workers_of(const TraceAnalysis& a) {
  const DataPipelineResult& d = a.data_pipeline;
  const std::vector<DataLoaderSettings>& recorded = a.context.options.dataloaders;
  if (!recorded.empty() && recorded.front().num_workers >= 0)
    return {recorded.front().num_workers > 0 ? 1 : 0, fmt::format("the script built {}", recorded.front().describe())};
  if (d.single_process_loader && !d.multi_process_loader)
    return {0, "the DataLoader spans are _SingleProcessDataLoaderIter: num_workers=0"};
  if (d.multi_process_loader)
    return {1, "the DataLoader spans are _MultiProcessingDataLoaderIter: worker processes load the batches"};
  return {};
}

// The input-bound fixes for how this loader is built: workers where there are none (more headroom
// where there are), pinned asynchronous copies where the batches copy from pageable memory,
// shared memory for workers only where workers exist.
void input_bound_fixes(const TraceAnalysis& a, bool cpu_only, Finding& f) {
  const Workers w = workers_of(a);
  Fix workers = cpu_only
                    ? Fix("Load batches in worker processes, prefetched: `loader = DataLoader(dataset, "
                          "batch_size=batch_size, shuffle=True, num_workers=<a few cores>, persistent_workers=True, "
                          "prefetch_factor=4)`; leave the model enough cores: `torch.set_num_threads(os.cpu_count() - "
                          "num_workers)`")
                    : Fix("Load batches in worker processes, pinned and prefetched: `loader = DataLoader(dataset, "
                          "batch_size=batch_size, shuffle=True, num_workers=<cores per GPU, e.g. os.cpu_count() // "
                          "torch.cuda.device_count()>, pin_memory=True, persistent_workers=True, prefetch_factor=4)`");
  if (w.known == 1)
    workers =
        Fix("The workers do not keep up: raise `num_workers` toward the cores available per process, with "
            "`persistent_workers=True, prefetch_factor=4`; where the workers already use every core, make each sample "
            "cheaper (below)");
  if (!w.by.empty()) add_because(workers, w.by);
  f.fixes.push_back(std::move(workers));

  if (!cpu_only) {
    // Batches copied from pageable memory stage through a bounce buffer and block the host.
    std::uint64_t pageable = 0, pinned = 0;
    for (const NamedTime& c : a.host_blockers.copies.pageable_by_name)
      if (c.name.find("HtoD") != std::string::npos) pageable += c.count;
    for (const KernelStat& k : a.hot_spots.kernels)
      if (k.name.find("HtoD (Pinned") != std::string::npos) pinned += k.calls;
    Fix copy("Copy each batch asynchronously from pinned memory: `x = x.to(\"cuda\", non_blocking=True)`");
    if (pageable > 0) {
      add_because(copy, fmt::format("{} host-to-device copies come from pageable memory", pageable));
      f.fixes.push_back(std::move(copy));
    } else if (pinned > 0) {
      f.fixes_left_out.push_back(
          {copy.text, fmt::format("the host-to-device copies already come from pinned memory ({} copies)", pinned)});
    } else {
      f.fixes.push_back(std::move(copy));
    }
  }
  f.fixes.push_back(cpu_only ? Fix("Make each sample cheaper: store samples pre-decoded and pre-resized, or decode "
                                   "with `torchvision.io.decode_jpeg` (libjpeg-turbo) instead of PIL")
                             : Fix("Make each sample cheaper: decode and augment on the GPU (NVIDIA DALI, "
                                   "`torchvision.io.decode_jpeg(data, device=\"cuda\")`) or store samples "
                                   "pre-decoded and pre-resized"));
  f.fixes.push_back(
      "Read faster: pack small files into shards (WebDataset tar shards, LMDB) or memory-map preprocessed arrays "
      "(`np.load(path, mmap_mode=\"r\")`); read from local NVMe rather than a network filesystem");
  const Fix shm("In a container, give the workers shared memory for their batches: `docker run --shm-size=16g ...`");
  if (w.known == 0)
    f.fixes_left_out.push_back({shm.text, "with num_workers=0 no worker passes batches through shared memory"});
  else
    f.fixes.push_back(shm);
}

void rule_input_bound(const TraceAnalysis& a, std::vector<Finding>& out) {
  const StepBreakdownResult& b = a.breakdown;
  const DataPipelineResult& d = a.data_pipeline;
  if (b.steps.empty() || b.average_duration_ns <= 0) return;
  const double share = b.average_pct_of(StepCategory::kDataLoader) / 100.0;
  if (share < kInputBoundModerate) return;

  Finding f = finding_for("input-bound");
  f.title =
      b.has_steps
          ? fmt::format("Input-bound: {:.0f}% of each {:.0f} ms step waits for the DataLoader ({:.1f} ms per step)",
                        100 * share, ns_to_ms(b.average_duration_ns), ns_to_ms(b.average_of(StepCategory::kDataLoader)))
          : fmt::format("Input-bound: {:.0f}% of the {:.0f} ms {} waits for the DataLoader", 100 * share,
                        ns_to_ms(b.average_duration_ns), window_noun(a));
  f.layer = Layer::kFramework;
  f.severity = share >= kInputBoundHigh ? Severity::kHigh : Severity::kMedium;
  // A CPU-only trace: the model runs on the host, so no GPU idles and no host-to-device copy exists.
  const bool cpu_only = a.gpu_metrics.devices.empty() && b.average_of(StepCategory::kKernel) <= 0 &&
                        b.average_of(StepCategory::kMemcpy) <= 0 && b.average_of(StepCategory::kMemset) <= 0;
  std::string how_built;
  if (d.single_process_loader && !d.multi_process_loader)
    how_built = fmt::format(
        " The spans are named _SingleProcessDataLoaderIter: num_workers=0, so every batch is read, decoded and "
        "augmented on the training thread while the {} waits.",
        cpu_only ? "model" : "GPU");
  else if (d.multi_process_loader)
    how_built =
        " The spans are named _MultiProcessingDataLoaderIter: worker processes exist but do not keep up - too few "
        "workers, too little prefetch, or samples too slow to read and decode.";
  // What the running script built, when ferret run / ferret.profile() recorded it.
  const std::vector<DataLoaderSettings>& recorded = a.context.options.dataloaders;
  if (!recorded.empty()) {
    how_built += " The script built ";
    for (std::size_t i = 0; i < recorded.size() && i < 3; ++i) {
      if (i > 0) how_built += i + 1 == recorded.size() || i == 2 ? " and " : ", ";
      how_built += recorded[i].describe();
    }
    if (recorded.size() > 3) how_built += fmt::format(" (and {} more)", recorded.size() - 3);
    how_built += ".";
  }
  f.detail = fmt::format(
      "The training loop spends {:.1f} ms of {} inside enumerate(DataLoader) ({:.0f}%; {:.1f} calls, the longest "
      "{:.1f} ms), and for {:.1f} ms of it ({:.0f}%) {}.{} Input waits add straight to the step time: the {} cannot "
      "start a step before its batch arrives.",
      ns_to_ms(d.average_dataloader_ns), b.has_steps ? "each step" : std::string("the ") + window_noun(a),
      d.dataloader_pct, d.average_calls_per_step, ns_to_ms(static_cast<double>(d.longest_call_ns)),
      ns_to_ms(b.average_of(StepCategory::kDataLoader)), 100 * share,
      cpu_only ? "the model does no other work" : "no GPU work runs", how_built, cpu_only ? "model" : "GPU");
  f.evidence = {{"dataloader_share_pct", 100 * share, "%"},
                {"dataloader_ms_per_step", ns_to_ms(b.average_of(StepCategory::kDataLoader)), "ms"},
                {"step_ms", ns_to_ms(b.average_duration_ns), "ms"},
                {"dataloader_wait_pct", d.dataloader_pct, "%"}};
  if (!cpu_only) f.evidence.push_back({"gpu_idle_waiting_pct", d.gpu_idle_waiting_pct, "%"});
  f.evidence.push_back({"dataloader_calls_per_step", d.average_calls_per_step, "count"});
  f.evidence.push_back({"longest_dataloader_call_ms", ns_to_ms(static_cast<double>(d.longest_call_ns)), "ms"});
  f.evidence.push_back({"num_workers_zero", d.single_process_loader && !d.multi_process_loader ? 1.0 : 0.0, ""});
  if (!recorded.empty() && recorded.front().num_workers >= 0)
    f.evidence.push_back({"num_workers", static_cast<double>(recorded.front().num_workers), "count"});
  if (!recorded.empty() && recorded.front().pin_memory >= 0)
    f.evidence.push_back({"pin_memory", static_cast<double>(recorded.front().pin_memory), ""});
  input_bound_fixes(a, cpu_only, f);
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  f.threshold = "DataLoader >= 5% of step (TensorBoard plugin: > 5%; XProf: 5-20% moderate); >= 20% high (XProf)";
  f.where = d.call_sites;
  out.push_back(std::move(f));
}

}  // namespace

void rules_data_pipeline(const TraceAnalysis& a, std::vector<Finding>& out) { rule_input_bound(a, out); }

namespace {
constexpr RuleInfo kDataPipelineRules[] = {
    waiting_on_host(removes(explaining(kExplainsIdleHost, RuleInfo{"input-bound", RuleSource::kTrace,
                                                                   Dimension::kDataPipeline, RuleRole::kCause}),
                            &RetimeChanges::remove_dataloader)),
};
}  // namespace

FERRET_RULE_FAMILY(data_pipeline){"rules_data_pipeline", 30, kDataPipelineRules, rule_run<rules_data_pipeline>()};

}  // namespace ferret
