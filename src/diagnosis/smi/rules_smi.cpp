#include "diagnosis/smi/rules_smi.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/statistics.h"
#include "base/terminal_text.h"
#include "base/units.h"
#include "diagnosis/rule_registry.h"

namespace ferret {

std::string smi_gpu_label(const SmiLog& log, std::uint32_t gpu) {
  const SmiGpu& g = log.gpus[gpu];
  std::string label = "GPU " + terminal_safe(g.key);
  if (g.key.starts_with("GPU") || g.key.starts_with("card")) label = terminal_safe(g.key);
  if (log.sources.size() > 1) label += " of " + terminal_safe(log.sources[g.source].name);
  return label;
}

namespace {

// A GPU is judged on at least this many samples with a busy value (ferret's: fewer say nothing
// about a run).
constexpr std::size_t kSmiMinSamples = 5;

std::string smi_metric_words(const std::string& metric) {
  return metric == "sm_active" ? "SM active (DCGM)" : "utilisation (share of time a kernel ran)";
}

std::string smi_gpu_list(const SmiLog& log, const std::vector<std::uint32_t>& gpus) {
  std::string out;
  for (std::size_t i = 0; i < gpus.size() && i < 8; ++i) out += (i ? ", " : "") + smi_gpu_label(log, gpus[i]);
  if (gpus.size() > 8) out += fmt::format(" and {} more", gpus.size() - 8);
  return out;
}

// The highest busy value of a GPU's samples under its metric (NaN when none).
double smi_column_max_busy(const SmiGpu& g, const std::string& metric) {
  double best = kSmiNone;
  for (const SmiSample& s : g.samples)
    if (const double b = smi_busy_value(s, metric); smi_has(b) && (!smi_has(best) || b > best)) best = b;
  return best;
}

bool smi_judged(const SmiGpuStats& st) { return st.busy_values >= kSmiMinSamples && smi_has(st.active_busy_mean); }

// GPU-starved: busy below 60% between the run's first and last busy sample. The method's macro
// layer ("utilization below ~60% means something blocks it"); the TensorBoard plugin flags < 50%,
// SageMaker Debugger p95 < 70%. Below 30% is high severity (ferret's).
constexpr double kSmiStarvedBelowPct = 60.0;
constexpr double kSmiStarvedHighBelowPct = 30.0;

bool smi_kernels_mostly_running(const SmiGpuStats& st) {
  return st.busy_metric == "sm_active" && smi_has(st.util_mean) && st.util_mean >= kSmiStarvedBelowPct;
}

void rule_gpu_starved(const SmiLog& log, const SmiStats& stats, std::vector<Finding>& out) {
  std::vector<std::uint32_t> starved;
  double sum = 0, worst = 100;
  std::string metric;
  double util_sum = 0;
  std::size_t util_n = 0;
  for (const SmiGpuStats& st : stats.gpus) {
    if (!smi_judged(st) || st.active_busy_mean >= kSmiStarvedBelowPct) continue;
    // Low SM active while a kernel ran most of the time is kernels that fill little of the GPU
    // (gpu-underfilled), not a GPU waiting for work.
    if (smi_kernels_mostly_running(st)) continue;
    starved.push_back(st.gpu);
    sum += st.active_busy_mean;
    worst = std::min(worst, st.active_busy_mean);
    if (metric.empty() || st.busy_metric == "sm_active") metric = st.busy_metric;
    if (st.busy_metric == "sm_active" && smi_has(st.util_mean)) util_sum += st.util_mean, ++util_n;
  }
  if (starved.empty()) return;
  const double mean = sum / static_cast<double>(starved.size());
  Finding f = finding_for("gpu-starved");
  f.title = starved.size() == 1
                ? fmt::format("GPU-starved: {} busy {:.0f}% of the run", smi_gpu_label(log, starved.front()), mean)
                : fmt::format("GPU-starved: {} GPUs busy {:.0f}% of the run on average (lowest {:.0f}%)",
                              starved.size(), mean, worst);
  f.layer = Layer::kMacro;
  f.severity = mean < kSmiStarvedHighBelowPct ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "Between the first and the last busy sample, {} {} busy {:.0f}% on average by {}: the rest of the time the "
      "GPU waited for something - most often input (the DataLoader), the host launching work, or communication.",
      smi_gpu_list(log, starved), starved.size() == 1 ? "was" : "were", mean, smi_metric_words(metric));
  if (util_n > 0)
    f.detail += fmt::format(
        " The tool's own utilisation (share of time a kernel ran) was {:.0f}%: the GPU did wait, and SM active is "
        "lower still where the kernels that ran left SMs idle.",
        util_sum / static_cast<double>(util_n));
  else if (metric == "sm_active")
    f.detail +=
        " SM active also falls when the kernels that run are too small to fill the GPU; the log has no "
        "utilisation (share of time a kernel ran) to tell the two apart.";
  f.detail += " A profile of a few steps (ferret run, or ferret analyze on a torch.profiler trace) says which.";
  f.evidence = {{"busy_mean_pct", mean, "%"},
                {"busy_lowest_pct", worst, "%"},
                {"starved_gpus", static_cast<double>(starved.size()), "count"},
                {"gpus", static_cast<double>(stats.gpus.size()), "count"}};
  f.fixes = {
      "Profile a few steps (ferret run -- python train.py, or --trace with a torch.profiler trace of this run) to see "
      "whether the DataLoader, host syncs or launches hold the GPU back",
      "DataLoader(num_workers=<cores per GPU>, pin_memory=True, persistent_workers=True, prefetch_factor=4)",
      "Larger batches or CUDA graphs (torch.compile(mode=\"reduce-overhead\")) when kernels are short and launches "
      "dominate"};
  f.time_share = 1.0 - mean / 100.0;
  f.max_speedup = amdahl_speedup(f.time_share);
  f.threshold = "busy < 60% between the first and last busy sample (the method's macro layer); < 30% high";
  out.push_back(std::move(f));
}

// Kernels that fill little of the GPU: SM active (DCGM) < 50% on average while the tool's
// utilisation says a kernel ran >= 60% of the time. DCGM's documentation of the profiling metrics:
// an SM activity below 0.5 "likely indicates ineffective GPU usage"; the 60% is gpu-starved's.
// Medium: a log says that the SMs idle inside kernels, not which kernels, so no gain is bounded.
constexpr double kSmiUnderfilledBelowPct = 50;

void rule_underfilled(const SmiLog& log, const SmiStats& stats, std::vector<Finding>& out) {
  for (const SmiGpuStats& st : stats.gpus) {
    if (!smi_judged(st) || !smi_kernels_mostly_running(st) || st.active_busy_mean >= kSmiUnderfilledBelowPct) continue;
    Finding f = finding_for("gpu-underfilled");
    f.title = fmt::format("Kernels fill little of {}: SM active {:.0f}% while a kernel ran {:.0f}% of the time",
                          smi_gpu_label(log, st.gpu), st.active_busy_mean, st.util_mean);
    f.layer = Layer::kOperator;
    f.severity = Severity::kMedium;
    f.detail = fmt::format(
        "A kernel ran on {} {:.0f}% of the time (the tool's utilisation), but its SMs had at least one warp active "
        "only "
        "{:.0f}% of the time (DCGM's SM active): the GPU is not waiting for work, its kernels leave most SMs idle - "
        "grids of fewer blocks than SMs, short kernels with long tails, or one small kernel after another.",
        smi_gpu_label(log, st.gpu), st.util_mean, st.active_busy_mean);
    if (smi_has(st.sm_occupancy_mean)) f.detail += fmt::format(" SM occupancy averaged {:.0f}%.", st.sm_occupancy_mean);
    f.evidence = {{"sm_active_mean_pct", st.active_busy_mean, "%"}, {"utilization_mean_pct", st.util_mean, "%"}};
    if (smi_has(st.tensor_active_mean)) f.evidence.push_back({"tensor_active_mean_pct", st.tensor_active_mean, "%"});
    f.fixes = {
        "Profile a few steps (ferret run, or ferret analyze on a torch.profiler trace): the kernel table shows each "
        "kernel's estimated SM efficiency and occupancy",
        "Larger batches (or sequence packing) give each kernel more blocks than the GPU has SMs",
        "Fuse chains of small kernels: torch.compile(model)"};
    f.threshold =
        "SM active < 50% (DCGM's profiling-metrics guidance: below 0.5 likely ineffective use) while utilisation >= "
        "60% (gpu-starved's)";
    out.push_back(std::move(f));
  }
}

// Idle at regular intervals: >= 3 idle periods (busy < 10%) between the run's first and last busy
// sample whose starts are evenly spaced (coefficient of variation <= 0.25; analysis/smi/smi_stats.h):
// checkpointing or evaluation every N steps. Severity medium when the idle is >= 5% of the run
// (ferret's).
constexpr double kSmiPeriodicMediumShare = 0.05;

void rule_periodic_idle(const SmiLog& log, const SmiStats& stats, std::vector<Finding>& out) {
  std::vector<std::uint32_t> gpus;
  const SmiGpuStats* first = nullptr;
  for (const SmiGpuStats& st : stats.gpus)
    if (st.idle_regular && st.busy_values >= kSmiMinSamples) {
      gpus.push_back(st.gpu);
      if (first == nullptr || st.idle_ns > first->idle_ns) first = &st;
    }
  if (first == nullptr) return;
  const double span = static_cast<double>(
      std::max<std::int64_t>(1, first->span_ns() - first->leading_idle_ns - first->trailing_idle_ns));
  const double share = std::min(1.0, static_cast<double>(first->idle_ns) / span);
  const double mean_idle = static_cast<double>(first->idle_ns) / static_cast<double>(first->idle_periods);
  Finding f = finding_for("gpu-idle-periodic");
  f.title =
      fmt::format("Idle at regular intervals: every {} for {} on average ({} periods on {})",
                  human_duration(static_cast<std::int64_t>(first->idle_spacing_ns)),
                  human_duration(static_cast<std::int64_t>(mean_idle)), first->idle_periods, smi_gpu_list(log, gpus));
  f.layer = Layer::kFramework;
  f.severity = share >= kSmiPeriodicMediumShare ? Severity::kMedium : Severity::kLow;
  f.detail = fmt::format(
      "{} went idle (busy < {:.0f}%) {} times between its first and last busy sample, the starts {} apart on average "
      "(coefficient of variation {:.2f}): work the job does every N steps, most often saving a checkpoint or "
      "running evaluation. Together the idle periods are {:.1f}% of the run.",
      smi_gpu_label(log, first->gpu), kSmiIdleBelowPct, first->idle_periods,
      human_duration(static_cast<std::int64_t>(first->idle_spacing_ns)), first->idle_spacing_cv, 100 * share);
  f.evidence = {{"idle_periods", static_cast<double>(first->idle_periods), "count"},
                {"idle_spacing_s", first->idle_spacing_ns / 1e9, "s"},
                {"idle_spacing_cv", first->idle_spacing_cv, ""},
                {"mean_idle_s", mean_idle / 1e9, "s"},
                {"idle_share_pct", 100 * share, "%"}};
  f.fixes = {
      "Checkpoint asynchronously: torch.distributed.checkpoint.async_save (torch >= 2.3) writes while training "
      "goes on",
      "Evaluate less often, on a subset, or on separate GPUs",
      "Save only from rank 0 (or shard the save) and to fast local storage, then copy"};
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  f.threshold = ">= 3 idle periods (busy < 10%) with starts evenly spaced (CV <= 0.25; ferret's)";
  out.push_back(std::move(f));
}

// One GPU unlike the others: its busy differs from the median of the others by >= 20 points
// (ferret's: a GPU 20 points behind its peers holds every collective back by that much). With two
// GPUs the less busy one is named; with more, at most a third of them may differ (beyond that the
// GPUs are spread, not one unlike the rest).
constexpr double kSmiImbalancePoints = 20.0;

void rule_imbalance(const SmiLog& log, const SmiStats& stats, std::vector<Finding>& out) {
  std::vector<const SmiGpuStats*> judged;
  for (const SmiGpuStats& st : stats.gpus)
    if (smi_judged(st)) judged.push_back(&st);
  if (judged.size() < 2) return;
  struct Odd {
    const SmiGpuStats* gpu;
    double others_median;
  };
  std::vector<Odd> odd;
  for (const SmiGpuStats* st : judged) {
    std::vector<double> others;
    for (const SmiGpuStats* o : judged)
      if (o != st) others.push_back(o->active_busy_mean);
    std::sort(others.begin(), others.end());
    const double median = stats::percentile(others, 50);
    if (std::fabs(st->active_busy_mean - median) >= kSmiImbalancePoints) odd.push_back({st, median});
  }
  if (odd.empty()) return;
  if (judged.size() == 2) {
    odd = {odd.front().gpu->active_busy_mean <= odd.back().gpu->active_busy_mean ? odd.front() : odd.back()};
  } else if (odd.size() * 3 > judged.size()) {
    return;
  }
  const Odd& o = *std::max_element(odd.begin(), odd.end(), [](const Odd& a, const Odd& b) {
    return std::fabs(a.gpu->active_busy_mean - a.others_median) < std::fabs(b.gpu->active_busy_mean - b.others_median);
  });
  const bool lower = o.gpu->active_busy_mean < o.others_median;
  std::vector<std::uint32_t> names;
  for (const Odd& x : odd) names.push_back(x.gpu->gpu);
  Finding f = finding_for("gpu-imbalance");
  f.title = fmt::format("{} unlike the others: busy {:.0f}% against {:.0f}% for the rest", smi_gpu_list(log, names),
                        o.gpu->active_busy_mean, o.others_median);
  f.layer = Layer::kMacro;
  f.severity = Severity::kMedium;
  f.detail = fmt::format(
      "{} was busy {:.0f}% of the run, {} {:.0f}%. {}", smi_gpu_label(log, o.gpu->gpu), o.gpu->active_busy_mean,
      judged.size() == 2 ? std::string("the other GPU")
                         : fmt::format("the median of the other {} GPUs", judged.size() - 1),
      o.others_median,
      lower ? "In data-parallel training every collective waits for the slowest rank, so the others idle in "
              "their collectives while this one - not the GPU itself - falls behind: a rank whose host or input is "
              "slower (a straggler), or a share of the data that is smaller."
            : "This GPU works more than its peers: uneven work (data skew - longer sequences, larger images - or a "
              "rank doing extra work such as logging, evaluation or checkpointing), while the others wait for it.");
  f.evidence = {{"busy_pct", o.gpu->active_busy_mean, "%"},
                {"others_median_pct", o.others_median, "%"},
                {"difference_points", o.gpu->active_busy_mean - o.others_median, "%"},
                {"gpus", static_cast<double>(judged.size()), "count"}};
  f.fixes = {"ferret analyze DIR on traces of every rank names the straggler and its cause",
             "Balance the work: bucket samples by length (DistributedSampler over length-sorted buckets) or pad to "
             "equal shapes",
             "Check for other processes on the GPU (nvidia-smi pmon) and for throttling (gpu-throttling)"};
  f.threshold = "busy differs from the median of the other GPUs by >= 20 points (ferret's)";
  out.push_back(std::move(f));
}

// Throttling: >= 10% of a GPU's busy samples with a throttle reason active (power cap, thermal,
// HW slowdown, power brake; NVML's clock event reasons) or power draw >= 98% of the limit
// (ferret's share; NVIDIA's nvidia-smi documentation names these reasons as clocks held below the
// maximum). Severity high when >= 50% of busy samples.
constexpr double kSmiThrottleShare = 0.10;
constexpr double kSmiThrottleHighShare = 0.50;

void rule_throttling(const SmiLog& log, const SmiStats& stats, std::vector<Finding>& out) {
  for (const SmiGpuStats& st : stats.gpus) {
    const SmiThrottle& t = st.throttle;
    if (t.busy_samples < kSmiMinSamples || t.share() < kSmiThrottleShare) continue;
    std::vector<std::string> why;
    auto pct = [&](std::size_t n) { return 100.0 * static_cast<double>(n) / static_cast<double>(t.busy_samples); };
    if (t.power_cap > 0) why.push_back(fmt::format("power cap {:.0f}%", pct(t.power_cap)));
    if (t.power_at_limit > 0) why.push_back(fmt::format("power at >= 98% of the limit {:.0f}%", pct(t.power_at_limit)));
    if (t.thermal > 0) why.push_back(fmt::format("thermal {:.0f}%", pct(t.thermal)));
    if (t.hw_slowdown > 0) why.push_back(fmt::format("HW slowdown {:.0f}%", pct(t.hw_slowdown)));
    if (t.power_brake > 0) why.push_back(fmt::format("power brake {:.0f}%", pct(t.power_brake)));
    std::string reasons;
    for (const std::string& w : why) reasons += (reasons.empty() ? "" : ", ") + w;
    Finding f = finding_for("gpu-throttling");
    f.title = fmt::format("{} throttled in {:.0f}% of its busy samples ({})", smi_gpu_label(log, st.gpu),
                          100 * t.share(), reasons);
    f.layer = Layer::kHardware;
    f.severity = t.share() >= kSmiThrottleHighShare ? Severity::kHigh : Severity::kMedium;
    f.detail = fmt::format("While busy, {} ran with its clocks held down for power or heat in {} of {} samples.",
                           smi_gpu_label(log, st.gpu), t.throttled_samples, t.busy_samples);
    if (smi_has(t.busy_clock_mhz) && smi_has(t.max_clock_mhz))
      f.detail += fmt::format(" Its SM clock averaged {:.0f} MHz while busy, against a maximum of {:.0f} MHz.",
                              t.busy_clock_mhz, t.max_clock_mhz);
    if (smi_has(st.power_limit_w) && smi_has(st.power_p95_w))
      f.detail += fmt::format(" Power: p95 {:.0f} W of a {:.0f} W limit.", st.power_p95_w, st.power_limit_w);
    if (smi_has(st.temp_max_c)) f.detail += fmt::format(" Hottest sample {:.0f} C.", st.temp_max_c);
    f.evidence = {{"throttled_share_pct", 100 * t.share(), "%"},
                  {"busy_samples", static_cast<double>(t.busy_samples), "count"},
                  {"power_cap_samples", static_cast<double>(t.power_cap), "count"},
                  {"power_at_limit_samples", static_cast<double>(t.power_at_limit), "count"},
                  {"thermal_samples", static_cast<double>(t.thermal), "count"},
                  {"hw_slowdown_samples", static_cast<double>(t.hw_slowdown + t.power_brake), "count"}};
    if (smi_has(t.busy_clock_mhz)) f.evidence.push_back({"busy_sm_clock_mhz", t.busy_clock_mhz, "MHz"});
    if (smi_has(t.max_clock_mhz)) f.evidence.push_back({"max_sm_clock_mhz", t.max_clock_mhz, "MHz"});
    if (t.thermal > 0 || t.hw_slowdown > 0 || t.power_brake > 0)
      f.fixes.push_back(
          "Thermal or hardware slowdown: check the node's cooling and airflow, fan and power-supply state "
          "(nvidia-smi -q -d PERFORMANCE,TEMPERATURE) and tell the cluster's administrators");
    if (t.power_cap > 0 || t.power_at_limit > 0)
      f.fixes.push_back(
          "Power cap: compare power.limit with power.max_limit (nvidia-smi -q -d POWER); an administrator can raise "
          "it (nvidia-smi -pl). Otherwise the work is power-bound: lower precision (bf16/fp8) does more per watt");
    f.fixes.push_back("Compare with the other GPUs of the node: one throttled GPU slows every collective");
    f.threshold = "a throttle reason, or power >= 98% of the limit, in >= 10% of busy samples (ferret's); >= 50% high";
    out.push_back(std::move(f));
  }
}

// A GPU the job never used: every sample of the whole log below the idle threshold (10%), on at
// least kSmiMinSamples samples. The other rules judge a GPU between its first and last busy
// sample, so a GPU that was never busy is judged here only (gpu-starved and gpu-imbalance leave it
// out; they would otherwise call it "starved" or "unlike the others" for what is an allocation or
// launch mistake). When the busy metric is DCGM's SM active, the tool's utilisation must be idle
// too: SM active near 0 while kernels ran is kernels too small to fill the GPU, not a GPU unused.
// High: the GPU was reserved for the whole run and did nothing (ferret's).
//
// A process holding at least this much memory on it was placed there but ran no work (ferret's:
// the CUDA context alone takes a few hundred MiB; nvidia-smi shows a few MiB with none).
constexpr double kSmiHeldMemoryMib = 1024;

void rule_unused(const SmiLog& log, const SmiStats& stats, std::vector<Finding>& out) {
  std::vector<std::uint32_t> unused;
  double most_busy = 0, most_held = kSmiNone;
  std::size_t samples = 0;
  for (const SmiGpuStats& st : stats.gpus) {
    // No busy sample at all: smi_stats leaves the mean between the first and last busy one unset.
    if (st.busy_values < kSmiMinSamples || smi_has(st.active_busy_mean)) continue;
    const double busiest = smi_column_max_busy(log.gpus[st.gpu], st.busy_metric);
    const double kernels_ran = smi_column_max_busy(log.gpus[st.gpu], "utilization");
    if (smi_has(kernels_ran) && kernels_ran >= kSmiIdleBelowPct) continue;
    unused.push_back(st.gpu);
    most_busy = std::max(most_busy, busiest);
    samples += st.busy_values;
    if (smi_has(st.mem_peak_used_mib))
      most_held = smi_has(most_held) ? std::max(most_held, st.mem_peak_used_mib) : st.mem_peak_used_mib;
  }
  if (unused.empty()) return;
  const std::size_t used = stats.gpus.size() - unused.size();
  Finding f = finding_for("gpu-unused");
  f.title = unused.size() == 1 ? fmt::format("{} never used: busy at most {:.0f}% in all {} samples",
                                             smi_gpu_label(log, unused[0]), most_busy, samples)
                               : fmt::format("{} of {} GPUs never used: busy at most {:.0f}% in every sample",
                                             unused.size(), stats.gpus.size(), most_busy);
  f.layer = Layer::kMacro;
  f.severity = Severity::kHigh;
  const bool one = unused.size() == 1;
  f.detail = fmt::format("{} stayed below {:.0f}% busy by {} in every sample of the log: the job never used {}.",
                         smi_gpu_list(log, unused), kSmiIdleBelowPct,
                         smi_metric_words(stats.gpus[unused[0]].busy_metric), one ? "it" : "them");
  if (smi_has(most_held))
    f.detail += most_held >= kSmiHeldMemoryMib
                    ? fmt::format(
                          " Up to {:.0f} MiB of memory was held on {}: something was placed there (a model "
                          "copy, a CUDA context), but no work ran.",
                          most_held, one ? "it" : "one of them")
                    : fmt::format(" {} memory held at most {:.0f} MiB: no process of the job opened {}.",
                                  one ? "Its" : "Their", most_held, one ? "it" : "them");
  f.detail += used > 0
                  ? fmt::format(
                        " {} did work: the job runs fewer processes than it has GPUs, or its processes "
                        "all use the same device.",
                        used == 1 ? std::string("The log's other GPU") : fmt::format("The log's other {} GPUs", used))
                  : " No GPU of the log did any work: the job ran on the CPU (a CPU build of torch, a device "
                    "never set), or the log covers a time the job was not running.";
  f.evidence = {{"unused_gpus", static_cast<double>(unused.size()), "count"},
                {"gpus", static_cast<double>(stats.gpus.size()), "count"},
                {"busy_max_pct", most_busy, "%"},
                {"samples", static_cast<double>(samples), "count"}};
  if (smi_has(most_held)) f.evidence.push_back({"memory_peak_used_mib", most_held, "MiB"});
  f.fixes = {
      "One process per GPU: torchrun --nproc_per_node=<GPUs of the node> (or srun --ntasks-per-node=<GPUs>), each "
      "on torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"])) and model.to(f\"cuda:{local_rank}\") - not "
      "\"cuda\", which is cuda:0 in every process",
      "Check that torch sees the GPUs: torch.cuda.is_available() and torch.cuda.device_count() in the job, and "
      "CUDA_VISIBLE_DEVICES",
      "Request only the GPUs the job uses (#SBATCH --gpus-per-node=N): an idle reserved GPU is lost to others"};
  f.threshold = "busy < 10% (the idle threshold) in every sample of the log, on >= 5 samples (ferret's)";
  out.push_back(std::move(f));
}

