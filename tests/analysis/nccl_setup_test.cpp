// NCCL setup analysis and its rules over the corpus of tests/data/nccl, and the bandwidth
// cross-check against hand-made traces. Expected numbers are counted from the files by hand.
#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "analysis/nccl/nccl_setup.h"
#include "diagnosis/nccl/rules_nccl.h"
#include "ingest/nccl/nccl_log_parser.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace nccl_setup_test {

std::string corpus(const std::string& name) { return std::string(FERRET_SOURCE_DIR) + "/tests/data/nccl/" + name; }

NcclSetup setup_of(const std::string& name) {
  NcclLog log;
  parse_nccl_file(corpus(name), log);
  return analyze_nccl_setup(log);
}

std::vector<Finding> findings_of(const NcclSetup& s) {
  std::vector<Finding> out;
  rules_nccl(s, out);
  return out;
}

const Finding* find(const std::vector<Finding>& fs, const std::string& id) {
  for (const Finding& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

double evidence(const Finding& f, const std::string& name) {
  for (const Evidence& e : f.evidence)
    if (e.name == name) return e.value;
  return -1;
}

const NcclEnvVariable* env(const NcclSetup& s, const std::string& name) {
  for (const NcclEnvVariable& v : s.env)
    if (v.name == name) return &v;
  return nullptr;
}

TEST(NcclSetup, SingleHostNvlinkIsClean) {
  const NcclSetup s = setup_of("single_host_nvlink.log");
  EXPECT_EQ(s.nranks, 8);
  EXPECT_EQ(s.hosts_in_job, 1);
  EXPECT_FALSE(s.multi_host);
  EXPECT_EQ(s.max_ranks_per_host, 8);
  ASSERT_EQ(s.ranks.size(), 8u);
  EXPECT_EQ(s.ranks[3].host, "dgx-a");
  EXPECT_EQ(s.ranks[3].pid, 1003);
  EXPECT_EQ(s.ranks[3].bus_id, "48000");
  EXPECT_EQ(s.ranks[3].version, "2.23.4");
  EXPECT_EQ(s.ranks[3].driver_version, 12040);
  EXPECT_DOUBLE_EQ(s.ranks[3].init_total_s, 2.53);
  ASSERT_EQ(s.ranks[3].transports.size(), 1u);
  EXPECT_EQ(s.ranks[3].transports[0].transport, "P2P/CUMEM");
  EXPECT_EQ(s.ranks[3].transports[0].connections, 2u);  // channels 00 and 01
  EXPECT_EQ(s.intra_host_p2p, 16u);
  EXPECT_EQ(s.intra_host_shm, 0u);
  EXPECT_EQ(s.net_connections, 0u);
  EXPECT_TRUE(s.nvls_available);
  EXPECT_EQ(s.channels.coll, 24);
  EXPECT_EQ(s.channels.nvls, 16);
  EXPECT_EQ(s.channel_count_variants, 1);
  ASSERT_EQ(s.comms.size(), 1u);
  EXPECT_EQ(s.comms[0].nnodes, 1);
  EXPECT_DOUBLE_EQ(s.comms[0].init_max_s, 2.57);  // rank 7: 2.50 + 7/100
  EXPECT_EQ(s.comms[0].init_slowest_rank, 7);
  EXPECT_EQ(s.comms[0].init_slowest_phase, "bootstrap");
  EXPECT_DOUBLE_EQ(s.comms[0].init_slowest_phase_s, 1.67);
  ASSERT_EQ(s.hosts.size(), 1u);
  EXPECT_EQ(s.hosts[0].processes, 8);
  EXPECT_TRUE(s.hosts[0].ib_no_device);  // a single host needs no network: no finding
  EXPECT_TRUE(findings_of(s).empty());
}

TEST(NcclSetup, TwoHostInfinibandWithGdrIsClean) {
  const NcclSetup s = setup_of("two_host_ib_gdr.log");
  EXPECT_EQ(s.nranks, 8);
  EXPECT_EQ(s.hosts_in_job, 2);
  EXPECT_TRUE(s.multi_host);
  EXPECT_EQ(s.max_ranks_per_host, 4);
  // 2 channels x 2 crossings (3->4, 7->0) x 2 sides = 8 NET, all GDRDMA; 2 x 6 P2P.
  EXPECT_EQ(s.net_connections, 8u);
  EXPECT_EQ(s.net_ib_connections, 8u);
  EXPECT_EQ(s.net_without_gdr, 0u);
  EXPECT_EQ(s.intra_host_p2p, 12u);
  ASSERT_EQ(s.hosts.size(), 2u);
  EXPECT_EQ(s.hosts[0].host, "node-a");
  EXPECT_EQ(s.hosts[0].ib_nics.size(), 2u);
  EXPECT_DOUBLE_EQ(s.hosts[0].nic_speed_gbps, 400.0);
  EXPECT_EQ(s.hosts[0].plugin, "none found");
  EXPECT_EQ(s.hosts[0].gdr_enabled, 2);
  EXPECT_EQ(s.hosts[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  // Rank 3 sends on two channels; rank 4 receives on two.
  ASSERT_EQ(s.ranks[3].transports.size(), 1u);
  EXPECT_EQ(s.ranks[3].transports[0].transport, "NET/IB/GDRDMA");
  EXPECT_EQ(s.ranks[3].transports[0].connections, 2u);
  EXPECT_EQ(s.ranks[0].network, "IB");
  ASSERT_EQ(s.versions.size(), 1u);
  EXPECT_EQ(s.versions[0], "2.18.5+cuda12.2");
  const NcclEnvVariable* hca = env(s, "NCCL_IB_HCA");
  ASSERT_NE(hca, nullptr);
  EXPECT_FALSE(hca->mismatch);
  EXPECT_EQ(hca->values[0].second.size(), 8u);
  EXPECT_TRUE(findings_of(s).empty());
}

TEST(NcclSetup, SocketFallbackAcrossHosts) {
  const NcclSetup s = setup_of("two_host_socket_fallback.log");
  EXPECT_EQ(s.net_socket_connections, 8u);  // 2 channels x 2 crossings x 2 sides
  EXPECT_EQ(s.net_ib_connections, 0u);
  EXPECT_EQ(s.ranks[0].version, "2.19.3");  // bare line pinned on rank 0's process
  EXPECT_EQ(s.ranks[1].version, "");
  const std::vector<Finding> fs = findings_of(s);
  const Finding* f = find(fs, "nccl-socket-transport");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kHigh);
  EXPECT_EQ(f->dimension, Dimension::kDistributed);
  EXPECT_EQ(f->layer, Layer::kHardware);
  EXPECT_EQ(evidence(*f, "socket_connections"), 8);
  EXPECT_EQ(evidence(*f, "hosts_without_ib"), 2);
  EXPECT_NE(f->detail.find("NCCL_IB_DISABLE=1"), std::string::npos);
  EXPECT_EQ(f->fixes.front().text, "Unset `NCCL_IB_DISABLE` (it is 1 here) on every host");
  EXPECT_EQ(fs.size(), 1u);
}

TEST(NcclSetup, PeerToPeerDisabledWithinAHost) {
  const NcclSetup s = setup_of("p2p_disabled.log");
  EXPECT_EQ(s.intra_host_shm, 8u);
  EXPECT_EQ(s.p2p_disabled_lines, 1u);
  const std::vector<Finding> fs = findings_of(s);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].id, "nccl-p2p-disabled");
  EXPECT_EQ(fs[0].severity, Severity::kHigh);
  EXPECT_EQ(fs[0].layer, Layer::kFramework);  // NCCL_P2P_DISABLE=1: a setting, not the hardware
  EXPECT_EQ(evidence(fs[0], "shm_connections"), 8);
  EXPECT_EQ(evidence(fs[0], "p2p_disabled_lines"), 1);
}

TEST(NcclSetup, MixedLogWarnings) {
  const NcclSetup s = setup_of("mixed_torchrun.log");
  EXPECT_EQ(s.nranks, 2);
  EXPECT_EQ(s.not_understood, 2u);
  EXPECT_EQ(s.warning_lines, 3u);
  ASSERT_EQ(s.warnings.size(), 2u);
  EXPECT_EQ(s.warnings[0].count, 2u);
  EXPECT_EQ(s.warnings[0].where, "misc/socket.cc:484");
  EXPECT_EQ(s.warnings[0].processes, (std::vector<std::string>{"rank 1"}));
  EXPECT_EQ(s.hosts[0].processes, 2);
  const std::vector<Finding> fs = findings_of(s);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].id, "nccl-warnings");
  EXPECT_EQ(fs[0].severity, Severity::kHigh);  // "failed", "closed"
  EXPECT_EQ(evidence(fs[0], "warn_lines"), 3);
  EXPECT_EQ(evidence(fs[0], "distinct_warnings"), 2);
}

