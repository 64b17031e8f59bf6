#include "ingest/smi/smi_log_parser.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "base/input_error.h"
#include "base/terminal_text.h"
#include "base/text.h"

namespace ferret {

namespace {

// ---- values ---------------------------------------------------------------------------------------

// What the tools print for a value they do not have.
bool smi_not_available(std::string_view v) {
  if (v.empty() || v == "-" || v == "N/A" || v == "n/a" || v == "NA") return true;
  if (v.front() == '[' && v.back() == ']') return true;  // [N/A], [Not Supported], [Unknown Error], ...
  return v == "Not Supported" || v == "Unknown Error" || v == "Insufficient Permissions";
}

enum class SmiValue { kNumber, kNotAvailable, kGarbage };

// A number with an optional unit after it ("87 %", "40536 MiB", "245.31 W", "0.523", "(1700Mhz)").
// Non-finite numbers (NaN, inf) are not available.
SmiValue smi_parse_number(std::string_view text, double& out, std::string_view* unit = nullptr) {
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
std::int64_t smi_days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool smi_digits(std::string_view s, std::size_t n, unsigned& out) {
  if (s.size() < n) return false;
  out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + static_cast<unsigned>(s[i] - '0');
  }
  return true;
}

}  // namespace

std::int64_t parse_smi_time(std::string_view text) {
  text = trim(text);
  unsigned y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  std::size_t at = 0;
  if (!smi_digits(text, 4, y)) return kSmiNoTime;
  if (text.size() > 4 && (text[4] == '/' || text[4] == '-')) {  // 2024/01/31 or 2024-01-31
    if (text.size() < 10 || text[7] != text[4] || !smi_digits(text.substr(5), 2, mo) ||
        !smi_digits(text.substr(8), 2, d))
      return kSmiNoTime;
    at = 10;
  } else {  // dmon's 20240131
    if (!smi_digits(text.substr(4), 2, mo) || !smi_digits(text.substr(6), 2, d)) return kSmiNoTime;
    at = 8;
  }
  if (at >= text.size() || (text[at] != ' ' && text[at] != 'T')) return kSmiNoTime;
  while (at < text.size() && (text[at] == ' ' || text[at] == 'T')) ++at;
  const std::string_view clock = text.substr(at);
  if (clock.size() < 8 || clock[2] != ':' || clock[5] != ':' || !smi_digits(clock, 2, h) ||
      !smi_digits(clock.substr(3), 2, mi) || !smi_digits(clock.substr(6), 2, s))
    return kSmiNoTime;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 || y < 1970 || y > 2200) return kSmiNoTime;
  std::int64_t frac_ns = 0;
  std::size_t i = 8;
  if (i < clock.size() && clock[i] == '.') {
    std::int64_t scale = 100000000;
    for (++i; i < clock.size() && clock[i] >= '0' && clock[i] <= '9'; ++i) {
      frac_ns += (clock[i] - '0') * scale;
      scale /= 10;
    }
  }
  if (i != clock.size()) return kSmiNoTime;
  const std::int64_t days = smi_days_from_civil(y, mo, d);
  return ((days * 86400 + h * 3600 + mi * 60 + s) * 1000000000) + frac_ns;
}

