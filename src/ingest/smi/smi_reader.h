// The parts the GPU utilisation log readers share (internal to ingest/smi/; every name says smi, so that the unity
// build's batches stay apart): value and time parsing, the column model, and SmiReader, the state every layout's reader
// builds on. The public entry points are in smi_log_parser.h (implemented in smi_source_loop.cpp).
#pragma once

#include <unistd.h>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "base/input_error.h"
#include "base/resident_memory.h"
#include "base/terminal_text.h"
#include "base/text.h"
#include "ingest/smi/smi_log_parser.h"

namespace ferret {

// ---- values ---------------------------------------------------------------------------------------

// What the tools print for a value they do not have.
inline bool smi_not_available(std::string_view v) {
  if (v.empty() || v == "-" || v == "N/A" || v == "n/a" || v == "NA") return true;
  if (v.front() == '[' && v.back() == ']') return true;  // [N/A], [Not Supported], [Unknown Error], ...
  return v == "Not Supported" || v == "Unknown Error" || v == "Insufficient Permissions";
}

enum class SmiValue { kNumber, kNotAvailable, kGarbage };

// A number with an optional unit after it ("87 %", "40536 MiB", "245.31 W", "0.523", "(1700Mhz)").
// Non-finite numbers (NaN, inf) are not available.
inline SmiValue smi_parse_number(std::string_view text, double& out, std::string_view* unit = nullptr) {
  text = trim(text);
  if (smi_not_available(text)) return SmiValue::kNotAvailable;
  if (text.front() == '(' && text.back() == ')') text = trim(text.substr(1, text.size() - 2));
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end == text.data()) return SmiValue::kGarbage;
  if (!std::isfinite(v)) return SmiValue::kNotAvailable;
  out = v;
  if (unit != nullptr) *unit = trim(text.substr(static_cast<std::size_t>(end - text.data())));
  return SmiValue::kNumber;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
inline std::int64_t smi_days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

inline bool smi_digits(std::string_view s, std::size_t n, unsigned& out) {
  if (s.size() < n) return false;
  out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + static_cast<unsigned>(s[i] - '0');
  }
  return true;
}

// ---- columns --------------------------------------------------------------------------------------

enum class SmiField : std::uint8_t {
  kIgnore,
  kTime,    // a whole date-and-time cell
  kDate,    // dmon/pmon -o D
  kClock,   // dmon/pmon -o T
  kEpochS,  // seconds since the epoch
  kKey,     // the GPU's index or device name
  kUuid,
  kBusId,
  kName,
  kUtil,
  kGrActive,  // a fraction of time the graphics/compute engine was active: the utilisation when none is logged
  kSmActive,
  kSmOccupancy,
  kTensor,
  kDram,
  kMemUtil,
  kMemUsed,
  kMemTotal,
  kMemFree,
  kPower,
  kPowerLimit,
  kSmClock,
  kMaxSmClock,
  kTemp,
  kThrottle,          // a bitmask (hex or decimal)
  kThrottleBit,       // one reason: "Active" / "Not Active"; the bit is the column's scale
  kPowerViolation,    // dmon pviol: % of time held at the power cap
  kThermalViolation,  // dmon tviol
  kPid,
  kCommand,
};

struct SmiColumn {
  std::string name;  // as printed, units removed
  SmiField field = SmiField::kIgnore;
  double scale = 1;     // multiplies the number (fractions -> %, bytes -> MiB); the bit for kThrottleBit
  bool memory = false;  // a memory amount: a unit in the cell (KiB, MiB, GiB, B) overrides the scale
};

constexpr double kSmiBytesPerMiB = 1024.0 * 1024.0;