TEST(NcclSetup, OldNcclWithoutGdrAndAMissingRank) {
  const NcclSetup s = setup_of("nccl_2_7_old.log");
  EXPECT_EQ(s.nranks, 4);
  ASSERT_EQ(s.comms.size(), 1u);
  EXPECT_EQ(s.comms[0].comm_id, "");
  EXPECT_EQ(s.comms[0].ranks_complete, 3);
  EXPECT_EQ(s.comms[0].missing_ranks, (std::vector<std::pair<int, int>>{{3, 3}}));
  EXPECT_EQ(s.comms[0].missing_count, 1);
  // Channels 00 and 01: 3->0 receive, 1->2 send, 1->2 receive = 6 NET/IB lines, none GDRDMA.
  EXPECT_EQ(s.net_ib_connections, 6u);
  EXPECT_EQ(s.net_without_gdr, 6u);
  const std::vector<Finding> fs = findings_of(s);
  const Finding* gdr = find(fs, "nccl-gdr-disabled");
  ASSERT_NE(gdr, nullptr);
  EXPECT_EQ(evidence(*gdr, "connections_without_gdr"), 6);
  EXPECT_EQ(evidence(*gdr, "gdr_disabled_lines"), 1);
  const Finding* missing = find(fs, "nccl-missing-ranks");
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->severity, Severity::kMedium);
  EXPECT_EQ(evidence(*missing, "ranks_missing"), 1);
  EXPECT_NE(missing->title.find("missing 3"), std::string::npos);
  EXPECT_EQ(fs.size(), 2u);
}