namespace {

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
double smi_memory_scale(std::string_view unit, double fallback) {
  const std::string u = ascii_lower(unit);
  if (u == "mib" || u == "mb") return 1;
  if (u == "gib" || u == "gb") return 1024;
  if (u == "kib" || u == "kb") return 1.0 / 1024;
  if (u == "b" || u == "bytes") return 1.0 / kSmiBytesPerMiB;
  return fallback;
}

// nvidia-smi --query-gpu names (`nvidia-smi --help-query-gpu`), units already removed.
SmiColumn query_csv_column(std::string_view name, std::string_view unit) {
  const std::string n = ascii_lower(name);
  SmiColumn c{std::string(name)};
  auto set = [&](SmiField f, double scale = 1) { c.field = f, c.scale = scale; };
  if (n == "timestamp")
    set(SmiField::kTime);
  else if (n == "index")
    set(SmiField::kKey);
  else if (n == "uuid" || n == "gpu_uuid")
    set(SmiField::kUuid);
  else if (n == "pci.bus_id" || n == "gpu_bus_id")
    set(SmiField::kBusId);
  else if (n == "name" || n == "gpu_name")
    set(SmiField::kName);
  else if (n == "utilization.gpu")
    set(SmiField::kUtil);
  else if (n == "utilization.memory")
    set(SmiField::kMemUtil);
  else if (n == "memory.used" || n == "memory.total" || n == "memory.free") {
    set(n == "memory.used"    ? SmiField::kMemUsed
        : n == "memory.total" ? SmiField::kMemTotal
                              : SmiField::kMemFree,
        smi_memory_scale(unit, 1));
    c.memory = true;
  } else if (n == "power.draw" || n == "power.draw.average" || n == "power.draw.instant")
    set(SmiField::kPower);
  else if (n == "power.limit" || n == "enforced.power.limit")
    set(SmiField::kPowerLimit);
  else if (n == "clocks.sm" || n == "clocks.current.sm")
    set(SmiField::kSmClock);
  else if (n == "clocks.max.sm" || n == "clocks.max.sm_clock")
    set(SmiField::kMaxSmClock);
  else if (n == "temperature.gpu")
    set(SmiField::kTemp);
  else if (n == "clocks_throttle_reasons.active" || n == "clocks_event_reasons.active")
    set(SmiField::kThrottle);
  else {
    // One reason per column: clocks_event_reasons.sw_power_cap = Active / Not Active.
    static constexpr std::pair<std::string_view, std::int64_t> kReasons[] = {
        {"gpu_idle", kSmiReasonGpuIdle},
        {"applications_clocks_setting", kSmiReasonAppClocks},
        {"sw_power_cap", kSmiReasonSwPowerCap},
        {"hw_slowdown", kSmiReasonHwSlowdown},
        {"sw_thermal_slowdown", kSmiReasonSwThermal},
        {"hw_thermal_slowdown", kSmiReasonHwThermal},
        {"hw_power_brake_slowdown", kSmiReasonHwPowerBrake}};
    for (const std::string_view prefix : {"clocks_throttle_reasons.", "clocks_event_reasons."})
      if (n.starts_with(prefix))
        for (const auto& [reason, bit] : kReasons)
          if (std::string_view(n).substr(prefix.size()) == reason)
            set(SmiField::kThrottleBit, static_cast<double>(bit));
  }
  return c;
}

// rocm-smi --csv: `device,GPU use (%),GPU memory use (%),Average Graphics Package Power (W),...`.
SmiColumn rocm_csv_column(std::string_view name, std::string_view) {
  const std::string n = ascii_lower(name);
  SmiColumn c{std::string(name)};
  auto set = [&](SmiField f, double scale = 1) { c.field = f, c.scale = scale; };
  if (n == "device")
    set(SmiField::kKey);
  else if (n == "gpu use (%)")
    set(SmiField::kUtil);
  else if (n == "gpu memory use (%)" || n == "gpu memory read/write activity (%)")
    set(SmiField::kMemUtil);
  else if (n == "vram total memory (b)")
    set(SmiField::kMemTotal, 1.0 / kSmiBytesPerMiB);
  else if (n == "vram total used memory (b)")
    set(SmiField::kMemUsed, 1.0 / kSmiBytesPerMiB);
  else if (n.starts_with("average graphics package power") || n.starts_with("current socket graphics package power"))
    set(SmiField::kPower);
  else if (n.starts_with("max graphics package power"))
    set(SmiField::kPowerLimit);
  else if (n == "temperature (sensor edge) (c)")
    set(SmiField::kTemp);
  else if (n.starts_with("sclk clock speed"))
    set(SmiField::kSmClock);
  else if (n == "card series" || n == "card model")
    set(SmiField::kName);
  else if (n == "unique id" || n == "uuid")
    set(SmiField::kUuid);
  else if (n == "pci bus")
    set(SmiField::kBusId);
  return c;
}

// amd-smi metric --csv: `gpu,gfx_activity,umc_activity,...,socket_power,...`. amd-smi releases
// name the same metric differently (gfx_usage, usage_gfx_activity), so the known words are looked for.
SmiColumn amd_csv_column(std::string_view name, std::string_view) {
  const std::string n = ascii_lower(name);
  SmiColumn c{std::string(name)};
  auto set = [&](SmiField f, double scale = 1) { c.field = f, c.scale = scale; };
  auto has = [&](std::string_view part) { return n.find(part) != std::string::npos; };
  if (n == "gpu")
    set(SmiField::kKey);
  else if (n == "timestamp")
    set(SmiField::kEpochS);
  else if (has("gfx_activity") || has("gfx_usage") || n == "gfx_util")
    set(SmiField::kUtil);
  else if (has("umc_activity") || has("umc_usage") || n == "mem_util")
    set(SmiField::kMemUtil);
  else if (has("power_cap") || has("power_limit"))
    set(SmiField::kPowerLimit);
  else if (has("socket_power") || n == "power_usage" || n == "power")
    set(SmiField::kPower);
  else if (has("used_vram") || has("vram_used"))
    set(SmiField::kMemUsed);
  else if (has("total_vram") || has("vram_total"))
    set(SmiField::kMemTotal);
  else if (n == "gfx_0_clk" || n == "gfx_clk" || n == "clock_gfx_0_clk" || n == "gfx_0_clk_clk")
    set(SmiField::kSmClock);
  else if (n == "gfx_0_max_clk" || n == "gfx_max_clk" || n == "clock_gfx_0_max_clk")
    set(SmiField::kMaxSmClock);
  else if (n == "temperature_hotspot" || n == "hotspot" || n == "temperature_edge" || n == "edge")
    set(SmiField::kTemp);
  return c;
}

// dmon / pmon columns (`nvidia-smi dmon --help`): by the short name in the `#` header line.
SmiColumn dmon_column(std::string_view name) {
  const std::string n = ascii_lower(name);
  SmiColumn c{std::string(name)};
  auto set = [&](SmiField f, double scale = 1) { c.field = f, c.scale = scale; };
  if (n == "gpu")
    set(SmiField::kKey);
  else if (n == "date")
    set(SmiField::kDate);
  else if (n == "time")
    set(SmiField::kClock);
  else if (n == "pwr")
    set(SmiField::kPower);
  else if (n == "gtemp")
    set(SmiField::kTemp);
  else if (n == "sm")
    set(SmiField::kUtil);
  else if (n == "mem")
    set(SmiField::kMemUtil);
  else if (n == "pclk")
    set(SmiField::kSmClock);
  else if (n == "fb")
    set(SmiField::kMemUsed);
  else if (n == "pviol")
    set(SmiField::kPowerViolation);
  else if (n == "tviol")
    set(SmiField::kThermalViolation);
  else if (n == "pid")
    set(SmiField::kPid);
  else if (n == "command")
    set(SmiField::kCommand);
  return c;
}

// dcgmi dmon short names (DCGM's field tags: 1002 SMACT, 1003 SMOCC, 1004 TENSO, 1005 DRAMA, ...).
SmiColumn dcgmi_column(std::string_view name) {
  const std::string n = ascii_lower(name);
  SmiColumn c{std::string(name)};
  auto set = [&](SmiField f, double scale = 1) { c.field = f, c.scale = scale; };
  if (n == "smact")
    set(SmiField::kSmActive, 100);
  else if (n == "smocc")
    set(SmiField::kSmOccupancy, 100);
  else if (n == "tenso")
    set(SmiField::kTensor, 100);
  else if (n == "drama")
    set(SmiField::kDram, 100);
  else if (n == "gract")
    set(SmiField::kGrActive, 100);
  else if (n == "gputl")
    set(SmiField::kUtil);
  else if (n == "mcutl")
    set(SmiField::kMemUtil);
  else if (n == "power" || n == "pwr")
    set(SmiField::kPower);
  else if (n == "smclk")
    set(SmiField::kSmClock);
  else if (n == "fbusd")
    set(SmiField::kMemUsed);
  else if (n == "fbfre")
    set(SmiField::kMemFree);
  else if (n == "fbttl")
    set(SmiField::kMemTotal);
  else if (n == "tmptr")
    set(SmiField::kTemp);
  return c;
}

// dcgm-exporter metric names (DCGM field identifiers).
SmiColumn prometheus_column(std::string_view name) {
  SmiColumn c{std::string(name)};
  auto set = [&](SmiField f, double scale = 1) { c.field = f, c.scale = scale; };
  static constexpr std::pair<std::string_view, SmiField> kPercent[] = {
      {"DCGM_FI_DEV_GPU_UTIL", SmiField::kUtil},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", SmiField::kMemUtil},
      {"DCGM_FI_DEV_POWER_USAGE", SmiField::kPower},
      {"DCGM_FI_DEV_POWER_MGMT_LIMIT", SmiField::kPowerLimit},
      {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", SmiField::kPowerLimit},
      {"DCGM_FI_DEV_SM_CLOCK", SmiField::kSmClock},
      {"DCGM_FI_DEV_MAX_SM_CLOCK", SmiField::kMaxSmClock},
      {"DCGM_FI_DEV_GPU_TEMP", SmiField::kTemp},
      {"DCGM_FI_DEV_FB_USED", SmiField::kMemUsed},
      {"DCGM_FI_DEV_FB_FREE", SmiField::kMemFree},
      {"DCGM_FI_DEV_FB_TOTAL", SmiField::kMemTotal},
      {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", SmiField::kThrottle},
      {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", SmiField::kThrottle}};
  static constexpr std::pair<std::string_view, SmiField> kFraction[] = {
      {"DCGM_FI_PROF_SM_ACTIVE", SmiField::kSmActive},
      {"DCGM_FI_PROF_SM_OCCUPANCY", SmiField::kSmOccupancy},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", SmiField::kTensor},
      {"DCGM_FI_PROF_DRAM_ACTIVE", SmiField::kDram},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", SmiField::kGrActive}};
  for (const auto& [metric, field] : kPercent)
    if (name == metric) set(field);
  for (const auto& [metric, field] : kFraction)
    if (name == metric) set(field, 100);
  return c;
}

// ---- the reader -------------------------------------------------------------------------------------

// Resident bytes of this process (/proc/self/statm), 0 when unknown.
std::uint64_t smi_resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size_pages = 0, resident_pages = 0;
  const int got = std::fscanf(f, "%llu %llu", &size_pages, &resident_pages);
  std::fclose(f);
  const long page = ::sysconf(_SC_PAGESIZE);
  return got == 2 && page > 0 ? resident_pages * static_cast<std::uint64_t>(page) : 0;
}

constexpr std::uint64_t kSmiSamplesPerMemoryCheck = 8192;

std::vector<std::string_view> smi_split(std::string_view line, char sep) {
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

std::vector<std::string_view> smi_words(std::string_view line) {
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

const char* smi_implausible(const SmiSample& s) {
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
      const std::uint64_t held = smi_resident_bytes();
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

// ---- CSV formats: nvidia-smi --query-gpu, rocm-smi, amd-smi -------------------------------------

using SmiColumnMapper = SmiColumn (*)(std::string_view name, std::string_view unit);

class SmiCsvReader : public SmiReader {
 public:
  SmiCsvReader(SmiLog& log, SmiSource& src, const SmiReadOptions& options, SmiColumnMapper mapper)
      : SmiReader(log, src, options), mapper_(mapper) {
    if (src.format == SmiFormat::kQueryCsv && !options.columns.empty()) {
      given_columns_ = true;
      set_header(options.columns);
    }
  }

  void line(std::string_view text) override {
    if (trim(text).empty()) return;
    if (is_header(text)) {
      set_header(text);
      return;
    }
    if (columns_.empty()) {
      skip("a row before any header");
      return;
    }
    std::vector<std::string_view> cells = smi_split(text, ',');
    if (cells.size() != columns_.size()) {
      // Fewer than half the columns, or a single field: not a row of this table.
      if (cells.size() * 2 < columns_.size() || cells.size() < 2) {
        skip(fmt::format("{} fields where the header has {}", cells.size(), columns_.size()));
        return;
      }
      ++source().ragged_rows;
    }
    SmiSample s;
    s.time_ns = kSmiNoTime;
    s.line = line_number;
    std::string key;
    std::int64_t time_ns = kSmiNoTime;
    std::size_t read = 0, garbage = 0;
    // The identity first: name/uuid/bus land on the GPU the row belongs to.
    for (std::size_t i = 0; i < cells.size() && i < columns_.size(); ++i) {
      const SmiColumn& c = columns_[i];
      if (c.field == SmiField::kKey && !smi_not_available(cells[i])) key = std::string(cells[i].substr(0, 128));
      if (c.field == SmiField::kTime || c.field == SmiField::kEpochS) {
        SmiSample probe;
        probe.time_ns = kSmiNoTime;
        if (set_value(nullptr, probe, c, cells[i])) time_ns = probe.time_ns;
      }
    }
    for (std::size_t i = 0; i < cells.size() && i < columns_.size(); ++i) {
      if (columns_[i].field == SmiField::kIgnore) continue;
      if (set_value(nullptr, s, columns_[i], cells[i]))
        ++read;
      else
        ++garbage;
    }
    settle(s);
    if (read == 0 || garbage * 2 > columns_.size()) {
      skip("no readable value");
      return;
    }
    if (key.empty()) key = fallback_key(cells, time_ns);
    SmiGpu* g = gpu(key);
    if (g == nullptr) return;
    for (std::size_t i = 0; i < cells.size() && i < columns_.size(); ++i) {
      const SmiField f = columns_[i].field;
      if (f == SmiField::kName || f == SmiField::kUuid || f == SmiField::kBusId) set_value(g, s, columns_[i], cells[i]);
    }
    add_sample(*g, s);
  }

 private:
  SmiColumnMapper mapper_;
  std::vector<SmiColumn> columns_;
  bool given_columns_ = false;
  bool has_identity_ = false;
  std::int64_t group_time_ = kSmiNoTime;
  std::size_t position_in_group_ = 0;

  bool is_header(std::string_view text) const {
    const std::vector<std::string_view> cells = smi_split(text, ',');
    // A header holds no number where a value would be (checked first: it settles every data row
    // at its first number, before the column names are looked up), and names known columns.
    for (std::string_view c : cells) {
      double v = 0;
      if (smi_parse_number(c, v) == SmiValue::kNumber) return false;
    }
    for (std::string_view c : cells) {
      const std::size_t bracket = c.find(" [");
      const std::string_view name = trim(c.substr(0, bracket));
      if (mapper_(name, "").field != SmiField::kIgnore) return true;
    }
    return false;
  }

  void set_header(std::string_view text) {
    if (given_columns_ && !columns_.empty() && text != options_.columns) {
      source().notes.push_back(fmt::format("line {}: the log's own header replaces --columns", line_number));
      given_columns_ = false;
    }
    columns_.clear();
    has_identity_ = false;
    std::vector<std::string> read, ignored;
    for (std::string_view cell : smi_split(text, ',')) {
      std::string_view name = cell, unit;
      const std::size_t bracket = cell.find(" [");
      if (bracket != std::string_view::npos && cell.back() == ']') {
        name = trim(cell.substr(0, bracket));
        unit = cell.substr(bracket + 2, cell.size() - bracket - 3);
      }
      SmiColumn c = mapper_(name, unit);
      if (c.field == SmiField::kKey || c.field == SmiField::kUuid || c.field == SmiField::kBusId) has_identity_ = true;
      (c.field == SmiField::kIgnore ? ignored : read).push_back(terminal_safe(c.name.substr(0, 80)));
      columns_.push_back(std::move(c));
    }
    // The identity column when there is no index: the uuid, else the bus id.
    identity_column_ = columns_.size();
    bool has_index = false;
    for (const SmiColumn& c : columns_) has_index = has_index || c.field == SmiField::kKey;
    for (SmiField f : {SmiField::kUuid, SmiField::kBusId})
      for (std::size_t i = 0; i < columns_.size() && !has_index; ++i)
        if (identity_column_ == columns_.size() && columns_[i].field == f) identity_column_ = i;
    if (source().columns.empty()) {
      source().columns = std::move(read);
      source().ignored_columns = std::move(ignored);
    }
    if (!has_identity_ && source().notes.empty())
      source().notes.push_back(
          "no index, uuid or pci.bus_id column: rows sharing a timestamp are told apart by their order (one GPU when "
          "no timestamp either)");
  }

  std::size_t identity_column_ = 0;

  std::string fallback_key(const std::vector<std::string_view>& cells, std::int64_t time_ns) {
    if (identity_column_ < cells.size() && identity_column_ < columns_.size() &&
        !smi_not_available(cells[identity_column_]))
      return std::string(cells[identity_column_].substr(0, 128));
    if (time_ns == kSmiNoTime) return "0";
    if (time_ns != group_time_) group_time_ = time_ns, position_in_group_ = 0;
    return std::to_string(position_in_group_++);
  }
};

// ---- nvidia-smi dmon -------------------------------------------------------------------------------

class SmiDmonReader : public SmiReader {
 public:
  using SmiReader::SmiReader;

  void line(std::string_view text) override {
    std::string_view t = trim(text);
    if (t.empty()) return;
    if (t.front() == '#') {
      const std::vector<std::string_view> words = smi_words(t.substr(1));
      bool names_gpu = false;
      for (std::string_view w : words) names_gpu = names_gpu || ascii_lower(w) == "gpu";
      if (names_gpu) set_header(words);  // the units line (`# Idx W C ...`) is skipped
      return;
    }
    if (columns_.empty()) {
      skip("a row before any `# gpu ...` header");
      return;
    }
    const std::vector<std::string_view> words = smi_words(t);
    // Whitespace columns cannot be realigned: a row of another width is skipped.
    if (words.size() != columns_.size()) {
      ++source().ragged_rows;
      skip(fmt::format("{} fields where the header has {}", words.size(), columns_.size()));
      return;
    }
    row(words);
  }

 protected:
  std::vector<SmiColumn> columns_;

  void set_header(const std::vector<std::string_view>& words) {
    columns_.clear();
    std::vector<std::string> read, ignored;
    for (std::string_view w : words) {
      SmiColumn c = dmon_column(w);
      (c.field == SmiField::kIgnore ? ignored : read).push_back(terminal_safe(c.name.substr(0, 80)));
      columns_.push_back(std::move(c));
    }
    if (source().columns.empty()) {
      source().columns = std::move(read);
      source().ignored_columns = std::move(ignored);
    }
  }

  // The row's time from Date and Time columns: both (-o DT) give wall-clock time, Time alone a
  // time of day (placed on 1970-01-01, so not absolute), neither kSmiNoTime.
  std::int64_t row_time(const std::vector<std::string_view>& words, bool& absolute) const {
    std::string_view date, clock;
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      if (columns_[i].field == SmiField::kDate) date = words[i];
      if (columns_[i].field == SmiField::kClock) clock = words[i];
    }
    absolute = !date.empty();
    if (clock.empty()) return kSmiNoTime;
    const std::int64_t t = parse_smi_time(std::string(date.empty() ? "19700101" : date) + " " + std::string(clock));
    return t == kSmiNoTime ? t : t - options_.utc_offset_s * 1000000000;
  }

  virtual void row(const std::vector<std::string_view>& words) {
    std::string key;
    for (std::size_t i = 0; i < columns_.size(); ++i)
      if (columns_[i].field == SmiField::kKey) key = std::string(words[i].substr(0, 64));
    double idx = 0;
    if (key.empty() || smi_parse_number(key, idx) != SmiValue::kNumber) {
      skip("no GPU index");
      return;
    }
    SmiSample s;
    s.line = line_number;
    bool absolute = false;
    s.time_ns = row_time(words, absolute);
    if (!absolute) s.time_ns = kSmiNoTime;  // a time of day alone cannot be placed on a date
    std::size_t garbage = 0;
    for (std::size_t i = 0; i < columns_.size(); ++i)
      if (!set_value(nullptr, s, columns_[i], words[i])) ++garbage;
    if (garbage > 0) {
      skip("a value that is not a number");
      return;
    }
    settle(s);
    if (SmiGpu* g = gpu(key)) add_sample(*g, s);
  }
};

// ---- nvidia-smi pmon -------------------------------------------------------------------------------

// One row per process per GPU and sample (`-` for no process). A GPU's sample is the sum of its
// processes' sm (capped at 100). Samples are told apart by their Date/Time when printed, else by
// the order of rows: a GPU index lower than the row before, or a (GPU, pid) already seen, starts
// the next sample.
class SmiPmonReader : public SmiDmonReader {
 public:
  using SmiDmonReader::SmiDmonReader;

  void finish() override { flush(); }

 private:
  struct Pending {
    std::uint32_t gpu = 0;
    SmiSample sample;
  };
  std::vector<Pending> pending_;                              // this sample's GPUs, in row order
  std::vector<std::pair<std::uint32_t, std::int64_t>> seen_;  // (gpu, pid) in this sample
  std::int64_t pending_time_ = kSmiNoTime;
  double last_index_ = -1;

  void flush() {
    for (Pending& p : pending_) {
      if (smi_has(p.sample.util_pct)) p.sample.util_pct = std::min(100.0, p.sample.util_pct);
      add_sample(log_.gpus[p.gpu], p.sample);
    }
    pending_.clear();
    seen_.clear();
  }

  void row(const std::vector<std::string_view>& words) override {
    std::string_view key, pid_text, command, sm_text;
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      const SmiColumn& c = columns_[i];
      if (c.field == SmiField::kKey) key = words[i];
      if (c.field == SmiField::kPid) pid_text = words[i];
      if (c.field == SmiField::kCommand) command = words[i];
      if (c.field == SmiField::kUtil) sm_text = words[i];
    }
    double index = 0;
    if (smi_parse_number(key, index) != SmiValue::kNumber) {
      skip("no GPU index");
      return;
    }
    bool absolute = false;
    std::int64_t t = row_time(words, absolute);
    if (!absolute) t = kSmiNoTime;
    double pid_value = -1;
    const bool has_process = smi_parse_number(pid_text, pid_value) == SmiValue::kNumber;
    const std::int64_t pid =
        has_process && pid_value >= 0 && pid_value < 9.2e18 ? static_cast<std::int64_t>(pid_value) : -1;
    double sm = 0;
    const SmiValue sm_read = smi_parse_number(sm_text, sm);
    if (sm_read == SmiValue::kGarbage) {
      skip("an sm value that is not a number");
      return;
    }
    if (sm_read == SmiValue::kNotAvailable) {
      if (has_process) note_na();
      sm = 0;  // an idle GPU (pid -) or a process with no sample in the period: nothing ran
    }
    SmiGpu* g = gpu(key);
    if (g == nullptr) return;
    const auto gi = static_cast<std::uint32_t>(g - log_.gpus.data());
    // A sample holds at most kSmiMaxProcesses rows: the search for a repeated (GPU, pid) stays short.
    const bool new_sample = seen_.size() >= kSmiMaxProcesses ||
                            (t != kSmiNoTime ? t != pending_time_
                                             : index < last_index_ || std::find(seen_.begin(), seen_.end(),
                                                                                std::pair{gi, pid}) != seen_.end());
    if (new_sample) flush();
    pending_time_ = t;
    last_index_ = index;
    seen_.push_back({gi, pid});
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.gpu == gi; });
    if (it == pending_.end()) {
      Pending p;
      p.gpu = gi;
      p.sample.time_ns = t;
      p.sample.line = line_number;
      p.sample.util_pct = 0;
      pending_.push_back(p);
      it = pending_.end() - 1;
    }
    it->sample.util_pct += sm;
    if (!has_process) return;
    SmiGpu& gref = log_.gpus[gi];
    auto proc =
        std::find_if(gref.processes.begin(), gref.processes.end(), [&](const SmiProcess& p) { return p.pid == pid; });
    if (proc == gref.processes.end()) {
      if (gref.processes.size() >= kSmiMaxProcesses) return;
      SmiProcess p;
      p.pid = pid;
      p.command = terminal_safe(command.substr(0, 64));
      gref.processes.push_back(p);
      proc = gref.processes.end() - 1;
    }
    ++proc->samples;
    proc->sm_pct_sum += sm;
  }
};

// ---- dcgmi dmon ------------------------------------------------------------------------------------

class SmiDcgmiReader : public SmiReader {
 public:
  using SmiReader::SmiReader;

  void line(std::string_view text) override {
    std::string_view t = trim(text);
    if (t.empty() || t == "ID" || t.starts_with("ID ")) return;
    if (t.front() == '#') {
      const std::vector<std::string_view> words = smi_words(t.substr(1));
      if (words.empty() || ascii_lower(words.front()) != "entity") return;
      columns_.clear();
      std::vector<std::string> read, ignored;
      for (std::size_t i = 1; i < words.size(); ++i) {
        SmiColumn c = dcgmi_column(words[i]);
        (c.field == SmiField::kIgnore ? ignored : read).push_back(terminal_safe(c.name.substr(0, 80)));
        columns_.push_back(std::move(c));
      }
      if (source().columns.empty()) {
        source().columns = std::move(read);
        source().ignored_columns = std::move(ignored);
      }
      return;
    }
    if (columns_.empty()) {
      skip("a row before any `#Entity ...` header");
      return;
    }
    // `GPU 0   0.523 ...`, `GPU-I 3 ...`: the entity is the first two words.
    const std::vector<std::string_view> words = smi_words(t);
    if (words.size() != columns_.size() + 2) {
      ++source().ragged_rows;
      skip(fmt::format("{} values where the header has {}", words.size() < 2 ? 0 : words.size() - 2, columns_.size()));
      return;
    }
    double id = 0;
    if (smi_parse_number(words[1], id) != SmiValue::kNumber) {
      skip("no entity id");
      return;
    }
    SmiSample s;
    s.time_ns = kSmiNoTime;
    s.line = line_number;
    for (std::size_t i = 0; i < columns_.size(); ++i)
      if (!set_value(nullptr, s, columns_[i], words[i + 2])) {
        skip("a value that is not a number");
        return;
      }
    settle(s);
    const std::string key = std::string(words[0].substr(0, 16)) + " " + std::string(words[1].substr(0, 32));
    if (SmiGpu* g = gpu(key)) add_sample(*g, s);
  }

 private:
  std::vector<SmiColumn> columns_;
};

// ---- dcgm-exporter (Prometheus text exposition) ----------------------------------------------------

class SmiPrometheusReader : public SmiReader {
 public:
  using SmiReader::SmiReader;

  void line(std::string_view text) override {
    std::string_view t = trim(text);
    if (t.empty() || t.front() == '#') return;
    std::size_t i = 0;
    while (i < t.size() && t[i] != '{' && t[i] != ' ' && t[i] != '\t') ++i;
    const std::string_view metric = t.substr(0, i);
    std::string gpu_label, host, uuid, model, bus;
    if (i < t.size() && t[i] == '{') {
      ++i;
      while (i < t.size() && t[i] != '}') {
        while (i < t.size() && (t[i] == ' ' || t[i] == ',')) ++i;
        const std::size_t name_start = i;
        while (i < t.size() && t[i] != '=' && t[i] != '}') ++i;
        if (i >= t.size() || t[i] != '=') break;
        const std::string_view label = trim(t.substr(name_start, i - name_start));
        ++i;
        if (i >= t.size() || t[i] != '"') {
          skip("a label value without quotes");
          return;
        }
        std::string value;
        for (++i; i < t.size() && t[i] != '"'; ++i) {
          if (t[i] == '\\' && i + 1 < t.size()) {
            ++i;
            value += t[i] == 'n' ? '\n' : t[i];
          } else {
            value += t[i];
          }
          if (value.size() > 256) value.resize(256);
        }
        if (i >= t.size()) {
          skip("an unterminated label value");
          return;
        }
        ++i;  // the closing quote
        if (label == "gpu")
          gpu_label = value;
        else if (label == "Hostname")
          host = value;
        else if (label == "UUID")
          uuid = value;
        else if (label == "modelName")
          model = value;
        else if (label == "pci_bus_id")
          bus = value;
      }
      if (i >= t.size()) {
        skip("labels without a closing brace");
        return;
      }
      ++i;
    }
    const std::vector<std::string_view> rest = smi_words(t.substr(std::min(i, t.size())));
    if (metric.empty() || rest.empty() || rest.size() > 2) {
      skip("not a `metric{labels} value [timestamp]` line");
      return;
    }
    // A metric name is [a-zA-Z_:][a-zA-Z0-9_:]* (the Prometheus text format); anything else is not a sample.
    bool valid_name = !metric.empty() && !(metric.front() >= '0' && metric.front() <= '9');
    for (const char ch : metric)
      valid_name = valid_name && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                                  ch == '_' || ch == ':');
    if (!valid_name) {
      skip("not a metric name");
      return;
    }
    const SmiColumn c = prometheus_column(metric);
    if (c.field == SmiField::kIgnore) {
      note_ignored(metric);
      return;
    }
    std::int64_t t_ns = kSmiNoTime;
    if (rest.size() == 2) {
      std::int64_t ms = 0;
      const auto [end, ec] = std::from_chars(rest[1].data(), rest[1].data() + rest[1].size(), ms);
      if (ec != std::errc() || end != rest[1].data() + rest[1].size() || ms < 0 || ms > kSmiMaxTimeNs / 1000000) {
        skip("a timestamp that is not milliseconds");
        return;
      }
      t_ns = ms * 1000000;
    }
    if (gpu_label.empty()) gpu_label = uuid.empty() ? "0" : uuid;
    const std::string key = host.empty() ? gpu_label : host + ":" + gpu_label;
    SmiGpu* g = gpu(key);
    if (g == nullptr) return;
    if (g->name.empty()) g->name = model;
    if (g->uuid.empty()) g->uuid = uuid;
    if (g->bus_id.empty()) g->bus_id = bus;
    const auto gi = static_cast<std::uint32_t>(g - log_.gpus.data());
    if (gi >= pending_.size()) pending_.resize(gi + 1);
    Pending& p = pending_[gi];
    const auto bit = std::uint64_t{1} << static_cast<unsigned>(c.field);
    if (p.open && ((p.fields & bit) != 0 || p.time_ns != t_ns)) flush(gi);
    if (!p.open) {
      p = Pending{};
      p.open = true;
      p.time_ns = t_ns;
      p.sample.time_ns = t_ns;
      p.sample.line = line_number;
    }
    p.fields |= bit;
    free_mib_ = p.free_mib;
    gr_active_ = p.gr_active;
    if (!set_value(g, p.sample, c, rest[0])) skip("a value that is not a number");
    p.free_mib = free_mib_;
    p.gr_active = gr_active_;
    free_mib_ = gr_active_ = kSmiNone;
  }

  void finish() override {
    for (std::uint32_t gi = 0; gi < pending_.size(); ++gi) flush(gi);
  }

 private:
  struct Pending {
    bool open = false;
    std::uint64_t fields = 0;
    std::int64_t time_ns = kSmiNoTime;
    SmiSample sample;
    double free_mib = kSmiNone, gr_active = kSmiNone;
  };
  std::vector<Pending> pending_;  // by GPU index in the log
  std::vector<std::string> ignored_seen_;

  void flush(std::uint32_t gi) {
    Pending& p = pending_[gi];
    if (!p.open) return;
    gr_active_ = p.gr_active;
    free_mib_ = p.free_mib;
    settle(p.sample);
    add_sample(log_.gpus[gi], p.sample);
    p.open = false;
  }

  void note_ignored(std::string_view metric) {
    if (ignored_seen_.size() >= 64) return;
    const std::string name = terminal_safe(metric.substr(0, 80));
    if (std::find(ignored_seen_.begin(), ignored_seen_.end(), name) != ignored_seen_.end()) return;
    ignored_seen_.push_back(name);
    source().ignored_columns.push_back(name);
  }
};

// ---- nvidia-smi's default table --------------------------------------------------------------------

// `nvidia-smi` without arguments (or with -l S, or in a loop of a job script) prints one boxed
// table per run:
//
//   Sun Dec  6 10:15:01 2026
//   +---------------------------------------------------------------------------------------+
//   | NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
//   |-----------------------------------------+----------------------+----------------------+
//   | GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
//   | Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
//   |=========================================+======================+======================|
//   |   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |
//   | N/A   33C    P0              62W / 400W |      4MiB / 81920MiB |      0%      Default |
//   |                                         |                      |             Disabled |
//   +-----------------------------------------+----------------------+----------------------+
//   | Processes: ...
//
// Column widths, heading lines and the MIG-mode line differ between driver generations, so rows
// are read by their `|` cells and the units of their values, never by position: a GPU's first
// line starts with its index and holds a PCI bus id, the next table line holds its readings.

constexpr std::string_view kSmiMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::string_view kSmiWeekdays[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

// The table's date line, C's asctime without a zone ("Sun Dec  6 10:15:01 2026"), alone or at the
// end of `watch`'s header ("Every 2.0s: nvidia-smi   host: Sun Dec  6 10:15:01 2026"): ns as if
// UTC, kSmiNoTime for any other line (`date` prints a zone and is not taken for the table's time).
std::int64_t smi_table_date(std::string_view line) {
  // Every line of a Slurm log is asked: the short test first (watch pads its header to the width
  // of the terminal, a few hundred columns at most).
  constexpr std::size_t kSmiLongestDateLine = 512;
  if (line.size() > kSmiLongestDateLine || line.find(':') == std::string_view::npos) return kSmiNoTime;
  const std::vector<std::string_view> words = smi_words(line);
  if (words.size() < 5) return kSmiNoTime;
  if (words.size() > 5 && !(words.front() == "Every" && contains(line, "nvidia-smi"))) return kSmiNoTime;
  const std::string_view* w = words.data() + (words.size() - 5);
  if (std::find(std::begin(kSmiWeekdays), std::end(kSmiWeekdays), w[0]) == std::end(kSmiWeekdays)) return kSmiNoTime;
  const auto month = std::find(std::begin(kSmiMonths), std::end(kSmiMonths), w[1]);
  if (month == std::end(kSmiMonths)) return kSmiNoTime;
  unsigned day = 0;
  if (w[2].empty() || w[2].size() > 2 || !smi_digits(w[2], w[2].size(), day) || w[4].size() != 4) return kSmiNoTime;
  return parse_smi_time(fmt::format("{}-{:02}-{:02} {}", w[4], month - std::begin(kSmiMonths) + 1, day, w[3]));
}

// `watch nvidia-smi` redirected to a file writes terminal control sequences (cursor moves, screen
// clears) around its screens: they are dropped before the line is read.
std::string smi_without_escapes(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\x1b') {
      out += line[i];
      continue;
    }
    if (i + 1 >= line.size()) break;
    const char kind = line[i + 1];
    if (kind == '[') {  // CSI: parameter bytes, then one final byte 0x40-0x7e
      i += 2;
      while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7e)) ++i;
    } else if (kind == ']') {  // OSC: up to BEL or ESC-backslash
      i += 2;
      while (i < line.size() && line[i] != '\x07' && line[i] != '\x1b') ++i;
      if (i < line.size() && line[i] == '\x1b') ++i;
    } else if (kind == '(' || kind == ')') {  // character set: ESC ( B
      i += 2;
    } else {
      i += 1;
    }
  }
  return out;
}

