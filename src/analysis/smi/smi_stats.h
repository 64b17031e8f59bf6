// Per-GPU statistics of a utilisation log (model/smi_log.h): how busy each GPU was, its idle
// periods and whether they recur, SM and Tensor activity, memory and power headroom, throttling;
// and, given a trace's wall-clock window, how busy the GPUs were inside it against the whole run.
// docs/SMI.md says what each number means.
//
// Busy: DCGM's SM_ACTIVE (the share of SMs with a warp resident, averaged over the period) when a
// GPU logs it, else the tool's utilisation (nvidia-smi's utilization.gpu and dmon's sm: the share
// of the period during which at least one kernel ran, whatever it occupied; AMD's gfx activity).
// SmiGpuStats::busy_metric says which.
//
// Percentiles are type 7 (base/statistics.h: numpy's default) over the samples, each sample
// weighing the same.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/smi_log.h"

namespace ferret {

// A sample is idle below this busy (%): nothing meaningful ran (ferret's; nvidia-smi reads a few %
// for a GPU with only a monitoring context).
inline constexpr double kSmiIdleBelowPct = 10.0;
// Idle periods recur "at regular intervals" when there are >= 3 between the run's first and last
// busy sample and the spacing of their starts has a coefficient of variation <= 0.25 (ferret's:
// checkpoints every N steps land within a quarter period of each other; a random stall does not).
inline constexpr std::size_t kSmiRegularMinPeriods = 3;
inline constexpr double kSmiRegularMaxCv = 0.25;
// The reported list of idle periods is cut here (all are counted).
inline constexpr std::size_t kSmiIdleListed = 20;
// Power at the cap: draw >= 98% of the limit (the limit is enforced as an average; samples of a
// capped GPU sit within a few % of it).
inline constexpr double kSmiPowerAtCap = 0.98;

struct SmiIdlePeriod {
  std::int64_t start_ns = 0;  // time of the first idle sample
  std::int64_t end_ns = 0;    // time of the first busy sample after it
  std::size_t samples = 0;
  std::int64_t duration_ns() const { return end_ns - start_ns; }
};

struct SmiThrottle {
  std::size_t busy_samples = 0;       // samples at or above kSmiIdleBelowPct
  std::size_t throttled_samples = 0;  // of those: a throttle reason active, or power at the cap
  std::size_t power_cap = 0, thermal = 0, hw_slowdown = 0, power_brake = 0, power_at_limit = 0;
  bool reasons_logged = false;       // throttle reasons (or dmon violations) were in the log
  double busy_clock_mhz = kSmiNone;  // mean SM clock over busy samples
  double max_clock_mhz = kSmiNone;   // the highest max SM clock logged (or the highest clock seen)
  double share() const {
    return busy_samples == 0 ? 0 : static_cast<double>(throttled_samples) / static_cast<double>(busy_samples);
  }
};

struct SmiGpuStats {
  std::uint32_t gpu = 0;    // index into SmiLog::gpus
  std::string busy_metric;  // "sm_active" or "utilization"; empty when neither was logged
  std::size_t samples = 0;
  std::size_t busy_values = 0;  // samples with a busy value
  std::int64_t first_ns = 0, last_ns = 0;
  std::int64_t sample_period_ns = 0;  // median spacing of consecutive samples
  double busy_mean = kSmiNone, busy_p5 = kSmiNone, busy_p50 = kSmiNone, busy_p95 = kSmiNone;
  // The mean between the first and the last busy sample: start-up and shutdown left out (the
  // starvation and imbalance rules read this one).
  double active_busy_mean = kSmiNone;
  double util_mean = kSmiNone;  // the tool's utilisation, also when SM_ACTIVE is the busy metric
  double sm_active_mean = kSmiNone, sm_occupancy_mean = kSmiNone, tensor_active_mean = kSmiNone,
         dram_active_mean = kSmiNone, mem_util_mean = kSmiNone;
  // Memory: the peak used and the total (largest logged); headroom = total - peak.
  double mem_peak_used_mib = kSmiNone, mem_total_mib = kSmiNone;
  // Power: mean and p95 draw, the limit (largest logged).
  double power_mean_w = kSmiNone, power_p95_w = kSmiNone, power_limit_w = kSmiNone;
  double temp_max_c = kSmiNone;
  // Idle periods between the first and last busy sample (the leading and trailing idle, job
  // start-up and shutdown, are measured apart and left out, as Nsight's gpu_gaps leaves out the
  // first and last gap).
  std::vector<SmiIdlePeriod> idle;  // the first kSmiIdleListed
  std::size_t idle_periods = 0;
  std::int64_t idle_ns = 0;
  std::int64_t leading_idle_ns = 0, trailing_idle_ns = 0;
  // Recurring idle: the mean spacing of idle starts and its coefficient of variation; regular when
  // the rule's thresholds hold.
  double idle_spacing_ns = kSmiNone, idle_spacing_cv = kSmiNone;
  bool idle_regular = false;
  SmiThrottle throttle;
  std::int64_t span_ns() const { return last_ns - first_ns + sample_period_ns; }
};

// How the trace's window sits on the log's timeline.
struct SmiTraceWindow {
  std::string source;
  bool aligned = false;
  std::string reason;                     // why not aligned, or a caveat
  std::int64_t start_ns = 0, end_ns = 0;  // absolute (ns since the epoch)
  struct Gpu {
    std::uint32_t gpu = 0;
    std::size_t samples_in_window = 0;
    double window_busy_mean = kSmiNone;
    double run_busy_mean = kSmiNone;
  };
  std::vector<Gpu> gpus;
  std::int64_t run_ns = 0;  // the longest GPU's span, for "12 s of a 2 h run"
};

struct SmiStats {
  std::vector<SmiGpuStats> gpus;  // one per SmiLog::gpus entry, same order
  std::vector<SmiTraceWindow> traces;
};

SmiStats analyze_smi(const SmiLog& log);

// The busy value of one sample under the GPU's metric (NaN when the sample lacks it).
double smi_busy_value(const SmiSample& s, const std::string& metric);

// Places an absolute window [start_ns, end_ns] on the log: per GPU with absolute times, the mean
// busy of the samples inside it against the whole run. `has_absolute_time` false: not aligned.
SmiTraceWindow align_smi_window(const SmiLog& log, const SmiStats& stats, const std::string& source,
                                bool has_absolute_time, std::int64_t start_ns, std::int64_t end_ns);

}  // namespace ferret