TEST(NcclSetup, VersionDriverAndConfigMismatchesSlowInitAndAHungRank) {
  const NcclSetup s = setup_of("version_mismatch.log");
  EXPECT_EQ(s.versions, (std::vector<std::string>{"2.21.5+cuda12.4", "2.22.3+cuda12.4"}));
  EXPECT_EQ(s.drivers, (std::vector<int>{12020, 12040}));
  const NcclEnvVariable* algo = env(s, "NCCL_ALGO");
  ASSERT_NE(algo, nullptr);
  EXPECT_TRUE(algo->mismatch);
  EXPECT_FALSE(env(s, "NCCL_SOCKET_IFNAME")->mismatch);
  EXPECT_EQ(s.comms[0].incomplete_ranks, (std::vector<int>{3}));
  EXPECT_DOUBLE_EQ(s.comms[0].init_max_s, 12.30);
  EXPECT_TRUE(s.collnet);  // mlx5_0:1/IB/SHARP

  const std::vector<Finding> fs = findings_of(s);
  std::vector<std::string> ids;
  for (const Finding& f : fs) ids.push_back(f.id);
  // By severity: the two high ones, then medium, then low (id order within a level, as for
  // every path: docs/RULES.md#the-verdict).
  EXPECT_EQ(ids, (std::vector<std::string>{"nccl-missing-ranks", "nccl-version-mismatch", "nccl-config-mismatch",
                                           "nccl-driver-mismatch", "nccl-slow-init"}));
  EXPECT_EQ(fs[0].severity, Severity::kHigh);
  EXPECT_EQ(evidence(fs[0], "ranks_incomplete"), 1);
  EXPECT_EQ(evidence(fs[2], "variables_differing"), 2);  // NCCL_ALGO, NCCL_IB_GID_INDEX
  EXPECT_EQ(fs[2].severity, Severity::kMedium);
  EXPECT_EQ(evidence(fs[4], "init_seconds"), 12.30);
  EXPECT_EQ(evidence(fs[4], "slowest_phase_seconds"), 10.90);
  EXPECT_NE(fs[4].fixes[0].text.find("NCCL_SOCKET_IFNAME"), std::string::npos);  // bootstrap dominates
}