// The head holds the table's version line (`| NVIDIA-SMI 535.104.05   Driver Version: ...`).
// "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver" does not count.
bool smi_head_has_table(std::string_view head) {
  while (!head.empty()) {
    const std::size_t nl = head.find('\n');
    const std::string_view line = head.substr(0, nl);
    if (contains(line, "NVIDIA-SMI") && contains(line, "Driver Version")) return true;
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
  }
  return false;
}

bool smi_hex(std::string_view s) {
  if (s.empty() || s.size() > 8) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  return true;
}

// A PCI bus id as the table prints it: 00000000:07:00.0 (older drivers: 0000:07:00.0).
bool smi_pci_bus_id(std::string_view w) {
  const std::size_t dot = w.rfind('.');
  if (dot == std::string_view::npos || dot + 2 != w.size() || !smi_hex(w.substr(dot + 1))) return false;
  const std::vector<std::string_view> parts = smi_split(w.substr(0, dot), ':');
  return parts.size() == 3 && smi_hex(parts[0]) && smi_hex(parts[1]) && smi_hex(parts[2]);
}

// The cells of a table line `| a | b | c |`, empty when the line is not one.
std::vector<std::string_view> smi_table_cells(std::string_view t) {
  if (t.size() < 2 || t.front() != '|' || t.back() != '|') return {};
  return smi_split(t.substr(1, t.size() - 2), '|');
}