// Memory amounts are kept in MiB.
// Column mappers: a column's name (and unit, where the format prints one) to what it holds.
double smi_memory_scale(std::string_view unit, double fallback);
SmiColumn query_csv_column(std::string_view name, std::string_view unit);
SmiColumn rocm_csv_column(std::string_view name, std::string_view unit);
SmiColumn amd_csv_column(std::string_view name, std::string_view unit);
SmiColumn dmon_column(std::string_view name);
SmiColumn dcgmi_column(std::string_view name);
SmiColumn prometheus_column(std::string_view name);
using SmiColumnMapper = SmiColumn (*)(std::string_view name, std::string_view unit);

// ---- the reader -------------------------------------------------------------------------------------

constexpr std::uint64_t kSmiSamplesPerMemoryCheck = 8192;

inline std::vector<std::string_view> smi_split(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = line.find(sep, start);
    out.push_back(trim(line.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start)));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return out;
}

inline std::vector<std::string_view> smi_words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// The state every format parser shares: the log, its source, GPUs by key, limits.

// The physical range of each value: a cell outside it is corruption, not a reading. Percentages
// 0-100 (100.5: rounding), memory up to 16 TiB and at most the total, power up to 5 kW (a whole
// GB200 superchip draws 2.7 kW), clocks up to 10 GHz, temperatures from -60 to 250 C.
inline constexpr double kSmiMaxMemoryMib = 16.0 * 1024 * 1024;
inline constexpr double kSmiMaxPowerW = 5000;
inline constexpr double kSmiMaxClockMhz = 10000;

inline const char* smi_implausible(const SmiSample& s) {
  const auto outside = [](double v, double lo, double hi) { return smi_has(v) && !(v >= lo && v <= hi); };
  for (const double pct :
       {s.util_pct, s.sm_active_pct, s.sm_occupancy_pct, s.tensor_active_pct, s.dram_active_pct, s.mem_util_pct})
    if (outside(pct, 0, 100.5)) return "a utilisation outside 0-100%";
  if (outside(s.mem_used_mib, 0, kSmiMaxMemoryMib) || outside(s.mem_total_mib, 0, kSmiMaxMemoryMib))
    return "a memory size outside 0-16 TiB";
  if (smi_has(s.mem_used_mib) && smi_has(s.mem_total_mib) && s.mem_used_mib > s.mem_total_mib * 1.01 + 1)
    return "memory used above the GPU's total";
  if (outside(s.power_w, 0, kSmiMaxPowerW) || outside(s.power_limit_w, 0, kSmiMaxPowerW))
    return "a power outside 0-5000 W";
  if (outside(s.sm_clock_mhz, 0, kSmiMaxClockMhz) || outside(s.max_sm_clock_mhz, 0, kSmiMaxClockMhz))
    return "a clock outside 0-10000 MHz";
  if (outside(s.temp_c, -60, 250)) return "a temperature outside -60-250 C";
  return nullptr;
}

class SmiReader {
 public:
  SmiReader(SmiLog& log, SmiSource& source_template, const SmiReadOptions& options) : log_(log), options_(options) {
    source_index_ = static_cast<std::uint32_t>(log_.sources.size());
    log_.sources.push_back(source_template);
  }
  virtual ~SmiReader() = default;
  virtual void line(std::string_view text) = 0;
  virtual void finish() {}

  SmiSource& source() { return log_.sources[source_index_]; }
  std::uint64_t line_number = 0;
  bool stop = false;

 protected:
  SmiLog& log_;
  const SmiReadOptions& options_;
  std::uint32_t source_index_ = 0;
  std::unordered_map<std::string, std::uint32_t> gpu_index_;

  void skip(std::string_view why) {
    bad_time_ = false;
    ++source().skipped_lines;
    if (source().skipped_examples.size() < kSmiSkippedExamples)
      source().skipped_examples.push_back(terminal_safe(fmt::format("line {}: {}", line_number, why)));
  }