TEST(NcclSetup, PerHostSettingsDifferingIsLow) {
  const NcclLog log = parse_nccl_text(
      "a:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n"
      "b:2:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens5\n");
  const std::vector<Finding> fs = findings_of(analyze_nccl_setup(log));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].id, "nccl-config-mismatch");
  EXPECT_EQ(fs[0].severity, Severity::kLow);
}

// The security review's log: 50 communicators that each claim 1,048,576 ranks and log rank 0.
// Each is summarised as one range of 1,048,575 missing ranks instead of a list that long.
TEST(NcclSetup, HugeNranksGivesOneMissingRangePerCommunicator) {
  std::string text;
  for (int i = 0; i < 50; ++i)
    text += fmt::format(
        "h:1:1 [0] NCCL INFO comm 0x{0} rank 0 nranks 1048576 cudaDev 0 busId 1a000 commId 0x{0} - Init START\n", i);
  text += "h:1:1 [0] NCCL INFO comm 0xbad rank 0 nranks 1048577 cudaDev 0 busId 1a000 commId 0xbad - Init START\n";
  const NcclSetup s = analyze_nccl_setup(parse_nccl_text(text));
  ASSERT_EQ(s.comms.size(), 50u);  // the 1,048,577-rank line is ignored
  for (const NcclCommSummary& c : s.comms) {
    EXPECT_EQ(c.nranks, 1048576);
    EXPECT_EQ(c.missing_ranks, (std::vector<std::pair<int, int>>{{1, 1048575}}));
    EXPECT_EQ(c.missing_count, 1048575);
    EXPECT_EQ(c.incomplete_ranks, std::vector<int>{0});
  }
  ASSERT_EQ(s.sources.size(), 1u);
  EXPECT_EQ(s.sources[0].implausible_lines, 1u);
  const std::vector<Finding> findings = findings_of(s);  // kept alive while `missing` points into it
  const Finding* missing = find(findings, "nccl-missing-ranks");
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(evidence(*missing, "ranks_missing"), 1048575);
  EXPECT_EQ(evidence(*missing, "ranks_logged"), 1);
}

TEST(NcclSetup, EmptyLogHasNoFindings) {
  const NcclSetup s = analyze_nccl_setup(parse_nccl_text("hello\nworld\n"));
  EXPECT_EQ(s.lines, 2u);
  EXPECT_EQ(s.nranks, -1);
  EXPECT_TRUE(findings_of(s).empty());
}

// ---- bandwidth against the transport ----------------------------------------------------------------

// One AllReduce of 67,108,864 floats = 268,435,456 B over a group of 8, lasting `dur_us`.
// At 10,000 us: algbw 26.8435456 GB/s, busbw x 2*7/8 = 46.9762048 GB/s.
std::string allreduce_trace(int dur_us) {
  return R"J({
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85520809984, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},
  "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", "pid": 0, "tid": 20, "ts": 1000, "dur": )J" +
         std::to_string(dur_us) + R"J(,
   "args": {"Collective name": "allreduce", "In msg nelems": 67108864, "Out msg nelems": 67108864, "Group size": 8, "dtype": "Float"}}
]})J";
}