// The table's own lines that hold no reading: borders (`+---+`, `|===|`), column headings and the
// MIG-mode line under a GPU's readings (every cell blank but the last).
bool smi_table_furniture(std::string_view t, const std::vector<std::string_view>& cells) {
  if (t.find_first_not_of(" |+-=") == std::string_view::npos) return true;
  for (const std::string_view heading :
       {"Persistence-M", "Bus-Id", "Memory-Usage", "GPU-Util", "MIG M.", "Compute M.", "Pwr:Usage", "Uncorr. ECC"})
    if (contains(t, heading)) return true;
  if (cells.empty()) return false;
  for (std::size_t i = 0; i + 1 < cells.size(); ++i)
    if (!cells[i].empty()) return false;
  return true;
}

// A GPU's first line: `|   0  NVIDIA A100-SXM4-80GB  On  | 00000000:07:00.0 Off |   0 |`.
struct SmiTableGpu {
  bool open = false;
  std::uint64_t line = 0;
  std::string index, name, bus_id;
};

bool smi_table_gpu_line(const std::vector<std::string_view>& cells, SmiTableGpu& out) {
  if (cells.size() < 3) return false;
  const std::vector<std::string_view> words = smi_words(cells[0]);
  if (words.size() < 2 || words[0].size() > 6) return false;
  unsigned index = 0;
  if (!smi_digits(words[0], words[0].size(), index)) return false;
  std::string_view bus;
  for (const std::string_view w : smi_words(cells[1]))
    if (smi_pci_bus_id(w)) bus = w;
  if (bus.empty()) return false;
  std::size_t name_end = words.size();
  if (name_end > 2 && (words.back() == "On" || words.back() == "Off")) --name_end;  // persistence mode
  out = SmiTableGpu{};
  out.open = true;
  out.index = std::string(words[0]);
  out.bus_id = std::string(bus);
  for (std::size_t i = 1; i < name_end; ++i) out.name += (i > 1 ? " " : "") + std::string(words[i]);
  out.name = out.name.substr(0, 128);
  return true;
}