  // The GPU named `key` in this source, created on first sight; nullptr past kSmiMaxGpus.
  SmiGpu* gpu(std::string_view key) {
    const auto it = gpu_index_.find(std::string(key));
    if (it != gpu_index_.end()) return &log_.gpus[it->second];
    if (log_.gpus.size() >= kSmiMaxGpus) {
      ++source().ignored_gpus;
      return nullptr;
    }
    SmiGpu g;
    g.source = source_index_;
    g.key = std::string(key.substr(0, 128));
    gpu_index_.emplace(std::string(key), static_cast<std::uint32_t>(log_.gpus.size()));
    log_.gpus.push_back(std::move(g));
    return &log_.gpus.back();
  }

  // Appends a sample; a time of kSmiNoTime places it at its index x interval. A row whose time
  // cell cannot be read, or whose values no GPU reports, is damaged: skipped and counted (one such
  // row would otherwise move a mean, or make a whole GPU's series relative).
  void add_sample(SmiGpu& g, SmiSample s) {
    if (bad_time_) {
      skip("a time that cannot be read");
      return;
    }
    if (const char* why = smi_implausible(s)) {
      skip(why);
      return;
    }
    // A log that mixes rows with and without times: keep the series monotone on the index.
    if (s.time_ns == kSmiNoTime) g.absolute_time = false;
    if (!g.absolute_time) {
      const double at_index = static_cast<double>(g.samples.size()) * options_.interval_s * 1e9;
      s.time_ns = at_index <= static_cast<double>(kSmiMaxTimeNs) ? static_cast<std::int64_t>(at_index) : -1;
    }
    if (s.time_ns < 0 || s.time_ns > kSmiMaxTimeNs) {
      skip("a time before 1970 or after 2096");
      return;
    }
    if (smi_has(s.mem_used_mib) && !smi_has(s.mem_total_mib) && smi_has(free_mib_))
      s.mem_total_mib = s.mem_used_mib + free_mib_;
    free_mib_ = kSmiNone;
    g.samples.push_back(s);
    ++source().samples;
    if (options_.max_memory_bytes > 0 && source().samples % kSmiSamplesPerMemoryCheck == 0) {
      const std::uint64_t held = resident_bytes();
      if (held > options_.max_memory_bytes) {
        source().stopped = fmt::format(
            "reading stopped at line {} ({} samples): ferret holds {} MiB, over --max-memory ({} MiB); what came "
            "before is kept",
            line_number, source().samples, held >> 20, options_.max_memory_bytes >> 20);
        stop = true;
      }
    }
  }

