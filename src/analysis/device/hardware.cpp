#include "analysis/device/hardware.h"
#include "base/text.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "model/gpu_specs.h"

namespace ferret {

const char* copy_direction_name(CopyDirection d) {
  switch (d) {
    case CopyDirection::kHtoD: return "HtoD";
    case CopyDirection::kDtoH: return "DtoH";
    case CopyDirection::kDtoD: return "DtoD";
    case CopyDirection::kPtoP: return "PtoP";
    case CopyDirection::kHtoH: return "HtoH";
    case CopyDirection::kUnknown: return "unknown";
  }
  return "unknown";
}

const char* host_memory_name(HostMemory m) {
  switch (m) {
    case HostMemory::kNotHost: return "device";
    case HostMemory::kPageable: return "pageable";
    case HostMemory::kPinned: return "pinned";
    case HostMemory::kManaged: return "managed";
    case HostMemory::kUnknown: return "unknown";
  }
  return "unknown";
}

namespace {

HostMemory host_memory_of(std::string_view word) {
  if (word == "Pageable") return HostMemory::kPageable;
  if (word == "Pinned") return HostMemory::kPinned;
  if (word == "Managed") return HostMemory::kManaged;
  return HostMemory::kUnknown;  // "Host" (ROCm), or anything new
}

}  // namespace

CopyKind parse_copy_name(std::string_view name) {
  CopyKind k;
  constexpr std::string_view kPrefix = "Memcpy ";
  if (name.substr(0, kPrefix.size()) != kPrefix) return k;
  name.remove_prefix(kPrefix.size());
  const std::string_view dir = name.substr(0, 4);
  if (dir == "HtoD")
    k.direction = CopyDirection::kHtoD;
  else if (dir == "DtoH")
    k.direction = CopyDirection::kDtoH;
  else if (dir == "DtoD")
    k.direction = CopyDirection::kDtoD;
  else if (dir == "PtoP")
    k.direction = CopyDirection::kPtoP;
  else if (dir == "HtoH")
    k.direction = CopyDirection::kHtoH;
  if (k.direction == CopyDirection::kDtoD || k.direction == CopyDirection::kPtoP) {
    k.host_memory = HostMemory::kNotHost;
    return k;
  }
  // "(Src -> Dst)": the host side is the source of HtoD and the destination of DtoH.
  const std::size_t open = name.find('('), arrow = name.find("->"), close = name.find(')');
  if (open == std::string_view::npos || arrow == std::string_view::npos || close == std::string_view::npos ||
      !(open < arrow && arrow < close))
    return k;
  const std::string_view src = trim(name.substr(open + 1, arrow - open - 1));
  const std::string_view dst = trim(name.substr(arrow + 2, close - arrow - 2));
  if (k.direction == CopyDirection::kHtoD)
    k.host_memory = host_memory_of(src);
  else if (k.direction == CopyDirection::kDtoH)
    k.host_memory = host_memory_of(dst);
  else if (k.direction == CopyDirection::kHtoH) {
    // Host to host: pageable if either side is.
    const HostMemory a = host_memory_of(src), b = host_memory_of(dst);
    k.host_memory = (a == HostMemory::kPageable || b == HostMemory::kPageable) ? HostMemory::kPageable : a;
  }
  return k;
}

namespace {

DeviceLinks links_of(const DeviceIndex& properties, std::int32_t device) {
  DeviceLinks d;
  d.device = device;
  const DeviceProperties* props = properties.find(device);
  if (props == nullptr) {
    d.match_note = "no deviceProperties for this device: ceilings unknown";
    return d;
  }
  d.name = props->name;
  const GpuMatch match = match_gpu(*props);
  d.match_note = match.note;
  if (match.spec == nullptr) return d;
  const GpuSpec& s = *match.spec;
  d.gpu_model = std::string(s.model);
  d.host_link = std::string(s.host_link);
  if (s.host_link_gbps) d.host_link_gbps = *s.host_link_gbps;
  d.scale_up_link = std::string(s.scale_up_link);
  if (s.scale_up_gbps) d.scale_up_gbps = *s.scale_up_gbps;
  if (s.hbm_tbps) d.hbm_gbps = *s.hbm_tbps * 1000.0;
  return d;
}

// A row per device (and copy kind, or collective): found through a hash of its key, not a scan of
// the rows, which costs devices x events when a trace spreads its events over many devices.
std::uint64_t row_key(std::int32_t device, unsigned a = 0, unsigned b = 0) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(device)) << 16) | ((a & 0xffu) << 8) | (b & 0xffu);
}