class SmiTableReader : public SmiReader {
 public:
  SmiTableReader(SmiLog& log, SmiSource& src, const SmiReadOptions& options) : SmiReader(log, src, options) {
    source().columns = {"index",     "name",        "bus id",       "temperature", "power draw",
                        "power cap", "memory used", "memory total", "GPU-Util"};
  }

  void line(std::string_view raw) override {
    std::string clean;
    if (raw.find('\x1b') != std::string_view::npos) {
      clean = smi_without_escapes(raw);
      raw = clean;
    }
    const std::string_view t = trim(raw);
    if (t.empty()) return;
    if (const std::int64_t date = smi_table_date(t); date != kSmiNoTime) {
      date_ns_ = date - options_.utc_offset_s * 1000000000;
      return;
    }
    const bool border = t.front() == '+' && t.find_first_not_of("+-=") == std::string_view::npos;
    if (t.front() != '|' && !border) {  // the job's own output (`set -x`'s `+ cmd` too), between or inside tables
      skip("not nvidia-smi table text");
      return;
    }
    if (contains(t, "NVIDIA-SMI")) {  // a new table: its time is the date line printed before it
      drop_pending();
      table_ns_ = date_ns_;
      date_ns_ = kSmiNoTime;
      in_gpu_table_ = true;
      return;
    }
    if (contains(t, "Processes:") || contains(t, "MIG devices:")) {  // tables whose rows are not GPUs
      drop_pending();
      in_gpu_table_ = false;
      return;
    }
    if (!in_gpu_table_) return;  // the rows of the process and MIG tables
    const std::vector<std::string_view> cells = smi_table_cells(t);
    if (smi_table_furniture(t, cells)) return;
    SmiTableGpu first;
    if (smi_table_gpu_line(cells, first)) {
      drop_pending();
      pending_ = std::move(first);
      pending_.line = line_number;
      return;
    }
    if (pending_.open && cells.size() >= 3) {
      readings(t);
      return;
    }
    skip("not nvidia-smi table text");  // a `|` or `+` line of the job's own
  }

