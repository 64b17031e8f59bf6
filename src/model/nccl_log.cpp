#include "model/nccl_log.h"

namespace ferret {

const char* nccl_transport_kind_name(NcclTransportKind k) {
  switch (k) {
    case NcclTransportKind::kP2P: return "P2P";
    case NcclTransportKind::kShm: return "SHM";
    case NcclTransportKind::kNet: return "NET";
    case NcclTransportKind::kCollNet: return "COLLNET";
    case NcclTransportKind::kNvls: return "NVLS";
    case NcclTransportKind::kUnknown: break;
  }
  return "unknown";
}

namespace {

std::uint64_t sum_over(const std::vector<NcclSource>& sources, std::uint64_t NcclSource::*count) {
  std::uint64_t n = 0;
  for (const NcclSource& s : sources) n += s.*count;
  return n;
}

}  // namespace

std::uint64_t NcclLog::total_lines() const { return sum_over(sources, &NcclSource::lines); }
std::uint64_t NcclLog::total_nccl_lines() const { return sum_over(sources, &NcclSource::nccl_lines); }
std::uint64_t NcclLog::total_recognised() const { return sum_over(sources, &NcclSource::recognised); }
std::uint64_t NcclLog::total_not_understood() const { return sum_over(sources, &NcclSource::not_understood); }
std::string_view NcclLog::host_name(std::uint32_t host) const {
  return host < hosts.size() ? std::string_view(hosts[host]) : std::string_view();
}

}  // namespace ferret