  // Sets one column's value on a sample (and the GPU's identity). Returns false when the cell is
  // garbage for a numeric column.
  bool set_value(SmiGpu* g, SmiSample& s, const SmiColumn& c, std::string_view cell) {
    cell = trim(cell);
    switch (c.field) {
      case SmiField::kIgnore:
      case SmiField::kKey:
      case SmiField::kPid:
      case SmiField::kCommand:
      case SmiField::kDate:
      case SmiField::kClock: return true;
      case SmiField::kName:
      case SmiField::kUuid:
      case SmiField::kBusId: {
        if (g == nullptr || smi_not_available(cell)) return true;
        std::string& slot = c.field == SmiField::kName ? g->name : c.field == SmiField::kUuid ? g->uuid : g->bus_id;
        if (slot.empty()) slot = std::string(cell.substr(0, 128));
        return true;
      }
      case SmiField::kTime: {
        if (smi_not_available(cell)) return true;
        const std::int64_t t = parse_smi_time(cell);
        if (t == kSmiNoTime) {
          bad_time_ = true;
          return false;
        }
        s.time_ns = t - options_.utc_offset_s * 1000000000;
        return true;
      }
      case SmiField::kThrottleBit: {
        if (smi_not_available(cell)) return note_na();
        const std::string v = ascii_lower(cell);
        if (v != "active" && v != "not active") return false;
        if (s.throttle_reasons < 0) s.throttle_reasons = 0;
        if (v == "active") s.throttle_reasons |= static_cast<std::int64_t>(c.scale);
        return true;
      }
      case SmiField::kThrottle: {
        if (smi_not_available(cell)) return note_na();
        std::uint64_t bits = 0;
        std::string_view digits = cell;
        int base = 10;
        if (digits.starts_with("0x") || digits.starts_with("0X")) digits.remove_prefix(2), base = 16;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), bits, base);
        if (ec != std::errc() || end != digits.data() + digits.size()) {
          double v = 0;  // Prometheus prints the bitmask as a float ("4" or "4.0")
          if (smi_parse_number(cell, v) != SmiValue::kNumber || v < 0 || v > 9.2e18) return false;
          bits = static_cast<std::uint64_t>(v);
        }
        s.throttle_reasons = static_cast<std::int64_t>(bits & 0x7fffffffffffffffULL);
        return true;
      }
      default: break;
    }
    double v = 0;
    std::string_view unit;
    const SmiValue r = smi_parse_number(cell, v, &unit);
    if (r == SmiValue::kNotAvailable) return note_na();
    if (r == SmiValue::kGarbage) return false;
    double scale = c.scale;
    if (c.memory && !unit.empty()) scale = smi_memory_scale(unit, scale);
    v *= scale;
    switch (c.field) {
      case SmiField::kEpochS:
        if (v > 0 && v < 9.2e9)
          s.time_ns = static_cast<std::int64_t>(v * 1e9);
        else
          bad_time_ = true;
        break;
      case SmiField::kUtil: s.util_pct = v; break;
      case SmiField::kGrActive: gr_active_ = v; break;
      case SmiField::kSmActive: s.sm_active_pct = v; break;
      case SmiField::kSmOccupancy: s.sm_occupancy_pct = v; break;
      case SmiField::kTensor: s.tensor_active_pct = v; break;
      case SmiField::kDram: s.dram_active_pct = v; break;
      case SmiField::kMemUtil: s.mem_util_pct = v; break;
      case SmiField::kMemUsed: s.mem_used_mib = v; break;
      case SmiField::kMemTotal: s.mem_total_mib = v; break;
      case SmiField::kMemFree: free_mib_ = v; break;
      case SmiField::kPower: s.power_w = v; break;
      case SmiField::kPowerLimit: s.power_limit_w = v; break;
      case SmiField::kSmClock: s.sm_clock_mhz = v; break;
      case SmiField::kMaxSmClock: s.max_sm_clock_mhz = v; break;
      case SmiField::kTemp: s.temp_c = v; break;
      case SmiField::kPowerViolation:
      case SmiField::kThermalViolation:
        if (s.throttle_reasons < 0) s.throttle_reasons = 0;
        if (v > 0)
          s.throttle_reasons |= c.field == SmiField::kPowerViolation ? kSmiReasonSwPowerCap : kSmiReasonSwThermal;
        break;
      default: break;
    }
    return true;
  }

  // Values a row set aside until the sample is complete.
  void settle(SmiSample& s) {
    if (!smi_has(s.util_pct) && smi_has(gr_active_)) s.util_pct = gr_active_;
    gr_active_ = kSmiNone;
  }

  bool note_na() {
    ++source().not_available;
    return true;
  }

  double free_mib_ = kSmiNone;
  double gr_active_ = kSmiNone;
  bool bad_time_ = false;  // this row's time cell could not be read
};

// One reader per layout (smi_csv_reader.cpp, smi_dmon_readers.cpp, smi_prometheus_reader.cpp,
// smi_table_reader.cpp).
std::unique_ptr<SmiReader> make_csv_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options,
                                           SmiColumnMapper mapper);
std::unique_ptr<SmiReader> make_dmon_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options);
std::unique_ptr<SmiReader> make_pmon_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options);
std::unique_ptr<SmiReader> make_dcgmi_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options);
std::unique_ptr<SmiReader> make_prometheus_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options);
std::unique_ptr<SmiReader> make_table_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options);
// Whether the head holds nvidia-smi's table (its version line), for sniffing a Slurm log.
bool smi_head_has_table(std::string_view head);

}  // namespace ferret