  void finish() override { drop_pending(); }

 private:
  std::int64_t date_ns_ = kSmiNoTime;   // the last date line, for the next table
  std::int64_t table_ns_ = kSmiNoTime;  // the time of the table being read
  bool in_gpu_table_ = true;            // a log may start inside a table (no version line yet)
  SmiTableGpu pending_;                 // a GPU's first line, waiting for its readings

  void drop_pending() {
    if (!pending_.open) return;
    pending_.open = false;
    skip(fmt::format("GPU {}'s line {} without its readings line", pending_.index, pending_.line));
  }

  // `| N/A   33C    P0   62W / 400W |   4MiB / 81920MiB |   0%   Default |`: each value is known by
  // its unit. A pair around `/` is draw / cap in W or used / total in a memory unit; a lone C value
  // is the temperature; the first % in the cell after the memory pair is the utilisation (a % before
  // it is the fan's speed).
  void readings(std::string_view t) {
    pending_.open = false;
    // `N/A` holds a slash: it becomes `NA` (still not available) before the pairs are looked for.
    std::string text;
    text.reserve(t.size() + 16);
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.substr(i, 3) == "N/A") {
        text += "NA";
        i += 2;
      } else if (t[i] == '/') {
        text += " / ";
      } else {
        text += t[i];
      }
    }
    const std::vector<std::string_view> cells = smi_table_cells(trim(text));
    SmiSample s;
    s.time_ns = table_ns_;
    s.line = pending_.line;
    std::size_t read = 0;
    std::size_t memory_cell = cells.size();
    auto value = [&](std::string_view word, std::string_view want, double& slot) {
      double v = 0;
      std::string_view unit;
      const SmiValue r = smi_parse_number(word, v, &unit);
      if (r == SmiValue::kNotAvailable || word == "ERR!") {
        note_na();
        return;
      }
      if (r != SmiValue::kNumber) return;
      if (want == "MiB") {
        const double scale = smi_memory_scale(unit, kSmiNone);
        if (!smi_has(scale)) return;
        v *= scale;
      } else if (unit != want) {
        return;
      }
      slot = v;
      ++read;
    };
    auto unit_of = [](std::string_view word) {
      double v = 0;
      std::string_view unit;
      return smi_parse_number(word, v, &unit) == SmiValue::kNumber ? unit : std::string_view();
    };
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::vector<std::string_view> words = smi_words(cells[c]);
      std::vector<bool> paired(words.size(), false);
      for (std::size_t i = 1; i + 1 < words.size(); ++i) {
        if (words[i] != "/") continue;
        const std::string_view left = words[i - 1], right = words[i + 1];
        const std::string_view unit = unit_of(left).empty() ? unit_of(right) : unit_of(left);
        const bool power = unit == "W" || (unit.empty() && c == 0);
        const bool memory = !power && (smi_has(smi_memory_scale(unit, kSmiNone)) || unit.empty());
        if (power) {
          value(left, "W", s.power_w);
          value(right, "W", s.power_limit_w);
        } else if (memory) {
          value(left, "MiB", s.mem_used_mib);
          value(right, "MiB", s.mem_total_mib);
          if (memory_cell == cells.size()) memory_cell = c;
        }
        paired[i - 1] = paired[i] = paired[i + 1] = true;
      }
      for (std::size_t i = 0; i < words.size(); ++i)
        if (!paired[i] && !smi_has(s.temp_c) && unit_of(words[i]) == "C") value(words[i], "C", s.temp_c);
    }
    // GPU-Util: the first word of the cell after Memory-Usage (the last cell when there is none).
    const std::size_t util_cell = memory_cell + 1 < cells.size() ? memory_cell + 1 : cells.size() - 1;
    if (!cells.empty() && util_cell < cells.size()) {
      const std::vector<std::string_view> words = smi_words(cells[util_cell]);
      if (!words.empty()) value(words.front(), "%", s.util_pct);
    }
    if (read == 0) {
      skip(fmt::format("GPU {}'s readings line holds no value", pending_.index));
      return;
    }
    SmiGpu* g = gpu(pending_.index);
    if (g == nullptr) return;
    if (g->name.empty()) g->name = pending_.name;
    if (g->bus_id.empty()) g->bus_id = pending_.bus_id;
    add_sample(*g, s);
  }
};

