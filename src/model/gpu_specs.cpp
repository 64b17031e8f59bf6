#include "model/gpu_specs.h"

#include <array>
#include <cmath>

#include <fmt/format.h>

namespace ferret {

namespace {

constexpr Figure kUnknown = std::nullopt;

// Vendor datasheets (NVIDIA, AMD product briefs). Dense tensor figures; FP16 and BF16 share the datasheet's
// FP16/BF16 column except on V100, which has no BF16. Link figures are per direction.
// Blank or "—" cells are kUnknown. Rows that share a name pattern (A100 SXM 40/80 GB) are told
// apart by memory size, so both must carry it.
constexpr std::array kTable = {
    // V100: the DGX Station part ("V100-DGXS") is the SXM2 module (NVLink2, same datasheet
    // figures); the PCIe V100 has other clocks and is not in this table, so it stays unmatched.
    GpuSpec{"V100 SXM2", "NVIDIA", "V100-SXM2|V100 SXM2|V100-DGXS", "", "", 7, 0, 80, kUnknown, 0.90, 15.7, kUnknown,
            125, kUnknown, kUnknown, "PCIe3 x16", 16, "NVLink2", 150},
    GpuSpec{"A100 PCIe 40GB", "NVIDIA", "A100", "PCIE", "", 8, 0, 108, 40, 1.555, 19.5, 156, 312, 312, kUnknown,
            "PCIe4 x16", 32, "NVLink bridge", kUnknown},
    GpuSpec{"A100 PCIe 80GB", "NVIDIA", "A100", "PCIE", "", 8, 0, 108, 80, 1.935, 19.5, 156, 312, 312, kUnknown,
            "PCIe4 x16", 32, "NVLink bridge", kUnknown},
    // "NVIDIA A100-PG509-200" (seen in real traces) is the HGX board's SXM4 module.
    GpuSpec{"A100 SXM 40GB", "NVIDIA", "A100", "", "PCIE", 8, 0, 108, 40, 1.555, 19.5, 156, 312, 312, kUnknown,
            "PCIe4 x16", 32, "NVLink3", 300},
    GpuSpec{"A100 SXM 80GB", "NVIDIA", "A100", "", "PCIE", 8, 0, 108, 80, 2.039, 19.5, 156, 312, 312, kUnknown,
            "PCIe4 x16", 32, "NVLink3", 300},
    GpuSpec{"H100 PCIe", "NVIDIA", "H100", "PCIE", "", 9, 0, 114, 80, 2.0, 51, 378, 756.5, 756.5, 1513, "PCIe5 x16", 64,
            "NVLink bridge", 300},
    GpuSpec{"H100 NVL", "NVIDIA", "H100", "NVL", "", 9, 0, -1, 94, 3.9, kUnknown, kUnknown, 835, 835, kUnknown, "",
            kUnknown, "", kUnknown},
    // "NVIDIA H100 80GB HBM3" is the SXM5 part (the PCIe and NVL parts say so in their names).
    GpuSpec{"H100 SXM5", "NVIDIA", "H100", "", "PCIE|NVL", 9, 0, 132, 80, 3.35, 67, 494.5, 989.5, 989.5, 1979,
            "PCIe5 x16", 64, "NVLink4", 450},
    GpuSpec{"H200 SXM", "NVIDIA", "H200", "", "NVL|GH200", 9, 0, 132, 141, 4.8, 67, 494.5, 989.5, 989.5, 1979,
            "PCIe5 x16", 64, "NVLink4", 450},
    // The GH200 superchip's GPU is an H100 (132 SMs, the SXM5 part's compute figures) with 96 GB of
    // HBM3 or 144 GB of HBM3e, joined to its Grace CPU by NVLink-C2C (900 GB/s both ways): the two
    // rows differ by memory, which the trace's properties give.
    GpuSpec{"GH200 96GB", "NVIDIA", "GH200", "", "", 9, 0, 132, 96, 4.0, 67, 494.5, 989.5, 989.5, 1979, "NVLink-C2C",
            450, "NVLink4", 450},
    GpuSpec{"GH200 144GB", "NVIDIA", "GH200", "", "", 9, 0, 132, 144, 4.9, 67, 494.5, 989.5, 989.5, 1979, "NVLink-C2C",
            450, "NVLink4", 450},
    GpuSpec{"GB200", "NVIDIA", "GB200", "", "", 10, 0, -1, 186, 8.0, 80, 1250, 2500, 2500, 5000, "NVLink-C2C", kUnknown,
            "NVLink5", 900},
    GpuSpec{"B200", "NVIDIA", "B200", "", "GB200", 10, 0, 148, 180, 8.0, 80, 1100, 2250, 2250, 4500, "PCIe5 x16", 64,
            "NVLink5", 900},
    // Blackwell Ultra (sm_103). The GB300's GPU is the same die at other clocks and limits, and
    // NVIDIA prints its figures per rack only: it stays unmatched rather than borrow these.
    GpuSpec{"B300", "NVIDIA", "B300", "", "GB300", 10, 3, -1, 288, 8.0, 75, 1125, 2250, 2250, 4500, "PCIe", kUnknown,
            "NVLink5", 900},
    GpuSpec{"L40S", "NVIDIA", "L40S", "", "", 8, 9, 142, 48, 0.864, 91.6, 183, 362, 362, 733, "PCIe4 x16", 32, "none",
            kUnknown},
    // "L4" is a substring of "L40S": the L40 family is excluded by name, and CC 8.9 confirms.
    GpuSpec{"L4", "NVIDIA", "L4", "", "L40", 8, 9, -1, 24, 0.30, 30.3, 60, 121, 121, 242.5, "PCIe4 x16", 32, "none",
            kUnknown},
    // "A10" is a substring of "A100"; the A10G (AWS) is a different SKU with other figures.
    GpuSpec{"A10", "NVIDIA", "A10", "", "A100|A10G", 8, 6, 72, 24, 0.60, 31.2, 62.5, 125, 125, kUnknown, "PCIe4 x16",
            32, "none", kUnknown},
    // ROCm names both parts "AMD Instinct MI250X/MI250": the CU count (110 per GCD) confirms
    // MI250X, 104 the MI250.
    GpuSpec{"MI250X (per GCD)", "AMD", "MI250X", "", "", 9, 0, 110, 64, 1.6, 23.9, kUnknown, 191.5, 191.5, kUnknown,
            "PCIe4", kUnknown, "Infinity Fabric GCD-GCD", 200},
    // An MI250 GCD and an MI210 are the same CDNA2 die at the same clock (104 CUs, 64 GB of HBM2e
    // at 1.6 TB/s): one row, whose figures are either's.
    GpuSpec{"MI210 / MI250 (per GCD)", "AMD", "MI210|MI250", "", "", 9, 0, 104, 64, 1.6, 22.6, kUnknown, 181.0, 181.0,
            kUnknown, "PCIe4 x16", 32, "Infinity Fabric", kUnknown},
    GpuSpec{"MI300X", "AMD", "MI300X", "", "", 9, 4, 304, 192, 5.3, 163.4, 653.7, 1307.4, 1307.4, 2614.9, "PCIe5 x16",
            64, "Infinity Fabric (7 links)", 448},
    GpuSpec{"MI325X", "AMD", "MI325X", "", "", 9, 4, 304, 256, 6.0, 163.4, 653.7, 1307.4, 1307.4, 2614.9, "PCIe5",
            kUnknown, "Infinity Fabric (7 links)", 448},
    // CDNA 4 (gfx950): 256 CUs (eight XCDs of 32), each doing twice a CDNA 3 CU's matrix work
    // per clock; the MI355X runs them at up to 2.4 GHz, the MI350X at 2.2 GHz. No TF32 on CDNA 4.
    GpuSpec{"MI355X", "AMD", "MI355X", "", "", 9, 5, 256, 288, 8.0, 157.3, kUnknown, 2516.6, 2516.6, 5033.2,
            "PCIe5 x16", 64, "Infinity Fabric", kUnknown},
    GpuSpec{"MI350X", "AMD", "MI350X", "", "", 9, 5, 256, 288, 8.0, 144.2, kUnknown, 2306.9, 2306.9, 4613.7,
            "PCIe5 x16", 64, "Infinity Fabric", kUnknown},
    // The MI300A APU: the MI300X's CDNA 3 compute dies at the same 2.1 GHz peak, 228 CUs (six
    // XCDs of 38) beside 24 Zen 4 cores, sharing 128 GB of HBM3 with them: no host link to copy
    // over. Its figures are the MI300X's times 228 / 304, as AMD prints them.
    GpuSpec{"MI300A", "AMD", "MI300A", "", "", 9, 4, 228, 128, 5.3, 122.6, 490.3, 980.6, 980.6, 1961.2,
            "on package (unified HBM)", kUnknown, "Infinity Fabric", kUnknown},
};

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool contains_nocase(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return true;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    std::size_t k = 0;
    while (k < needle.size() && lower(hay[i + k]) == lower(needle[k])) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

// Calls f on each '|'-separated alternative; stops when f returns true.
template <class F>
bool any_alternative(std::string_view patterns, F f) {
  while (!patterns.empty()) {
    const std::size_t bar = patterns.find('|');
    if (f(patterns.substr(0, bar))) return true;
    if (bar == std::string_view::npos) break;
    patterns.remove_prefix(bar + 1);
  }
  return false;
}

bool name_matches(const GpuSpec& s, std::string_view name) {
  if (!any_alternative(s.any_of, [&](std::string_view p) { return contains_nocase(name, p); })) return false;
  if (any_alternative(s.all_of, [&](std::string_view p) { return !contains_nocase(name, p); })) return false;
  if (any_alternative(s.none_of, [&](std::string_view p) { return contains_nocase(name, p); })) return false;
  return true;
}

// Relative distance between the trace's memory (bytes) and a row's nominal GB. Datasheets print
// "GB" loosely (MI300X's "192 GB" is 192 GiB; B200's usable 180 GB shows as 191.5e9 bytes), so
// this only ranks rows and gates matches by properties; it never rejects a name match.
double memory_distance(const DeviceProperties& d, const GpuSpec& s) {
  if (d.total_global_mem <= 0 || !s.memory_gb) return INFINITY;
  const double gb = static_cast<double>(d.total_global_mem) / 1e9;
  return std::fabs(gb - *s.memory_gb) / *s.memory_gb;
}

// Compute capability and SM count must agree where both sides know them.
bool is_generic_device_name(std::string_view name) { return name == "AMD Radeon Graphics"; }

bool properties_agree(const DeviceProperties& d, const GpuSpec& s) {
  if (d.compute_major >= 0 && (d.compute_major != s.cc_major || d.compute_minor != s.cc_minor)) return false;
  if (d.num_sms > 0 && s.sms > 0 && d.num_sms != s.sms) return false;
  return true;
}

// A device with an empty name matches by properties only within this memory tolerance:
// wide enough for GB-vs-GiB (7.4%), narrow enough to tell H100 80 GB from H200 141 GB.
constexpr double kPropertyMatchMemoryTolerance = 0.10;

}  // namespace

std::span<const GpuSpec> gpu_spec_table() { return kTable; }

GpuMatch match_gpu(const DeviceProperties& device) {
  GpuMatch out;
  const std::string_view name = device.name;
  // ROCm names parts it does not know "AMD Radeon Graphics" (an MI250 of ROCm 6.2): a name that
  // says nothing, matched by the properties as an empty one.
  if (name.empty() || is_generic_device_name(name)) {
    // No name: accept a row only when CC, SM count and memory all agree and no other row does.
    const GpuSpec* found = nullptr;
    int count = 0;
    for (const GpuSpec& s : kTable) {
      if (device.compute_major < 0 || device.num_sms <= 0 || s.sms <= 0) continue;
      if (!properties_agree(device, s)) continue;
      if (memory_distance(device, s) > kPropertyMatchMemoryTolerance) continue;
      found = &s;
      ++count;
    }
    if (count == 1) {
      out.spec = found;
      out.by_properties = true;
      out.note = fmt::format("{} device name; matched {} by CC {}.{}, {} {} and memory",
                             name.empty() ? "empty" : "generic", found->model, device.compute_major,
                             device.compute_minor, device.num_sms, found->vendor == "AMD" ? "CUs" : "SMs");
    } else {
      out.note = fmt::format("{} device name and no unique match by properties: ceilings unknown",
                             name.empty() ? "empty" : "generic");
    }
    return out;
  }
  const GpuSpec* best = nullptr;
  double best_distance = INFINITY;
  int candidates = 0, rejected = 0;
  const GpuSpec* first_rejected = nullptr;
  for (const GpuSpec& s : kTable) {
    if (!name_matches(s, name)) continue;
    if (!properties_agree(device, s)) {
      if (rejected++ == 0) first_rejected = &s;
      continue;
    }
    ++candidates;
    const double distance = memory_distance(device, s);
    if (best == nullptr || distance < best_distance) {
      best = &s;
      best_distance = distance;
    }
  }
  if (best != nullptr && candidates > 1 && !std::isfinite(best_distance)) {
    out.note = fmt::format("\"{}\" fits {} rows that differ by memory size, and the trace gives none: ceilings unknown",
                           name, candidates);
    return out;
  }
  if (best != nullptr) {
    out.spec = best;
    return out;
  }
  if (first_rejected != nullptr) {
    out.note = fmt::format("\"{}\" looks like {} but CC {}.{} / {} SMs disagree (table: {}.{} / {}): ceilings unknown",
                           name, first_rejected->model, device.compute_major, device.compute_minor, device.num_sms,
                           first_rejected->cc_major, first_rejected->cc_minor, first_rejected->sms);
  } else {
    out.note = fmt::format("\"{}\" is not in the GPU table: ceilings unknown", name);
  }
  return out;
}

namespace {

bool same_model(const DeviceProperties& a, const DeviceProperties& b) {
  return a.name == b.name && a.compute_major == b.compute_major && a.compute_minor == b.compute_minor &&
         a.num_sms == b.num_sms && a.total_global_mem == b.total_global_mem;
}

// The first listed device when every listed device is the same model, else nullptr.
const DeviceProperties* one_model(const TraceInfo& info) {
  if (info.devices.empty()) return nullptr;
  for (const DeviceProperties& d : info.devices)
    if (!same_model(d, info.devices.front())) return nullptr;
  return &info.devices.front();
}

}  // namespace

const DeviceProperties* find_device(const TraceInfo& info, int device_id) {
  for (const DeviceProperties& d : info.devices)
    if (d.id == device_id) return &d;
  return one_model(info);
}

DeviceIndex::DeviceIndex(const TraceInfo& info) : one_model_(one_model(info)) {
  by_id_.reserve(info.devices.size());
  for (const DeviceProperties& d : info.devices) by_id_.try_emplace(d.id, &d);
}

const DeviceProperties* DeviceIndex::find(int device_id) const {
  const auto it = by_id_.find(device_id);
  return it != by_id_.end() ? it->second : one_model_;
}

std::string identified_by(const TraceInfo& info, int device_id) {
  const DeviceProperties* p = find_device(info, device_id);
  if (p == nullptr)
    return info.devices.empty() ? "not identified: the trace lists no device properties"
                                : fmt::format(
                                      "not identified: no properties for device {}, and the {} listed are "
                                      "not all one model",
                                      device_id, info.devices.size());
  const std::string whose =
      p->id == device_id
          ? fmt::format("properties of device {}", device_id)
          : fmt::format("properties of device {}, the one model listed, for device {}", p->id, device_id);
  const GpuMatch m = match_gpu(*p);
  if (m.spec == nullptr) return fmt::format("not identified ({}): {}", whose, m.note);
  if (m.by_properties)
    return fmt::format("{} by CC {}.{}, {} {} and memory ({}; {})", m.spec->model, p->compute_major, p->compute_minor,
                       p->num_sms, m.spec->vendor == "AMD" ? "CUs" : "SMs",
                       p->name.empty() ? "an empty name" : fmt::format("the generic name \"{}\"", p->name), whose);
  return fmt::format("{} by name \"{}\" ({})", m.spec->model, p->name, whose);
}

}  // namespace ferret
