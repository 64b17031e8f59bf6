// GPU utilisation logs (`ferret smi`): what nvidia-smi, DCGM, rocm-smi or amd-smi sampled, as one
// time series per GPU. A third storage model beside TraceModel and NcclLog: ingest/smi_log_parser
// fills it from any of the supported layouts (docs/SMI.md), analysis/smi_stats reads it.
//
// Every column is optional: a value the tool did not print, or printed as `[N/A]`,
// `[Not Supported]`, `N/A` or `-`, is NaN (throttle reasons: -1), and the analysis uses only the
// columns a GPU has.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace ferret {

enum class SmiFormat : std::uint8_t {
  kUnknown,
  kQueryCsv,    // nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] [-l S | -lms MS]
  kDmon,        // nvidia-smi dmon [-s ...] [-o DT]
  kPmon,        // nvidia-smi pmon [-s ...] [-o DT]
  kDcgmiDmon,   // dcgmi dmon -e ...
  kPrometheus,  // dcgm-exporter's /metrics text, one scrape or several concatenated
  kRocmSmiCsv,  // rocm-smi ... --csv
  kAmdSmiCsv,   // amd-smi metric --csv
  kSmiTable,    // nvidia-smi's default table, printed again and again (`nvidia-smi -l 5`, a loop in a job script)
};
const char* smi_format_name(SmiFormat f);  // "nvidia-smi --query-gpu csv", "nvidia-smi dmon", ...

inline constexpr std::int64_t kSmiNoTime = std::numeric_limits<std::int64_t>::min();
// The latest sample time the model holds (2096-10-02 UTC): below 2^62, so two times, or a span
// plus a period, add without overflowing int64. A reader skips a row whose time lies outside
// [0, kSmiMaxTimeNs], as it skips any other unreadable row.
inline constexpr std::int64_t kSmiMaxTimeNs = 4'000'000'000'000'000'000;
inline constexpr double kSmiNone = std::numeric_limits<double>::quiet_NaN();

// NVML's clock event (throttle) reason bits, as nvidia-smi prints them in
// `clocks_throttle_reasons.active` / `clocks_event_reasons.active` and DCGM in
// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS (nvml.h, nvmlClocksEventReason*).
inline constexpr std::int64_t kSmiReasonGpuIdle = 0x1;
inline constexpr std::int64_t kSmiReasonAppClocks = 0x2;
inline constexpr std::int64_t kSmiReasonSwPowerCap = 0x4;
inline constexpr std::int64_t kSmiReasonHwSlowdown = 0x8;
inline constexpr std::int64_t kSmiReasonSwThermal = 0x20;
inline constexpr std::int64_t kSmiReasonHwThermal = 0x40;
inline constexpr std::int64_t kSmiReasonHwPowerBrake = 0x80;
// The reasons that slow a busy GPU down for power or heat (idle, application clocks, sync boost
// and display clocks are not throttling).
inline constexpr std::int64_t kSmiThrottleMask =
    kSmiReasonSwPowerCap | kSmiReasonHwSlowdown | kSmiReasonSwThermal | kSmiReasonHwThermal | kSmiReasonHwPowerBrake;

// One sample of one GPU. Percentages are 0..100 whatever the tool printed (DCGM's profiling
// fields are fractions 0..1 and are scaled here).
struct SmiSample {
  // Wall-clock time in ns since the Unix epoch (after --utc-offset for tools that print local
  // time), or, for a log without times, the sample's index times --interval (SmiGpu::absolute_time
  // false). kSmiNoTime never reaches the model.
  std::int64_t time_ns = 0;
  std::uint64_t line = 0;               // 1-based line the sample came from (its first line)
  double util_pct = kSmiNone;           // share of the period a kernel ran (utilization.gpu, dmon sm, GPU_UTIL, ...)
  double sm_active_pct = kSmiNone;      // DCGM PROF_SM_ACTIVE x 100
  double sm_occupancy_pct = kSmiNone;   // DCGM PROF_SM_OCCUPANCY x 100
  double tensor_active_pct = kSmiNone;  // DCGM PROF_PIPE_TENSOR_ACTIVE x 100
  double dram_active_pct = kSmiNone;    // DCGM PROF_DRAM_ACTIVE x 100
  double mem_util_pct = kSmiNone;       // utilization.memory, dmon mem, AMD umc activity
  double mem_used_mib = kSmiNone;
  double mem_total_mib = kSmiNone;
  double power_w = kSmiNone;
  double power_limit_w = kSmiNone;
  double sm_clock_mhz = kSmiNone;
  double max_sm_clock_mhz = kSmiNone;
  double temp_c = kSmiNone;
  std::int64_t throttle_reasons = -1;  // NVML bits; -1 when not logged
};

// A process seen by `nvidia-smi pmon` on a GPU.
struct SmiProcess {
  std::int64_t pid = -1;
  std::string command;  // as printed (untrusted text)
  std::uint64_t samples = 0;
  double sm_pct_sum = 0;  // summed over its samples; mean = sum / samples
};

struct SmiGpu {
  std::uint32_t source = 0;  // index into SmiLog::sources
  std::string key;           // how the log names it: "0", "card0", "GPU 0", "host-a:3"
  std::string name;          // product name when logged ("NVIDIA H100 80GB HBM3")
  std::string uuid;
  std::string bus_id;
  bool absolute_time = true;  // false: the log had no times (samples spaced by --interval)
  std::vector<SmiSample> samples;
  std::vector<SmiProcess> processes;  // pmon only, at most kSmiMaxProcesses
};

inline constexpr std::size_t kSmiMaxProcesses = 256;

struct SmiSource {
  std::string name;
  std::string compression = "none";
  SmiFormat format = SmiFormat::kUnknown;
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  std::uint64_t samples = 0;
  std::uint64_t skipped_lines = 0;            // lines that are neither header, comment nor a readable row
  std::uint64_t long_lines = 0;               // lines cut at the line limit (and skipped)
  std::uint64_t ragged_rows = 0;              // rows with fewer or more fields than their header (kept when readable)
  std::uint64_t not_available = 0;            // values printed as [N/A], [Not Supported], N/A or -
  std::uint64_t ignored_gpus = 0;             // rows of GPUs past the GPU limit
  std::vector<std::string> columns;           // the columns read (their names as printed, units removed)
  std::vector<std::string> ignored_columns;   // printed but not used
  std::vector<std::string> skipped_examples;  // "line 12: <why>", first few, terminal-safe
  std::vector<std::string> notes;
  std::string stopped;  // why reading stopped before the end (limits), empty when it did not
  std::string damage;   // a decompression error after some bytes were read
};

struct SmiLog {
  std::vector<SmiSource> sources;
  std::vector<SmiGpu> gpus;
};

inline bool smi_has(double v) { return !std::isnan(v); }

}  // namespace ferret