// ---- sniffing and the source loop -------------------------------------------------------------------

bool smi_csv_header_with(std::string_view line, SmiColumnMapper mapper, SmiField key_field, std::size_t min_known) {
  std::size_t known = 0;
  bool key = false;
  for (std::string_view cell : smi_split(line, ',')) {
    const std::string_view name = trim(cell.substr(0, cell.find(" [")));
    const SmiColumn c = mapper(name, "");
    known += c.field != SmiField::kIgnore;
    key = key || c.field == key_field;
  }
  return key && known >= min_known;
}

// The format the first line that says something names; kUnknown when it names none.
SmiFormat smi_sniff_first_line(std::string_view head) {
  std::size_t lines = 0;
  while (!head.empty() && lines < 200) {
    const std::size_t nl = head.find('\n');
    const std::string_view line = trim(head.substr(0, nl));
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    ++lines;
    if (line.empty()) continue;
    if (line.starts_with("# HELP DCGM_") || line.starts_with("# TYPE DCGM_") || line.starts_with("DCGM_FI_"))
      return SmiFormat::kPrometheus;
    if (line.front() == '#') {
      const std::vector<std::string_view> words = smi_words(line.substr(1));
      if (!words.empty() && ascii_lower(words.front()) == "entity") return SmiFormat::kDcgmiDmon;
      bool gpu = false, pid = false, sm = false;
      for (std::string_view w : words) {
        const std::string lw = ascii_lower(w);
        gpu = gpu || lw == "gpu";
        pid = pid || lw == "pid";
        sm = sm || lw == "sm" || lw == "pwr" || lw == "mem" || lw == "pclk" || lw == "fb";
      }
      if (gpu && pid) return SmiFormat::kPmon;
      if (gpu && sm) return SmiFormat::kDmon;
      continue;
    }
    if (line.find(',') != std::string_view::npos) {
      if (smi_csv_header_with(line, query_csv_column, SmiField::kUtil, 1) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kTime, 2) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kKey, 2) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kUuid, 2) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kBusId, 2) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kMemUsed, 1) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kPower, 1))
        return SmiFormat::kQueryCsv;
      if (smi_csv_header_with(line, rocm_csv_column, SmiField::kKey, 2)) return SmiFormat::kRocmSmiCsv;
      if (smi_csv_header_with(line, amd_csv_column, SmiField::kKey, 2)) return SmiFormat::kAmdSmiCsv;
      // A headerless nvidia-smi CSV starts with its timestamp (or an index) and holds numbers.
      const std::vector<std::string_view> cells = smi_split(line, ',');
      if (cells.size() >= 2 && parse_smi_time(cells.front()) != kSmiNoTime) return SmiFormat::kQueryCsv;
    }
    return SmiFormat::kUnknown;  // the first line that says something says what the log is
  }
  return SmiFormat::kUnknown;
}

}  // namespace

SmiFormat sniff_smi_format(std::string_view head) {
  const SmiFormat by_first_line = smi_sniff_first_line(head);
  if (by_first_line != SmiFormat::kUnknown) return by_first_line;
  // A Slurm log holds the job's own output before (and between) nvidia-smi's tables: the table's
  // version line anywhere in the head says what the log is.
  return smi_head_has_table(head) ? SmiFormat::kSmiTable : SmiFormat::kUnknown;
}

