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

std::uint64_t NcclLog::total_lines() const {
  std::uint64_t n = 0;
  for (const NcclSource& s : sources) n += s.lines;
  return n;
}
std::uint64_t NcclLog::total_nccl_lines() const {
  std::uint64_t n = 0;
  for (const NcclSource& s : sources) n += s.nccl_lines;
  return n;
}
std::uint64_t NcclLog::total_recognised() const {
  std::uint64_t n = 0;
  for (const NcclSource& s : sources) n += s.recognised;
  return n;
}
std::uint64_t NcclLog::total_not_understood() const {
  std::uint64_t n = 0;
  for (const NcclSource& s : sources) n += s.not_understood;
  return n;
}
std::string_view NcclLog::host_name(std::uint32_t host) const {
  return host < hosts.size() ? std::string_view(hosts[host]) : std::string_view();
}

}  // namespace ferret