struct RowIndex {
  std::unordered_map<std::uint64_t, std::size_t> rows;
  // The row for `key` in `table`, appended by `make` when new.
  template <class T, class Make>
  T& slot(std::vector<T>& table, std::uint64_t key, Make make) {
    auto [it, inserted] = rows.try_emplace(key, table.size());
    if (inserted) table.push_back(make());
    return table[it->second];
  }
};

struct Slots {
  explicit Slots(const TraceModel& model) : properties(model.info) {}
  DeviceIndex properties;
  RowIndex links, copies, memsets;

  DeviceLinks& links_slot(std::vector<DeviceLinks>& devices, std::int32_t device) {
    return links.slot(devices, row_key(device), [&] { return links_of(properties, device); });
  }
  CopyStats& copy_slot(std::vector<CopyStats>& rows, std::int32_t device, CopyKind kind) {
    const std::uint64_t key =
        row_key(device, static_cast<unsigned>(kind.direction), static_cast<unsigned>(kind.host_memory));
    return copies.slot(rows, key, [&] {
      CopyStats r;
      r.device = device;
      r.direction = kind.direction;
      r.host_memory = kind.host_memory;
      return r;
    });
  }
  MemsetStats& memset_slot(std::vector<MemsetStats>& rows, std::int32_t device) {
    return memsets.slot(rows, row_key(device), [&] { return MemsetStats{device, 0, 0, 0}; });
  }
};

// The link a copy runs on. A DtoD copy reads and writes HBM; CUPTI's own "memory bandwidth"
// divides bytes once by duration, and so does this, so HBM's peak is the comparable ceiling.
void set_peak(CopyStats& c, const DeviceLinks& links) {
  switch (c.direction) {
    case CopyDirection::kHtoD:
    case CopyDirection::kDtoH:
      c.link = links.host_link;
      c.peak_gbps = links.host_link_gbps;
      break;
    case CopyDirection::kDtoD:
      c.link = links.hbm_gbps > 0 ? "HBM" : "";
      c.peak_gbps = links.hbm_gbps;
      break;
    case CopyDirection::kPtoP:
      c.link = links.scale_up_link;
      c.peak_gbps = links.scale_up_gbps;
      break;
    default: break;
  }
}

}  // namespace