namespace {

std::unique_ptr<SmiReader> make_smi_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options) {
  switch (src.format) {
    case SmiFormat::kQueryCsv: return std::make_unique<SmiCsvReader>(log, src, options, query_csv_column);
    case SmiFormat::kRocmSmiCsv: return std::make_unique<SmiCsvReader>(log, src, options, rocm_csv_column);
    case SmiFormat::kAmdSmiCsv: return std::make_unique<SmiCsvReader>(log, src, options, amd_csv_column);
    case SmiFormat::kDmon: return std::make_unique<SmiDmonReader>(log, src, options);
    case SmiFormat::kPmon: return std::make_unique<SmiPmonReader>(log, src, options);
    case SmiFormat::kDcgmiDmon: return std::make_unique<SmiDcgmiReader>(log, src, options);
    case SmiFormat::kPrometheus: return std::make_unique<SmiPrometheusReader>(log, src, options);
    case SmiFormat::kSmiTable: return std::make_unique<SmiTableReader>(log, src, options);
    case SmiFormat::kUnknown: break;
  }
  return nullptr;
}

// Why a log is refused, and how to write one ferret reads: the first line that says something,
// which names no layout, and no nvidia-smi table in the head either.
std::string smi_refusal(const std::string& name, std::string_view head) {
  std::size_t number = 1;
  std::string_view first;
  while (!head.empty()) {
    const std::size_t nl = head.find('\n');
    first = trim(head.substr(0, nl));
    if (!first.empty() || nl == std::string_view::npos) break;
    head.remove_prefix(nl + 1);
    ++number;
  }
  return fmt::format(
      "{}: not a GPU utilisation log ferret reads: line {} (`{}`) starts none of the layouts it knows (nvidia-smi's "
      "table or --query-gpu CSV, nvidia-smi dmon/pmon, dcgmi dmon, dcgm-exporter metrics, rocm-smi --csv, amd-smi "
      "metric --csv), and no nvidia-smi table (`| NVIDIA-SMI ... Driver Version ...`) is in its first 64 KiB. To log "
      "the GPUs beside a job: {} > gpus.csv (or nvidia-smi -l 5 for the default table)",
      terminal_safe(name), number, terminal_safe(first.substr(0, 80)), kSmiLogCommand);
}

// The first line of a headerless query CSV, for the refusal's message.
bool smi_headerless(std::string_view head) {
  const std::size_t nl = head.find('\n');
  const std::string_view first = trim(head.substr(0, nl));
  return !smi_csv_header_with(first, query_csv_column, SmiField::kUtil, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kTime, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kKey, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kMemUsed, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kPower, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kUuid, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kBusId, 1);
}

}  // namespace

void parse_smi_source(ByteSource& source, const std::string& name, const std::string& compression, SmiLog& log,
                      const SmiReadOptions& options) {
  constexpr std::size_t kChunk = 1 << 20;
  constexpr std::size_t kSniffBytes = 64 * 1024;
  std::unique_ptr<char[]> buffer(new char[kChunk]);
  std::string head;  // the first bytes, kept until the format is known
  std::uint64_t bytes = 0;
  std::string damage;
  std::unique_ptr<SmiReader> reader;
  std::string carry;
  bool carry_cut = false;
  std::uint64_t lines = 0;
  std::uint64_t samples_seen = 0, progress_at_byte = 0;

  auto feed = [&](std::string_view line, bool cut) {
    ++lines;
    reader->line_number = lines;
    if (cut || line.size() > kSmiMaxLineBytes) {
      ++reader->source().long_lines;
      ++reader->source().skipped_lines;
      if (reader->source().skipped_examples.size() < kSmiSkippedExamples)
        reader->source().skipped_examples.push_back(
            fmt::format("line {}: longer than {} KiB", lines, kSmiMaxLineBytes / 1024));
      return;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    reader->line(line);
  };
  // Splits `chunk` into lines for the reader, carrying a line split across chunks.
  auto split = [&](std::string_view chunk) {
    while (!chunk.empty() && !reader->stop) {
      const void* nl = std::memchr(chunk.data(), '\n', chunk.size());
      const std::size_t len = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - chunk.data()) : chunk.size();
      const std::string_view piece = chunk.substr(0, len);
      if (nl == nullptr) {
        if (carry.size() + piece.size() <= kSmiMaxLineBytes)
          carry.append(piece);
        else
          carry_cut = true;
        break;
      }
      if (carry.empty() && !carry_cut) {
        feed(piece, false);
      } else {
        if (carry.size() + piece.size() <= kSmiMaxLineBytes)
          carry.append(piece);
        else
          carry_cut = true;
        feed(carry, carry_cut);
        carry.clear();
        carry_cut = false;
      }
      chunk.remove_prefix(len + 1);
    }
  };
  auto start = [&]() {
    SmiSource src;
    src.name = name;
    src.compression = compression;
    src.format = sniff_smi_format(head);
    // With --columns, a CSV whose first line is data is a headerless nvidia-smi CSV.
    if (src.format == SmiFormat::kUnknown && !options.columns.empty() &&
        head.substr(0, head.find('\n')).find(',') != std::string::npos)
      src.format = SmiFormat::kQueryCsv;
    if (src.format == SmiFormat::kUnknown) {
      if (head.find_first_not_of(" \t\r\n") == std::string::npos)
        throw InputError(terminal_safe(name) + ": the log is empty");
      throw InputError(smi_refusal(name, head));
    }
    if (src.format == SmiFormat::kQueryCsv && options.columns.empty() && smi_headerless(head))
      throw InputError(terminal_safe(name) +
                       ": an nvidia-smi CSV without a header (--format=csv,noheader): its columns cannot be known; "
                       "pass the --query-gpu list with --columns (e.g. --columns timestamp,index,utilization.gpu)");
    reader = make_smi_reader(log, src, options);
    split(head);
    head.clear();
  };

  while (reader == nullptr || !reader->stop) {
    std::size_t n = 0;
    try {
      n = source.read(buffer.get(), kChunk);
    } catch (const InputError& e) {
      if (bytes == 0) throw;
      damage = e.what();
      break;
    }
    if (n == 0) break;
    bytes += n;
    if (reader == nullptr) {
      head.append(buffer.get(), n);
      if (head.size() >= kSniffBytes) start();
      continue;
    }
    split(std::string_view(buffer.get(), n));
    // Endless input without samples (/dev/zero after a header, a stream of junk) stops.
    if (reader->source().samples != samples_seen) {
      samples_seen = reader->source().samples;
      progress_at_byte = bytes;
    } else if (bytes - progress_at_byte > kSmiMaxBytesWithoutSample) {
      reader->source().stopped =
          fmt::format("reading stopped at byte {}: {} bytes without a sample; what came before is kept", bytes,
                      bytes - progress_at_byte);
      break;
    }
  }
  if (reader == nullptr) start();
  if (!reader->stop && (!carry.empty() || carry_cut)) feed(carry, carry_cut);
  reader->finish();
  SmiSource& src = reader->source();
  src.bytes = bytes;
  src.lines = lines;
  src.damage = damage.empty() ? source.damage() : damage;
}

void parse_smi_file(const std::string& path, SmiLog& log, const SmiReadOptions& options) {
  OpenedSource opened = open_byte_source(path);
  parse_smi_source(*opened.source, path, opened.compression, log, options);
}

SmiLog parse_smi_text(std::string_view text, const std::string& name, const SmiReadOptions& options) {
  SmiLog log;
  std::unique_ptr<ByteSource> source = make_memory_source(std::string(text));
  parse_smi_source(*source, name, "none", log, options);
  return log;
}

}  // namespace ferret