TEST(NcclBandwidth, InterHostAllReduceAgainstTwoIbNics) {
  NcclSetup s = setup_of("two_host_ib_gdr.log");
  add_bandwidth_checks(s, load_trace_text(allreduce_trace(10000)));
  ASSERT_EQ(s.bandwidth.size(), 1u);
  const NcclBandwidthCheck& b = s.bandwidth[0];
  EXPECT_EQ(b.trace_rank, 0);
  EXPECT_EQ(b.group_size, 8);
  EXPECT_TRUE(b.crosses_hosts);  // 8 ranks > 4 per host
  EXPECT_NEAR(b.busbw_gbps, 46.9762048, 1e-6);
  EXPECT_EQ(b.transport, "NET/IB x2 (GDRDMA)");
  EXPECT_DOUBLE_EQ(b.ceiling_gbps, 100.0);  // 2 NICs x 400 Gb/s printed by NCCL / 8
  EXPECT_NEAR(b.fraction, 0.469762048, 1e-9);
  EXPECT_TRUE(b.possible);
  const std::vector<Finding> fs = findings_of(s);
  EXPECT_TRUE(fs.empty());  // 47% is neither low (< 25%) nor impossible
}

TEST(NcclBandwidth, TenTimesFasterIsImpossibleOverTheNetwork) {
  NcclSetup s = setup_of("two_host_ib_gdr.log");
  add_bandwidth_checks(s, load_trace_text(allreduce_trace(1000)));
  ASSERT_EQ(s.bandwidth.size(), 1u);
  EXPECT_NEAR(s.bandwidth[0].busbw_gbps, 469.762048, 1e-5);
  EXPECT_FALSE(s.bandwidth[0].possible);  // > 110 GB/s
  const std::vector<Finding> fs = findings_of(s);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].id, "nccl-busbw-impossible");
  EXPECT_NEAR(evidence(fs[0], "ceiling_pct"), 469.762, 1e-3);
}

TEST(NcclBandwidth, SingleHostAgainstNvlink) {
  NcclSetup s = setup_of("single_host_nvlink.log");
  add_bandwidth_checks(s, load_trace_text(allreduce_trace(10000)));
  ASSERT_EQ(s.bandwidth.size(), 1u);
  const NcclBandwidthCheck& b = s.bandwidth[0];
  EXPECT_FALSE(b.crosses_hosts);
  EXPECT_EQ(b.transport, "P2P (NVLink4)");
  EXPECT_DOUBLE_EQ(b.ceiling_gbps, 450.0);
  EXPECT_NEAR(b.fraction, 46.9762048 / 450.0, 1e-9);  // 10.4%
  const std::vector<Finding> fs = findings_of(s);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].id, "nccl-busbw-low");
  EXPECT_NEAR(evidence(fs[0], "ceiling_pct"), 10.439, 1e-3);
}

TEST(NcclBandwidth, SocketCeilingUsesTheAssumedEthernetSpeed) {
  NcclSetup s = setup_of("two_host_socket_fallback.log");
  add_bandwidth_checks(s, load_trace_text(allreduce_trace(10000)));
  ASSERT_EQ(s.bandwidth.size(), 1u);
  EXPECT_EQ(s.bandwidth[0].transport, "NET/Socket x1");
  EXPECT_DOUBLE_EQ(s.bandwidth[0].ceiling_gbps, 12.5);
  EXPECT_FALSE(s.bandwidth[0].possible);  // 47 GB/s cannot cross one 100 GbE socket
}

// ---- one rank's log (usually all a user has) ----------------------------------------------------

