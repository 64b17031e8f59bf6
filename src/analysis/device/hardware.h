// Hardware: how close copies and collectives come to the links they run on.
//
// Copies (memcpy activities) are grouped by direction and host-memory kind as their names say
// ("Memcpy HtoD (Pageable -> Device)", old "Memcpy HtoD"), with bytes, time and achieved
// bandwidth against the link's peak from the GPU table (model/gpu_specs): the host link (PCIe)
// for HtoD / DtoH, HBM for DtoD, the scale-up link (NVLink) for PtoP. NCCL bus bandwidth is
// compared with the scale-up link. Small copies are latency-bound, so efficiency is judged on
// copies of at least kLargeCopyBytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/timeline/communication.h"

namespace ferret {

enum class CopyDirection : std::uint8_t { kHtoD, kDtoH, kDtoD, kPtoP, kHtoH, kUnknown };
enum class HostMemory : std::uint8_t {
  kNotHost,  // device-to-device, peer-to-peer
  kPageable,
  kPinned,
  kManaged,
  kUnknown,  // old names ("Memcpy HtoD") and ROCm's "(Host -> Device)" do not say
};
const char* copy_direction_name(CopyDirection d);  // "HtoD", ...
const char* host_memory_name(HostMemory m);        // "pageable", "pinned", ...

struct CopyKind {
  CopyDirection direction = CopyDirection::kUnknown;
  HostMemory host_memory = HostMemory::kUnknown;
};
// "Memcpy HtoD (Pageable -> Device)" -> {HtoD, pageable}; "Memcpy DtoH (Device -> Pinned)" ->
// {DtoH, pinned}; "Memcpy PtoP (Device -> Device)" -> {PtoP, not host}; "Memcpy HtoD" -> {HtoD, unknown}.
CopyKind parse_copy_name(std::string_view name);

// At 32 GB/s a 1 MiB copy takes ~33 us against a few us of fixed cost, so from this size up the
// achieved bandwidth measures the link rather than the latency.
inline constexpr std::int64_t kLargeCopyBytes = 1ll << 20;

struct CopyStats {
  std::int32_t device = -1;
  CopyDirection direction = CopyDirection::kUnknown;
  HostMemory host_memory = HostMemory::kUnknown;
  std::uint64_t count = 0;
  std::uint64_t count_without_bytes = 0;  // ROCm traces often omit "bytes"
  std::int64_t bytes = 0;
  std::int64_t time_ns = 0;        // sum of durations (all copies)
  std::int64_t sized_time_ns = 0;  // sum of durations of copies with bytes
  double achieved_gbps = -1;       // bytes / sized time
  std::uint64_t large_count = 0;   // copies >= kLargeCopyBytes
  std::int64_t large_bytes = 0;
  std::int64_t large_time_ns = 0;
  double large_gbps = -1;
  std::string link;              // "PCIe4 x16", "HBM", "NVLink3"; empty when unknown
  double peak_gbps = -1;         // per direction; -1 unknown
  double large_efficiency = -1;  // large_gbps / peak
};

struct MemsetStats {
  std::int32_t device = -1;
  std::uint64_t count = 0;
  std::int64_t bytes = 0;
  std::int64_t time_ns = 0;
};

struct DeviceLinks {
  std::int32_t device = -1;
  std::string name;       // deviceProperties name
  std::string gpu_model;  // matched row of the GPU table, empty when unknown
  std::string match_note;
  std::string host_link;
  double host_link_gbps = -1;
  std::string scale_up_link;
  double scale_up_gbps = -1;
  double hbm_gbps = -1;
};

// NCCL bandwidth of one collective kind on one device against the scale-up link.
struct NcclLinkUse {
  std::int32_t device = -1;
  Collective kind = Collective::kUnknown;
  std::int32_t group_size = -1;
  std::uint64_t calls = 0;            // calls with a known bus bandwidth
  double busbw_gbps = -1;             // time-weighted over those calls
  double best_large_busbw_gbps = -1;  // fastest call of >= kLargeMessageBytes
  std::int64_t best_large_bytes = -1;
  std::string best_large_protocol;  // NCCL protocol of that call ("LL", "LL128", "SIMPLE", "")
  std::string link;
  double link_gbps = -1;
  double best_large_efficiency = -1;  // best_large_busbw / link peak
};

struct HardwareResult {
  std::int64_t window_ns = 0;
  std::vector<DeviceLinks> devices;  // every device with copies, memsets or collectives
  std::vector<CopyStats> copies;     // by device, direction, host memory
  std::vector<MemsetStats> memsets;
  std::int64_t host_copy_bytes = 0;  // HtoD + DtoH
  std::int64_t pageable_bytes = 0;   // HtoD + DtoH from/to pageable memory
  std::int64_t pinned_bytes = 0;
  std::int64_t pageable_time_ns = 0;
  std::uint64_t pageable_count = 0;
  std::int64_t host_copy_time_ns = 0;
  std::vector<NcclLinkUse> nccl;
};

HardwareResult analyze_hardware(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
