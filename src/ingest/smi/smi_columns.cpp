// The column model of every layout: which reading a column holds, at what scale.
#include "ingest/smi/smi_reader.h"

#include "base/text.h"

namespace ferret {

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

}  // namespace ferret
