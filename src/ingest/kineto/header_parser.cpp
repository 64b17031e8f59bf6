#include "ingest/kineto/header_parser.h"

#include <limits>

#include <fmt/format.h>
#include <simdjson.h>

#include "ingest/kineto/decimal.h"

namespace ferret {

namespace {

namespace dom = simdjson::dom;

std::string scalar_text(dom::element e) {
  switch (e.type()) {
    case dom::element_type::STRING: return std::string(std::string_view(e.get_string()));
    case dom::element_type::INT64: return std::to_string(std::int64_t(e.get_int64()));
    case dom::element_type::UINT64: return std::to_string(std::uint64_t(e.get_uint64()));
    case dom::element_type::DOUBLE: return simdjson::minify(e);
    case dom::element_type::BOOL: return bool(e.get_bool()) ? "true" : "false";
    case dom::element_type::NULL_VALUE: return "null";
    default: return simdjson::minify(e);
  }
}

std::int64_t int_or(dom::element obj, const char* key, std::int64_t fallback) {
  dom::element v;
  if (obj[key].get(v) != simdjson::SUCCESS) return fallback;
  std::int64_t n = 0;
  if (v.is_int64()) return std::int64_t(v.get_int64());
  if (v.is_uint64())
    return std::uint64_t(v.get_uint64()) <= 0x7fffffffffffffffULL ? std::int64_t(v.get_uint64()) : fallback;
  if (v.is_double()) {
    const double d = v.get_double();
    return d > -9.2e18 && d < 9.2e18 ? static_cast<std::int64_t>(d) : fallback;  // beyond: no int64 (UB to cast)
  }
  if (v.is_string() && parse_int64(std::string_view(v.get_string()), n) == DecimalStatus::kOk) return n;
  return fallback;
}

std::string string_or(dom::element obj, const char* key) {
  dom::element v;
  if (obj[key].get(v) != simdjson::SUCCESS) return {};
  return scalar_text(v);
}

void parse_devices(dom::element value, TraceInfo& info) {
  dom::array devices;
  if (value.get_array().get(devices) != simdjson::SUCCESS) return;
  for (dom::element d : devices) {
    if (!d.is_object()) continue;
    DeviceProperties p;
    p.id = static_cast<int>(int_or(d, "id", static_cast<std::int64_t>(info.devices.size())));
    p.name = string_or(d, "name");
    p.total_global_mem = int_or(d, "totalGlobalMem", -1);
    p.compute_major = static_cast<int>(int_or(d, "computeMajor", -1));
    p.compute_minor = static_cast<int>(int_or(d, "computeMinor", -1));
    p.num_sms = static_cast<int>(int_or(d, "numSms", -1));
    p.max_threads_per_sm = static_cast<int>(int_or(d, "maxThreadsPerMultiprocessor", -1));
    p.regs_per_sm = static_cast<int>(int_or(d, "regsPerMultiprocessor", -1));
    p.warp_size = static_cast<int>(int_or(d, "warpSize", -1));
    p.shared_mem_per_sm = int_or(d, "sharedMemPerMultiprocessor", -1);
    info.devices.push_back(std::move(p));
  }
}

// A rank or world size beyond any job (2^24 ranks) or a negative rank is no rank: it is left out
// and said, never cut to an int (2^40 became rank 0, "rank 0 appears twice") or renumbered silently.
constexpr std::int64_t kMaxRanks = std::int64_t{1} << 24;

int rank_field(dom::element value, const char* key, std::int64_t lowest, IngestReport& report) {
  const std::int64_t missing = std::numeric_limits<std::int64_t>::min();
  const std::int64_t v = int_or(value, key, missing);
  if (v == missing) {
    dom::element raw;
    if (value[key].get(raw) == simdjson::SUCCESS && !raw.is_null())
      report.repair(raw.is_number() ? fmt::format("distributedInfo.{} outside {} to 2^24 ignored", key, lowest)
                                    : fmt::format("distributedInfo.{} that is not an integer ignored", key),
                    scalar_text(raw));
    return -1;
  }
  if (v < lowest || v >= kMaxRanks) {
    report.repair(fmt::format("distributedInfo.{} outside {} to 2^24 ignored", key, lowest), std::to_string(v));
    return -1;
  }
  return static_cast<int>(v);
}

void parse_distributed(dom::element value, TraceInfo& info, IngestReport& report) {
  if (!value.is_object()) return;
  DistributedInfo& d = info.distributed;
  d.present = true;
  d.backend = string_or(value, "backend");
  d.rank = rank_field(value, "rank", 0, report);
  d.world_size = rank_field(value, "world_size", 1, report);
  d.nccl_version = string_or(value, "nccl_version");
}

}  // namespace

void parse_header(const std::vector<std::pair<std::string, std::string>>& header, TraceInfo& info,
                  IngestReport& report) {
  dom::parser parser;
  for (const auto& [key, raw] : header) {
    dom::element value;
    if (parser.parse(raw).get(value) != simdjson::SUCCESS) {
      report.skip("unparseable top-level value", "key \"" + key + "\"");
      continue;
    }
    if (key == "deviceProperties" || key == "computeProperties") {
      parse_devices(value, info);
    } else if (key == "distributedInfo") {
      parse_distributed(value, info, report);
    } else if (key == "schemaVersion") {
      info.schema_version = value.is_int64() ? std::int64_t(value.get_int64()) : -1;
    } else if (key == "baseTimeNanoseconds") {
      std::int64_t base = 0;
      const std::string text = scalar_text(value);
      if (parse_int64(text, base) == DecimalStatus::kOk)
        info.base_time_ns = base;
      else
        report.repair("unreadable baseTimeNanoseconds ignored", text);
    } else if (key == "displayTimeUnit") {
      info.display_time_unit = scalar_text(value);
    } else if (key == "traceName") {
      info.trace_name = scalar_text(value);
    } else if (key.size() > 8 && key.compare(key.size() - 8, 8, "_version") == 0) {
      info.versions[key] = scalar_text(value);
    } else if (key == "record_shapes" || key == "profile_memory" || key == "with_stack" || key == "with_flops" ||
               key == "with_modules" || key == "trace_id") {
      info.settings[key] = scalar_text(value);
    } else {
      info.other_keys.push_back(key);
    }
  }
}

}  // namespace ferret