const NcclPeer* peer(const NcclSetup& s, int rank) {
  for (const NcclPeer& p : s.peers)
    if (p.rank == rank) return &p;
  return nullptr;
}

// rank0_socket_no_verbs.log: rank 0 of 4 on node-a; 2 P2P/IPC lines to rank 1, NET/Socket
// receives from rank 3 (x2) and rank 2, a send to rank 2; nNodes 2 in the graph line; the verbs
// library is missing (`Failed to open libibverbs.so[.1]`).
TEST(NcclSetup, OneRankLogInfersPeersAndHosts) {
  const NcclSetup s = setup_of("rank0_socket_no_verbs.log");
  EXPECT_EQ(s.nranks, 4);
  EXPECT_EQ(s.hosts_in_job, 1);
  EXPECT_EQ(s.hosts_at_least, 2);  // nNodes 2
  EXPECT_TRUE(s.multi_host);
  EXPECT_EQ(s.max_ranks_per_host, 2);  // ranks 0 and 1 joined by P2P
  ASSERT_EQ(s.peers.size(), 3u);
  for (int rank : {1, 2, 3}) ASSERT_NE(peer(s, rank), nullptr) << rank;
  EXPECT_TRUE(peer(s, 1)->same_host);
  EXPECT_FALSE(peer(s, 1)->over_network);
  EXPECT_EQ(peer(s, 1)->transports.at(0).transport, "P2P/IPC");
  EXPECT_EQ(peer(s, 1)->transports.at(0).connections, 2u);
  ASSERT_NE(peer(s, 2), nullptr);
  EXPECT_TRUE(peer(s, 2)->over_network);
  EXPECT_EQ(peer(s, 2)->transports.at(0).transport, "NET/Socket");
  EXPECT_EQ(peer(s, 2)->transports.at(0).connections, 2u);  // one receive, one send
  EXPECT_EQ(peer(s, 3)->transports.at(0).connections, 2u);
  EXPECT_EQ(s.net_socket_connections, 4u);
  ASSERT_EQ(s.hosts.size(), 1u);
  EXPECT_EQ(s.hosts[0].ib_unavailable, "Failed to open libibverbs.so[.1]");

  const std::vector<Finding> fs = findings_of(s);
  const Finding* f = find(fs, "nccl-socket-transport");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "NCCL reaches ranks 2-3 on another host over TCP sockets (4 NET/Socket connections)");
  EXPECT_NE(f->detail.find("Root cause: NCCL could not load the InfiniBand verbs library on host (node-a: "
                           "`Failed to open libibverbs.so[.1]`)"),
            std::string::npos)
      << f->detail;
  ASSERT_FALSE(f->fixes.empty());
  EXPECT_NE(f->fixes.front().text.find("libibverbs1"), std::string::npos);
  EXPECT_EQ(evidence(*f, "socket_peers"), 2);
  EXPECT_EQ(evidence(*f, "hosts"), 2);
}

// Without nNodes the network alone says "another host": rank 0 of 16 reaches 8 and 15 over
// NET/IB with GDRDMA, 1 over P2P/CUMEM, 7 over SHM. Nothing on sockets, GDR in use.
TEST(NcclSetup, OneRankLogOverInfinibandIsMultiHostWithoutSocketFinding) {
  const NcclSetup s = setup_of("rank0_ib_gdr_cumem.log");
  EXPECT_EQ(s.hosts_in_job, 1);
  EXPECT_EQ(s.hosts_at_least, 2);
  EXPECT_TRUE(s.multi_host);
  EXPECT_EQ(s.max_ranks_per_host, 3);  // 0, 1 (P2P) and 7 (SHM)
  // `7[7] -> 0[0] via SHM` printed by rank 0 (its comm line says so): the peer is 7.
  ASSERT_EQ(s.peers.size(), 4u);
  for (int rank : {1, 7, 8, 15}) ASSERT_NE(peer(s, rank), nullptr) << rank;
  EXPECT_EQ(peer(s, 8)->transports.at(0).transport, "NET/IB/GDRDMA");
  EXPECT_EQ(peer(s, 8)->transports.at(0).connections, 2u);  // NICs 0 and 1
  EXPECT_TRUE(peer(s, 15)->over_network);
  EXPECT_EQ(peer(s, 7)->transports.at(0).transport, "SHM");
  EXPECT_TRUE(peer(s, 7)->same_host);
  const std::vector<Finding> fs = findings_of(s);
  EXPECT_EQ(find(fs, "nccl-socket-transport"), nullptr);
  EXPECT_EQ(find(fs, "nccl-gdr-disabled"), nullptr);
  EXPECT_NE(find(fs, "nccl-p2p-disabled"), nullptr);  // the SHM connection to rank 7
}