HardwareResult analyze_hardware(const TraceModel& model, const AnalysisContext& ctx) {
  HardwareResult result;
  result.window_ns = ctx.window_ns();
  const std::int64_t ws = ctx.window_start_ns, we = ctx.window_end_ns;

  // Copy kinds by interned name: parse each distinct name once.
  Slots slots(model);
  std::vector<CopyKind> kind_of_name;
  std::vector<std::uint8_t> parsed(model.strings.size(), 0);
  kind_of_name.resize(model.strings.size());
  // Side-table rows are in event order: a cursor walks them with the events (no searches).
  std::size_t copy_row = 0;
  const std::size_t copy_rows = model.copy_args.size();
  for (std::size_t i = 0; i < model.size(); ++i) {
    const EventKind k = model.kind[i];
    if (k != EventKind::kMemcpy && k != EventKind::kMemset) continue;
    const auto e = static_cast<EventIndex>(i);
    while (copy_row < copy_rows && model.copy_args[copy_row].event < e) ++copy_row;
    const CopyArgs* args =
        (copy_row < copy_rows && model.copy_args[copy_row].event == e) ? &model.copy_args[copy_row] : nullptr;
    const std::int32_t device = model.pid[e];
    if (!ctx.counts_gpu_event(model, e)) continue;
    const std::int64_t ts = model.ts_ns[e];
    if (ts < ws || ts >= we) continue;
    const std::int64_t dur = model.dur_ns[e];
    const std::int64_t bytes = (args != nullptr && args->bytes >= 0) ? args->bytes : -1;
    slots.links_slot(result.devices, device);
    if (k == EventKind::kMemset) {
      MemsetStats& m = slots.memset_slot(result.memsets, device);
      ++m.count;
      if (bytes > 0) m.bytes += bytes;
      m.time_ns += dur;
      continue;
    }
    const StrId name = model.name[e];
    if (!parsed[name]) {
      kind_of_name[name] = parse_copy_name(model.strings.view(name));
      parsed[name] = 1;
    }
    const CopyKind kind = kind_of_name[name];
    CopyStats& c = slots.copy_slot(result.copies, device, kind);
    ++c.count;
    c.time_ns += dur;
    if (bytes < 0) {
      ++c.count_without_bytes;
    } else {
      c.bytes += bytes;
      c.sized_time_ns += dur;
      if (bytes >= kLargeCopyBytes) {
        ++c.large_count;
        c.large_bytes += bytes;
        c.large_time_ns += dur;
      }
    }
    const bool host = kind.direction == CopyDirection::kHtoD || kind.direction == CopyDirection::kDtoH;
    if (host) {
      result.host_copy_time_ns += dur;
      if (bytes > 0) result.host_copy_bytes += bytes;
      if (kind.host_memory == HostMemory::kPageable) {
        ++result.pageable_count;
        result.pageable_time_ns += dur;
        if (bytes > 0) result.pageable_bytes += bytes;
      } else if (kind.host_memory == HostMemory::kPinned && bytes > 0) {
        result.pinned_bytes += bytes;
      }
    }
  }
  for (CopyStats& c : result.copies) {
    if (c.sized_time_ns > 0) c.achieved_gbps = static_cast<double>(c.bytes) / static_cast<double>(c.sized_time_ns);
    if (c.large_time_ns > 0) c.large_gbps = static_cast<double>(c.large_bytes) / static_cast<double>(c.large_time_ns);
    set_peak(c, slots.links_slot(result.devices, c.device));
    if (c.peak_gbps > 0 && c.large_gbps >= 0) c.large_efficiency = c.large_gbps / c.peak_gbps;
  }
  std::sort(result.copies.begin(), result.copies.end(), [](const CopyStats& a, const CopyStats& b) {
    return std::tie(a.device, a.direction, a.host_memory) < std::tie(b.device, b.direction, b.host_memory);
  });
  std::sort(result.memsets.begin(), result.memsets.end(),
            [](const MemsetStats& a, const MemsetStats& b) { return a.device < b.device; });

  // NCCL bus bandwidth against the scale-up link, per device and collective.
  std::vector<double> weighted, time;  // per result.nccl row: sum busbw x duration, sum duration
  std::unordered_map<std::uint64_t, std::size_t> nccl_row;
  for (const CollectiveCall& call : collect_collectives(model, ctx)) {
    if (call.busbw_gbps < 0) continue;
    const auto [found, inserted] =
        nccl_row.try_emplace(row_key(call.device, static_cast<unsigned>(call.kind)), result.nccl.size());
    const std::size_t row = found->second;
    if (inserted) {
      NcclLinkUse u;
      u.device = call.device;
      u.kind = call.kind;
      u.group_size = call.group_size;
      const DeviceLinks& links = slots.links_slot(result.devices, call.device);
      u.link = links.scale_up_link;
      u.link_gbps = links.scale_up_gbps;
      result.nccl.push_back(u);
      weighted.push_back(0);
      time.push_back(0);
    }
    NcclLinkUse& use = result.nccl[row];
    if (use.group_size != call.group_size) use.group_size = -1;  // mixed groups
    ++use.calls;
    weighted[row] += call.busbw_gbps * static_cast<double>(call.dur_ns);
    time[row] += static_cast<double>(call.dur_ns);
    if (call.bytes >= kLargeMessageBytes && call.busbw_gbps > use.best_large_busbw_gbps) {
      use.best_large_busbw_gbps = call.busbw_gbps;
      use.best_large_bytes = call.bytes;
      use.best_large_protocol = call.protocol;
    }
  }
  for (std::size_t row = 0; row < result.nccl.size(); ++row) {
    NcclLinkUse& u = result.nccl[row];
    if (time[row] > 0) u.busbw_gbps = weighted[row] / time[row];
    if (u.link_gbps > 0 && u.best_large_busbw_gbps >= 0)
      u.best_large_efficiency = u.best_large_busbw_gbps / u.link_gbps;
  }
  std::sort(result.devices.begin(), result.devices.end(),
            [](const DeviceLinks& a, const DeviceLinks& b) { return a.device < b.device; });
  return result;
}

}  // namespace ferret