void smi_rules(const SmiEvidence& in, std::vector<Finding>& out) {
  const SmiLog& log = in.log;
  const SmiStats& stats = in.stats;
  rule_gpu_starved(log, stats, out);
  rule_underfilled(log, stats, out);
  rule_periodic_idle(log, stats, out);
  rule_imbalance(log, stats, out);
  rule_throttling(log, stats, out);
  rule_unused(log, stats, out);
}

constexpr RuleInfo kSmiRules[] = {
    RuleInfo{"gpu-starved", RuleSource::kSmi, Dimension::kDataPipeline, RuleRole::kCause},
    RuleInfo{"gpu-underfilled", RuleSource::kSmi, Dimension::kCompute, RuleRole::kCause},
    RuleInfo{"gpu-idle-periodic", RuleSource::kSmi, Dimension::kCompute, RuleRole::kCause},
    RuleInfo{"gpu-imbalance", RuleSource::kSmi, Dimension::kDistributed, RuleRole::kCause},
    RuleInfo{"gpu-throttling", RuleSource::kSmi, Dimension::kCompute, RuleRole::kCause},
    RuleInfo{"gpu-unused", RuleSource::kSmi, Dimension::kCompute, RuleRole::kCause},
};

}  // namespace

FERRET_RULE_FAMILY(smi){"rules_smi", 10, kSmiRules, rule_run<smi_rules>()};

void rules_smi(const SmiLog& log, const SmiStats& stats, std::vector<Finding>& out) {
  run_rule_families(SmiEvidence{log, stats}, out);
}

}  // namespace ferret