// NCCL 2.4 (`Ring` lines) and 2.7 (bus ids, `NET/IB : Failed to open ...`): sockets to rank 3.
TEST(NcclSetup, OneRankLogOfOldNcclFindsSocketPeers) {
  for (const char* name : {"rank0_nccl24_ring.log", "rank0_nccl27_busid_ib.log"}) {
    SCOPED_TRACE(name);
    const NcclSetup s = setup_of(name);
    EXPECT_EQ(s.hosts_at_least, 2);
    ASSERT_EQ(s.peers.size(), 2u);
    ASSERT_NE(peer(s, 3), nullptr);
    ASSERT_NE(peer(s, 1), nullptr);
    EXPECT_TRUE(peer(s, 3)->over_network);
    EXPECT_TRUE(peer(s, 1)->same_host);
    const std::vector<Finding> fs = findings_of(s);
    const Finding* f = find(fs, "nccl-socket-transport");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->title, "NCCL reaches rank 3 on another host over TCP sockets (2 NET/Socket connections)");
    const bool verbs = std::string(name) == "rank0_nccl27_busid_ib.log";
    EXPECT_EQ(f->detail.find("Root cause") != std::string::npos, verbs) << f->detail;
    EXPECT_EQ(f->detail.find("found no InfiniBand device") != std::string::npos, !verbs) << f->detail;
  }
}

// With every rank's log the pairs are per printing rank, and each pair's "another host" agrees
// with the hosts the communicator lines name for its two ranks.
TEST(NcclSetup, PeersOfEveryLoggedRankMatchTheirHosts) {
  for (const char* name : {"two_host_socket_fallback.log", "two_host_ib_gdr.log"}) {
    SCOPED_TRACE(name);
    const NcclSetup s = setup_of(name);
    ASSERT_FALSE(s.peers.empty());
    auto host_of = [&](int rank) {
      for (const NcclRankSummary& r : s.ranks)
        if (r.rank == rank) return r.host;
      return std::string("?");
    };
    for (const NcclPeer& p : s.peers) {
      EXPECT_NE(host_of(p.from_rank), "?") << p.from_rank;
      EXPECT_EQ(p.over_network, host_of(p.from_rank) != host_of(p.rank)) << p.from_rank << " -> " << p.rank;
      EXPECT_EQ(p.same_host, host_of(p.from_rank) == host_of(p.rank)) << p.from_rank << " -> " << p.rank;
    }
  }
}

// One host, P2P only: "Using network Socket" is no socket finding and the job stays on one host.
TEST(NcclSetup, OneRankLogWithOnlyP2pStaysOneHost) {
  const NcclSetup s = setup_of("rank0_one_host_p2p.log");
  EXPECT_EQ(s.hosts_at_least, 1);
  EXPECT_FALSE(s.multi_host);
  ASSERT_EQ(s.peers.size(), 1u);
  EXPECT_TRUE(s.peers[0].same_host);
  EXPECT_EQ(find(findings_of(s), "nccl-socket-transport"), nullptr);
}

}  // namespace nccl_setup_test
}  // namespace
}  // namespace ferret
