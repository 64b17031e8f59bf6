// model/nccl_log: the NCCL log's storage model, usable without the parser (analysis and reports
// read it; tests and other importers may fill it by hand).
#include "model/nccl_log.h"

#include <gtest/gtest.h>

#include <string>

namespace ferret {
namespace {
namespace nccl_log_test {

NcclSource source(std::uint64_t lines, std::uint64_t nccl_lines, std::uint64_t recognised,
                  std::uint64_t not_understood) {
  NcclSource s;
  s.lines = lines;
  s.nccl_lines = nccl_lines;
  s.recognised = recognised;
  s.not_understood = not_understood;
  return s;
}

TEST(NcclLogModel, TotalsAddUpEverySource) {
  NcclLog log;
  EXPECT_EQ(log.total_lines(), 0u);
  log.sources.push_back(source(10, 7, 5, 2));
  log.sources.push_back(source(3, 3, 3, 0));
  EXPECT_EQ(log.total_lines(), 13u);
  EXPECT_EQ(log.total_nccl_lines(), 10u);
  EXPECT_EQ(log.total_recognised(), 8u);
  EXPECT_EQ(log.total_not_understood(), 2u);
}

TEST(NcclLogModel, HostNamesAreInternedIndices) {
  NcclLog log;
  log.hosts = {"node-a", "node-b"};
  EXPECT_EQ(log.host_name(0), "node-a");
  EXPECT_EQ(log.host_name(1), "node-b");
  EXPECT_EQ(log.host_name(2), "");  // not interned: no name rather than a read past the end
  EXPECT_EQ(log.host_name(kNoHost), "");
  NcclOrigin origin;
  EXPECT_EQ(origin.host, kNoHost);  // a record without a prefix names no host
}

TEST(NcclLogModel, TransportKindNames) {
  EXPECT_STREQ(nccl_transport_kind_name(NcclTransportKind::kP2P), "P2P");
  EXPECT_STREQ(nccl_transport_kind_name(NcclTransportKind::kShm), "SHM");
  EXPECT_STREQ(nccl_transport_kind_name(NcclTransportKind::kNet), "NET");
  EXPECT_STREQ(nccl_transport_kind_name(NcclTransportKind::kCollNet), "COLLNET");
  EXPECT_STREQ(nccl_transport_kind_name(NcclTransportKind::kNvls), "NVLS");
  EXPECT_STREQ(nccl_transport_kind_name(NcclTransportKind::kUnknown), "unknown");
}

}  // namespace nccl_log_test
}  // namespace
}  // namespace ferret
