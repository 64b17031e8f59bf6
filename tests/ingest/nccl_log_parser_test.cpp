// The NCCL_DEBUG=INFO line parser: every line format of tests/data/nccl, one test per format,
// then the corpus files with their record counts worked out by hand from the files.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "ingest/nccl/nccl_log_parser.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace nccl_log_parser_test {

std::string corpus(const std::string& name) { return std::string(FERRET_SOURCE_DIR) + "/tests/data/nccl/" + name; }

NcclLog parse_file(const std::string& name) {
  NcclLog log;
  parse_nccl_file(corpus(name), log);
  return log;
}

// ---- prefixes ----------------------------------------------------------------------------------------

TEST(NcclLogParser, ReadsHostPidTidAndDevice) {
  const NcclLog log = parse_nccl_text("dgx-a:1003:2003 [3] NCCL INFO cudaDriverVersion 12040\n");
  ASSERT_EQ(log.drivers.size(), 1u);
  const NcclOrigin& o = log.drivers[0].origin;
  EXPECT_EQ(log.host_name(o.host), "dgx-a");
  EXPECT_EQ(o.pid, 1003);
  EXPECT_EQ(o.tid, 2003);
  EXPECT_EQ(o.dev, 3);
  EXPECT_EQ(o.line, 1u);
  EXPECT_EQ(log.drivers[0].driver_version, 12040);
}

TEST(NcclLogParser, ToleratesLauncherPrefixesAndAMissingDevice) {
  const NcclLog log = parse_nccl_text(
      "[default0]:node7:2001:2001 [0] NCCL INFO cudaDriverVersion 12040\n"
      "[1,0]<stdout>:hpc-01:4100:4100 [0] NCCL INFO Using network IB\n"
      "MLVM2: MLVM2:10802:10802 [7] NCCL INFO cudaDriverVersion 12030\n"
      "(RayTrainWorker pid=355353) ray-0:355353:358657 [0] NCCL INFO cudaDriverVersion 12020\n"
      "host-x:11:12 NCCL INFO cudaDriverVersion 11080\n"
      "NCCL INFO cudaDriverVersion 11070\n");
  ASSERT_EQ(log.drivers.size(), 5u);
  EXPECT_EQ(log.host_name(log.drivers[0].origin.host), "node7");
  EXPECT_EQ(log.host_name(log.drivers[1].origin.host), "MLVM2");
  EXPECT_EQ(log.drivers[1].origin.dev, 7);
  EXPECT_EQ(log.host_name(log.drivers[2].origin.host), "ray-0");
  EXPECT_EQ(log.host_name(log.drivers[3].origin.host), "host-x");
  EXPECT_EQ(log.drivers[3].origin.dev, -1);        // no [dev]
  EXPECT_EQ(log.drivers[4].origin.host, kNoHost);  // no prefix at all
  ASSERT_EQ(log.net.size(), 1u);
  EXPECT_EQ(log.host_name(log.net[0].origin.host), "hpc-01");
  EXPECT_EQ(log.total_nccl_lines(), 6u);
  EXPECT_EQ(log.total_recognised(), 6u);
}

// Two ranks writing to one stream glue their lines mid-line. Each glued line is split at the
// second line's host:pid:tid prefix (after a known host, or at a blank) and read as two: rank 1's
// Init COMPLETE is there, so no rank is missing; the split is counted.
TEST(NcclLogParser, InterleavedLinesAreSplitAtTheSecondPrefix) {
  const NcclLog log = parse_nccl_text(
      "node1:11:11 [0] NCCL INFO cudaDriverVersion 12040\n"
      "node1:12:12 [1] NCCL INFO cudaDriverVersion 12040\n"
      "node1:11:11 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1a000 commId 0x9 - Init "
      "COMPLETEnode1:12:12 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 1b000 commId 0x9 - Init COMPLETE\n"
      "node1:11:11 [0] NCCL INFO Using network IB node1:12:12 [1] NCCL INFO Using network IB\n");
  EXPECT_EQ(log.sources.at(0).interleaved_lines, 2u);
  EXPECT_EQ(log.total_nccl_lines(), 6u);
  ASSERT_EQ(log.comms.size(), 2u);
  EXPECT_EQ(log.comms[0].rank, 0);
  EXPECT_EQ(log.comms[1].rank, 1);
  EXPECT_EQ(log.comms[1].origin.pid, 12);
  EXPECT_EQ(log.host_name(log.comms[1].origin.host), "node1");  // not "COMPLETEnode1"
  ASSERT_EQ(log.net.size(), 2u);
  EXPECT_EQ(log.net[1].origin.pid, 12);
}

TEST(NcclLogParser, BareVersionGoesToThePreviousProcessOfTheSamePrefix) {
  const NcclLog log = parse_nccl_text(
      "[1,0]<stdout>:a:10:10 [0] NCCL INFO Using network IB\n"
      "[1,1]<stdout>:b:20:20 [0] NCCL INFO Using network IB\n"
      "[1,0]<stdout>:NCCL version 2.7.8+cuda11.0\n"
      "NCCL version 2.10.3+cuda11.3\n");
  ASSERT_EQ(log.versions.size(), 2u);
  EXPECT_EQ(log.versions[0].version, "2.7.8");
  EXPECT_EQ(log.versions[0].build_cuda, "11.0");
  EXPECT_EQ(log.host_name(log.versions[0].origin.host), "a");
  EXPECT_TRUE(log.versions[0].origin.inferred);
  // No launcher prefix matches: the last process seen.
  EXPECT_EQ(log.host_name(log.versions[1].origin.host), "b");
}

TEST(NcclLogParser, IgnoresTheVersionInTorchErrorMessages) {
  const NcclLog log = parse_nccl_text(
      "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
      "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n");
  EXPECT_TRUE(log.versions.empty());
  EXPECT_EQ(log.total_nccl_lines(), 0u);
}

// ---- one test per message format -----------------------------------------------------------------------

TEST(NcclLogParser, VersionLinePrefixed) {
  const NcclLog log = parse_nccl_text("h:1:1 [0] NCCL INFO NCCL version 2.23.4+cuda12.6\n");
  ASSERT_EQ(log.versions.size(), 1u);
  EXPECT_EQ(log.versions[0].version, "2.23.4");
  EXPECT_EQ(log.versions[0].build_cuda, "12.6");
  EXPECT_FALSE(log.versions[0].origin.inferred);
}

TEST(NcclLogParser, CommunicatorLinesOfEveryGeneration) {
  const NcclLog log = parse_nccl_text(
      "h:1:2 [0] NCCL INFO ncclCommInitRankConfig comm 0x55d000000 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 "
      "commId 0x7d3a2f0c11aa5e01 - Init START\n"
      "h:1:2 [0] NCCL INFO comm 0x5600 rank 4 nranks 8 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x1c2b - Init COMPLETE\n"
      "h:1:2 [0] NCCL INFO comm 0x7f2c3c000dc0 rank 0 nranks 4 cudaDev 0 busId 1a000 - Init COMPLETE\n"
      "h:1:2 [0] NCCL INFO comm 0x55d000000 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n"
      "h:1:2 [0] NCCL INFO comm 0x556ad86da000 rank 1 nranks 4 cudaDev 1 busId 41000 - Abort COMPLETE\n");
  ASSERT_EQ(log.comms.size(), 5u);
  EXPECT_EQ(log.comms[0].phase, NcclCommPhase::kStart);
  EXPECT_EQ(log.comms[0].comm_id, "0x7d3a2f0c11aa5e01");
  EXPECT_EQ(log.comms[0].nranks, 8);
  EXPECT_EQ(log.comms[0].nvml_dev, 0);
  EXPECT_EQ(log.comms[1].phase, NcclCommPhase::kComplete);
  EXPECT_EQ(log.comms[1].rank, 4);
  EXPECT_EQ(log.comms[1].bus_id, "1b000");
  EXPECT_EQ(log.comms[2].comm_id, "");  // NCCL 2.7-2.11: no commId
  EXPECT_EQ(log.comms[2].nvml_dev, -1);
  EXPECT_EQ(log.comms[3].phase, NcclCommPhase::kInfo);
  EXPECT_EQ(log.comms[3].nnodes, 1);
  EXPECT_EQ(log.comms[3].local_ranks, 8);
  EXPECT_EQ(log.comms[4].phase, NcclCommPhase::kAbort);
}

TEST(NcclLogParser, InitTimingsBothForms) {
  const NcclLog log = parse_nccl_text(
      "h:1:2 [0] NCCL INFO Init timings: rank 5 nranks 8 total 2.46 (kernels 0.18, bootstrap 1.60, allgathers 0.00, "
      "topo 0.52, graphs 0.01, connections 0.12, rest 0.02)\n"
      "h:1:2 [3] NCCL INFO Init timings - ncclCommInitRankConfig: rank 3 nranks 8 total 55.01 (kernels 52.45, alloc "
      "0.41, bootstrap 0.57, allgathers 0.08, topo 1.10, graphs 0.01, connections 0.39, rest 0.00)\n");
  ASSERT_EQ(log.init_timings.size(), 2u);
  EXPECT_EQ(log.init_timings[0].rank, 5);
  EXPECT_DOUBLE_EQ(log.init_timings[0].total_s, 2.46);
  ASSERT_EQ(log.init_timings[0].phases.size(), 7u);
  EXPECT_EQ(log.init_timings[0].phases[1].first, "bootstrap");
  EXPECT_DOUBLE_EQ(log.init_timings[0].phases[1].second, 1.60);
  EXPECT_DOUBLE_EQ(log.init_timings[1].total_s, 55.01);
  ASSERT_EQ(log.init_timings[1].phases.size(), 8u);
  EXPECT_EQ(log.init_timings[1].phases[0].first, "kernels");
  EXPECT_DOUBLE_EQ(log.init_timings[1].phases[0].second, 52.45);
}

TEST(NcclLogParser, ConnectionLinesAndTheirTransports) {
  const NcclLog log = parse_nccl_text(
      "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
      "h:1:2 [0] NCCL INFO Channel 01/0 : 3[3] -> 4[4] via P2P/CUMEM\n"
      "h:1:2 [0] NCCL INFO Channel 00 : 0[1a000] -> 1[1b000] via P2P/IPC\n"
      "h:1:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/direct pointer\n"
      "h:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n"
      "h:1:2 [7] NCCL INFO Channel 03/0 : 15[7] -> 6[6] [send] via NET/Socket/3\n"
      "h:1:2 [0] NCCL INFO Channel 01/0 : 7[3] -> 0[0] [receive] via NET/IB/1(0)/GDRDMA\n"
      "h:1:2 [0] NCCL INFO Channel 00 : 3[1b000] -> 0[1a000] [receive] via NET/IB/0\n"
      "h:1:2 [0] NCCL INFO Channel 02/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA\n");
  ASSERT_EQ(log.connections.size(), 9u);
  EXPECT_EQ(log.connections[0].channel, 0);
  EXPECT_EQ(log.connections[0].from_rank, 0);
  EXPECT_EQ(log.connections[0].to_rank, 1);
  EXPECT_EQ(log.connections[2].from_device, "1a000");  // older NCCL prints bus ids
  EXPECT_EQ(log.connections[5].direction, 's');
  EXPECT_EQ(log.connections[6].direction, 'r');
  EXPECT_EQ(log.connections[0].direction, ' ');
  auto transport = [&](std::size_t i) -> const NcclTransport& { return log.transports[log.connections[i].transport]; };
  EXPECT_EQ(transport(0).kind, NcclTransportKind::kP2P);
  EXPECT_EQ(transport(0).p2p_mode, "IPC");
  EXPECT_EQ(transport(1).p2p_mode, "CUMEM");
  EXPECT_EQ(transport(3).p2p_mode, "direct pointer");
  EXPECT_EQ(transport(4).kind, NcclTransportKind::kShm);
  EXPECT_EQ(transport(5).kind, NcclTransportKind::kNet);
  EXPECT_EQ(transport(5).net, "Socket");
  EXPECT_EQ(transport(5).net_dev, 3);
  EXPECT_FALSE(transport(5).gdr);
  EXPECT_EQ(transport(6).net, "IB");
  EXPECT_EQ(transport(6).net_dev, 1);
  EXPECT_TRUE(transport(6).gdr);
  EXPECT_FALSE(transport(7).gdr);
  EXPECT_EQ(transport(8).net, "AWS Libfabric");
  EXPECT_TRUE(transport(8).gdr);
  // "P2P/IPC/read" and "P2P/IPC" are different clauses; the table holds each once.
  EXPECT_EQ(log.transports.size(), 9u);
}

TEST(NcclLogParser, RingsTreesAndChannelCounts) {
  const NcclLog log = parse_nccl_text(
      "h:1:2 [0] NCCL INFO Channel 00/24 :    0   1   2   3   4   5   6   7\n"
      "h:1:2 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1\n"
      "h:1:2 [0] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels "
      "per peer\n"
      "h:1:2 [0] NCCL INFO 8 coll channels, 8 p2p channels, 1 p2p channels per peer\n");
  ASSERT_EQ(log.rings.size(), 1u);
  EXPECT_EQ(log.rings[0].channel, 0);
  EXPECT_EQ(log.rings[0].channels, 24);
  EXPECT_EQ(log.rings[0].ring_length, 8);
  ASSERT_EQ(log.trees.size(), 1u);
  EXPECT_EQ(log.trees[0].trees, 2);
  ASSERT_EQ(log.channel_counts.size(), 2u);
  EXPECT_EQ(log.channel_counts[0].coll, 24);
  EXPECT_EQ(log.channel_counts[0].collnet, 24);
  EXPECT_EQ(log.channel_counts[0].nvls, 0);
  EXPECT_EQ(log.channel_counts[0].p2p, 32);
  EXPECT_EQ(log.channel_counts[0].p2p_per_peer, 32);
  EXPECT_EQ(log.channel_counts[1].coll, 8);
  EXPECT_EQ(log.channel_counts[1].collnet, -1);  // not printed by older NCCL
  EXPECT_EQ(log.channel_counts[1].p2p_per_peer, 1);
}

TEST(NcclLogParser, NetworkLines) {
  const NcclLog log = parse_nccl_text(
      "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
      "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_9:1/IB/SHARP [RO]; OOB eth0:10.224.3.48<0>\n"
      "h:1:2 [0] NCCL INFO NET/IB : No device found.\n"
      "h:1:2 [0] NCCL INFO NET/Socket : Using [0]eno8303:109.105.115.159<0> [1]veth:fe80::54a7%veth<0>\n"
      "h:1:2 [0] NCCL INFO Using network IBext_v8\n"
      "h:1:2 [0] NCCL INFO Using internal Network Socket\n"
      "h:1:2 [0] NCCL INFO NET/IB : Made virtual device [0] name=mlx5_0 speed=400000 ndevs=1\n"
      "h:1:2 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>\n");
  ASSERT_EQ(log.net.size(), 8u);
  EXPECT_EQ(log.net[0].event, NcclNetEvent::kIbDevices);
  ASSERT_EQ(log.net[0].nics.size(), 2u);  // "[RO]" is a flag, not a device
  EXPECT_EQ(log.net[0].nics[0].name, "mlx5_0");
  EXPECT_EQ(log.net[0].nics[0].port, 1);
  EXPECT_EQ(log.net[0].nics[1].link, "RoCE");
  EXPECT_EQ(log.net[0].oob, "eth0");
  EXPECT_TRUE(log.net[1].nics[0].sharp);
  EXPECT_EQ(log.net[2].event, NcclNetEvent::kIbNoDevice);
  EXPECT_EQ(log.net[3].event, NcclNetEvent::kSocketDevices);
  ASSERT_EQ(log.net[3].nics.size(), 2u);
  EXPECT_EQ(log.net[3].nics[0].name, "eno8303");
  EXPECT_EQ(log.net[3].nics[0].link, "109.105.115.159");
  EXPECT_EQ(log.net[4].event, NcclNetEvent::kUsingNetwork);
  EXPECT_EQ(log.net[4].name, "IBext_v8");
  EXPECT_EQ(log.net[5].name, "Socket");
  EXPECT_EQ(log.net[6].event, NcclNetEvent::kIbSpeed);
  EXPECT_DOUBLE_EQ(log.net[6].speed_gbps, 400.0);  // 400000 Mb/s
  EXPECT_EQ(log.net[7].event, NcclNetEvent::kBootstrap);
  EXPECT_EQ(log.net[7].name, "lo");
}

TEST(NcclLogParser, PluginLines) {
  const NcclLog log = parse_nccl_text(
      "h:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n"
      "h:2:2 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared "
      "object file: No such file or directory\n"
      "h:2:2 [0] NCCL INFO NET/Plugin : No plugin found, using internal implementation\n"
      "h:3:3 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n"
      "h:4:4 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.\n"
      "h:4:4 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 (v6)\n"
      "h:4:4 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v10)\n"
      "h:5:5 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or "
      "directory No plugin found (libnccl-net.so), using internal implementation\n");
  // The two lines of one failed load (pid 2) make one record; "Failed to find" is version probing.
  ASSERT_EQ(log.net.size(), 6u);
  EXPECT_EQ(log.net[0].event, NcclNetEvent::kPluginAbsent);
  EXPECT_EQ(log.net[1].event, NcclNetEvent::kPluginAbsent);
  EXPECT_EQ(log.net[2].event, NcclNetEvent::kPluginAbsent);
  EXPECT_EQ(log.net[3].event, NcclNetEvent::kPluginLoaded);
  EXPECT_EQ(log.net[3].name, "NCCL RDMA Plugin v6");
  EXPECT_EQ(log.net[4].name, "Libfabric");
  EXPECT_EQ(log.net[5].event, NcclNetEvent::kPluginAbsent);
  EXPECT_EQ(log.total_recognised(), 8u);
}

TEST(NcclLogParser, GpuDirectRdmaLines) {
  const NcclLog log = parse_nccl_text(
      "h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n"
      "h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_2'\n"
      "h:1:1 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 81000 / HCA 1 (distance 6 <= 7), read 0\n"
      "h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 1a000 / HCA 0 (distance 4 >= 2)\n");
  ASSERT_EQ(log.gdr.size(), 4u);
  EXPECT_FALSE(log.gdr[0].enabled);
  EXPECT_EQ(log.gdr[0].hca, 0);
  EXPECT_EQ(log.gdr[0].hca_name, "mlx5_0");
  EXPECT_TRUE(log.gdr[1].enabled);
  EXPECT_EQ(log.gdr[1].hca_name, "mlx5_2");
  EXPECT_TRUE(log.gdr[2].enabled);
  EXPECT_EQ(log.gdr[2].gpu, "81000");
  EXPECT_EQ(log.gdr[2].hca, 1);
  EXPECT_EQ(log.gdr[2].distance, 6);
  EXPECT_EQ(log.gdr[2].max_distance, 7);
  EXPECT_FALSE(log.gdr[3].enabled);
  EXPECT_EQ(log.gdr[3].distance, 4);
  EXPECT_EQ(log.gdr[3].max_distance, 2);
}

TEST(NcclLogParser, PeerToPeerNvlsAndEnvironment) {
  const NcclLog log = parse_nccl_text(
      "h:1:1 [1] NCCL INFO P2P is disabled between connected GPUs 1 and 0\n"
      "h:1:1 [0] init.cc:100 NCCL WARN P2P is disabled between NVLINK connected GPUs 5 and 4. This should not be the "
      "case given their connectivity\n"
      "h:1:1 [2] NCCL INFO NVLS multicast support is not available on dev 2 (NVLS_NCHANNELS 0)\n"
      "h:1:1 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
      "h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1\n"
      "h:1:1 [0] NCCL INFO NCCL_TREE_THRESHOLD set by environment to 0.\n"
      "h:1:1 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0\n");
  ASSERT_EQ(log.p2p_disabled.size(), 2u);
  EXPECT_EQ(log.p2p_disabled[0].gpu_a, 1);
  EXPECT_EQ(log.p2p_disabled[0].gpu_b, 0);
  EXPECT_FALSE(log.p2p_disabled[0].nvlink);
  EXPECT_TRUE(log.p2p_disabled[1].nvlink);
  EXPECT_EQ(log.p2p_disabled[1].gpu_a, 5);
  ASSERT_EQ(log.warnings.size(), 1u);
  ASSERT_EQ(log.nvls.size(), 2u);
  EXPECT_FALSE(log.nvls[0].available);
  EXPECT_EQ(log.nvls[0].dev, 2);
  EXPECT_EQ(log.nvls[0].channels, 0);
  EXPECT_TRUE(log.nvls[1].available);
  EXPECT_EQ(log.nvls[1].channels, -1);
  ASSERT_EQ(log.env.size(), 3u);
  EXPECT_EQ(log.env[0].name, "NCCL_IB_DISABLE");
  EXPECT_EQ(log.env[0].value, "1");
  EXPECT_EQ(log.env[1].value, "0");  // the sentence's period is not part of the value
  EXPECT_EQ(log.env[2].name, "NCCL_IB_HCA");
  EXPECT_EQ(log.env[2].value, "mlx5_0");
}

TEST(NcclLogParser, WarnLinesWithAndWithoutFunction) {
  const NcclLog log = parse_nccl_text(
      "\n[2024-05-01 10:00:03] node7:2002:2105 [1] misc/socket.cc:484 (ncclSocketConnect) NCCL WARN "
      "socketStartConnect: Connect to 10.9.0.8<35553> failed : Software caused connection abort\n"
      "node7:2002:2105 [1] proxy.cc:1488 NCCL WARN [Service thread] Could not receive type from localRank 0\n"
      "26a46eb2b1d3:111329:111329 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n");
  ASSERT_EQ(log.warnings.size(), 3u);
  EXPECT_EQ(log.warnings[0].where, "misc/socket.cc:484");
  EXPECT_EQ(log.host_name(log.warnings[0].origin.host), "node7");
  EXPECT_EQ(log.warnings[0].origin.dev, 1);
  EXPECT_EQ(log.warnings[0].message,
            "socketStartConnect: Connect to 10.9.0.8<35553> failed : Software caused connection abort");
  EXPECT_EQ(log.warnings[1].where, "proxy.cc:1488");
  EXPECT_EQ(log.warnings[2].where, "misc/ibvwrap.cc:63");
  EXPECT_EQ(log.warnings[2].message, "Failed to open libibverbs.so[.1]");
  EXPECT_EQ(log.total_lines(), 4u);  // the blank line before a WARN is a line too
}

// ---- robustness ---------------------------------------------------------------------------------------

TEST(NcclLogParser, UnknownNcclLinesAreCountedNotFatal) {
  const NcclLog log = parse_nccl_text(
      "h:1:1 [0] NCCL INFO Using 256 threads, Min Comp Cap 8, Trees enabled up to size -2\n"
      "h:1:1 [0] NCCL INFO Setting affinity for GPU 0 to ffff\n"
      "plain program output\n");
  EXPECT_EQ(log.total_lines(), 3u);
  EXPECT_EQ(log.total_nccl_lines(), 2u);
  EXPECT_EQ(log.total_recognised(), 1u);
  EXPECT_EQ(log.total_not_understood(), 1u);
  ASSERT_EQ(log.not_understood_samples.size(), 1u);
}

TEST(NcclLogParser, GarbageHugeLinesAndNoFinalNewline) {
  std::string text = "h:1:1 [0] NCCL INFO cudaDriverVersion 12020\n";
  text += std::string(200000, 'x') + " NCCL INFO cudaDriverVersion 1\n";  // the marker is past the cut
  text += std::string("\x00\x01\xff\xfe NCCL INFO \xc3\x28\n", 18);
  text += "h:2:2 [0] NCCL INFO cudaDriverVersion 12040";  // no trailing newline
  const NcclLog log = parse_nccl_text(text);
  EXPECT_EQ(log.total_lines(), 4u);
  EXPECT_EQ(log.sources[0].long_lines, 1u);
  ASSERT_EQ(log.drivers.size(), 2u);
  EXPECT_EQ(log.drivers[1].driver_version, 12040);
  EXPECT_EQ(log.total_not_understood(), 1u);
  ASSERT_EQ(log.not_understood_samples.size(), 1u);
  EXPECT_EQ(log.not_understood_samples[0], "\\xc3(");  // invalid UTF-8 made visible
}

// ---- the corpus ---------------------------------------------------------------------------------------

// 8 ranks x (4 process lines + 9 init lines + 2 connections + 4 completion lines) + 2 ring lines
// = 8 x 19 + 2 = 154, all NCCL and all understood.
TEST(NcclCorpus, SingleHostNvlink) {
  const NcclLog log = parse_file("single_host_nvlink.log");
  EXPECT_EQ(log.total_lines(), 154u);
  EXPECT_EQ(log.total_nccl_lines(), 154u);
  EXPECT_EQ(log.total_not_understood(), 0u);
  EXPECT_EQ(log.versions.size(), 8u);
  EXPECT_EQ(log.drivers.size(), 8u);
  EXPECT_EQ(log.env.size(), 8u);
  EXPECT_EQ(log.net.size(), 40u);    // bootstrap, plugin, IB none, socket, using network: 5 x 8
  EXPECT_EQ(log.comms.size(), 24u);  // START, graph line, COMPLETE: 3 x 8
  EXPECT_EQ(log.nvls.size(), 8u);
  EXPECT_EQ(log.rings.size(), 2u);
  EXPECT_EQ(log.trees.size(), 8u);
  EXPECT_EQ(log.connections.size(), 16u);
  EXPECT_EQ(log.channel_counts.size(), 8u);
  ASSERT_EQ(log.init_timings.size(), 8u);
  EXPECT_DOUBLE_EQ(log.init_timings[7].total_s, 2.57);
  EXPECT_EQ(log.transports.size(), 1u);
  EXPECT_EQ(log.transports[0].text, "P2P/CUMEM/read");
}

// 8 x 10 process lines + 3 on rank 0 + 2 channels x (6 P2P + 2 crossings x 2 sides) + 8 x 2 = 119.
TEST(NcclCorpus, TwoHostInfinibandWithGdr) {
  const NcclLog log = parse_file("two_host_ib_gdr.log");
  EXPECT_EQ(log.total_lines(), 119u);
  EXPECT_EQ(log.total_recognised(), 119u);
  EXPECT_EQ(log.hosts.size(), 2u);
  EXPECT_EQ(log.connections.size(), 20u);
  EXPECT_EQ(log.transports.size(), 3u);  // P2P/IPC/read, NET/IB/0/GDRDMA, NET/IB/1(0)/GDRDMA
  EXPECT_EQ(log.gdr.size(), 2u);
  EXPECT_EQ(log.env.size(), 16u);
  EXPECT_EQ(log.net.size(), 33u);  // 8 x (bootstrap, plugin absent, IB devices, using) + 1 speed
}

// 4 x 3 + 1 bare version + 4 x 5 + 2 channels x (2 P2P + 2 crossings x 2 sides) + 4 x 2 = 53.
TEST(NcclCorpus, TwoHostSocketFallback) {
  const NcclLog log = parse_file("two_host_socket_fallback.log");
  EXPECT_EQ(log.total_lines(), 53u);
  EXPECT_EQ(log.total_recognised(), 53u);
  ASSERT_EQ(log.versions.size(), 1u);
  EXPECT_EQ(log.versions[0].version, "2.19.3");
  EXPECT_TRUE(log.versions[0].origin.inferred);
  EXPECT_EQ(log.host_name(log.versions[0].origin.host), "gpu-1");
  EXPECT_EQ(log.versions[0].origin.pid, 700);
  EXPECT_EQ(log.connections.size(), 12u);
}

// 4 x 3 + 1 P2P-disabled + 2 channels x 4 SHM + 4 COMPLETE = 25.
TEST(NcclCorpus, PeerToPeerDisabled) {
  const NcclLog log = parse_file("p2p_disabled.log");
  EXPECT_EQ(log.total_lines(), 25u);
  EXPECT_EQ(log.total_recognised(), 25u);
  EXPECT_EQ(log.p2p_disabled.size(), 1u);
  EXPECT_EQ(log.connections.size(), 8u);
  EXPECT_EQ(log.transports[0].kind, NcclTransportKind::kShm);
}

// 38 lines; 23 NCCL lines of init, 3 WARN and one binary line with a marker = 27 NCCL lines,
// of which "Using 256 threads ..." and the binary line are not understood.
TEST(NcclCorpus, MixedWithPythonAndTorchrunPrefixes) {
  const NcclLog log = parse_file("mixed_torchrun.log");
  EXPECT_EQ(log.total_lines(), 38u);
  EXPECT_EQ(log.total_nccl_lines(), 27u);
  EXPECT_EQ(log.total_recognised(), 25u);
  EXPECT_EQ(log.total_not_understood(), 2u);
  EXPECT_EQ(log.warnings.size(), 3u);
  ASSERT_EQ(log.versions.size(), 1u);  // the torch error's "NCCL version 2.20.5" is not one
  EXPECT_EQ(log.versions[0].origin.pid, 2001);
  EXPECT_EQ(log.comms.size(), 4u);
  EXPECT_EQ(log.connections.size(), 4u);
}

// mpirun --tag-output, NCCL 2.7.8: bare version, bus ids in brackets, no commId, no GDR.
TEST(NcclCorpus, Nccl27Style) {
  const NcclLog log = parse_file("nccl_2_7_old.log");
  EXPECT_EQ(log.total_lines(), 36u);
  EXPECT_EQ(log.total_recognised(), 36u);
  ASSERT_EQ(log.versions.size(), 1u);
  EXPECT_EQ(log.versions[0].version, "2.7.8");
  EXPECT_EQ(log.host_name(log.versions[0].origin.host), "hpc-01");
  EXPECT_EQ(log.versions[0].origin.pid, 4100);
  EXPECT_EQ(log.comms.size(), 3u);
  EXPECT_EQ(log.comms[0].comm_id, "");
  EXPECT_EQ(log.connections.size(), 10u);
  EXPECT_EQ(log.rings.size(), 2u);
  EXPECT_EQ(log.rings[0].ring_length, 4);
  EXPECT_EQ(log.trees.size(), 3u);
  ASSERT_EQ(log.channel_counts.size(), 1u);
  EXPECT_EQ(log.channel_counts[0].nvls, -1);
  ASSERT_EQ(log.gdr.size(), 1u);
  EXPECT_FALSE(log.gdr[0].enabled);
}

TEST(NcclCorpus, VersionMismatch) {
  const NcclLog log = parse_file("version_mismatch.log");
  EXPECT_EQ(log.total_lines(), 32u);
  EXPECT_EQ(log.total_recognised(), 32u);
  EXPECT_EQ(log.versions.size(), 4u);
  EXPECT_EQ(log.env.size(), 8u);
  EXPECT_EQ(log.init_timings.size(), 2u);
  EXPECT_EQ(log.comms.size(), 7u);  // 4 START, 3 COMPLETE
}

// nranks above kMaxNcclRanks (1,048,576) or a rank outside 0..nranks-1 is damage: the line is
// ignored, counted and described with its file and line; 1,048,576 itself is accepted.
TEST(NcclLogParser, ImplausibleRanksAreIgnoredAndNoted) {
  const NcclLog log = parse_nccl_text(
      "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 1048577 cudaDev 0 busId 1a000 commId 0x1 - Init START\n"
      "h:1:1 [0] NCCL INFO comm 0x2 rank 0 nranks 1048576 cudaDev 0 busId 1a000 commId 0x2 - Init START\n"
      "h:1:1 [0] NCCL INFO comm 0x3 rank 8 nranks 8 cudaDev 0 busId 1a000 commId 0x3 - Init START\n"
      "h:1:1 [0] NCCL INFO Init timings: rank 0 nranks 2000000000 total 1.5 (kernels 0.1)\n"
      "h:1:1 [0] NCCL INFO comm 0x4 rank -1 nranks 8 cudaDev 0 busId 1a000 commId 0x4 - Init START\n"
      "h:1:1 [0] NCCL INFO comm 0x5 rank 7 nranks 8 cudaDev 0 busId 1a000 commId 0x5 - Init START\n"
      "h:1:1 [0] NCCL INFO comm 0x6 rank 1 nranks 2147483647 cudaDev 0 busId 1a000 commId 0x6 - Init START\n",
      "hostile.log");
  ASSERT_EQ(log.comms.size(), 2u);
  EXPECT_EQ(log.comms[0].comm, "0x2");
  EXPECT_EQ(log.comms[0].nranks, 1048576);
  EXPECT_EQ(log.comms[1].comm, "0x5");
  EXPECT_TRUE(log.init_timings.empty());
  EXPECT_EQ(log.total_recognised(), 7u);
  EXPECT_EQ(log.total_not_understood(), 0u);
  const NcclSource& src = log.sources[0];
  EXPECT_EQ(src.implausible_lines, 5u);
  ASSERT_EQ(src.implausible_samples.size(), 5u);  // kMaxImplausibleSamples
  EXPECT_EQ(src.implausible_samples[0],
            "hostile.log:1: comm 0x1: nranks 1048577 above 1048576 (the largest job ferret accepts): line ignored");
  EXPECT_EQ(src.implausible_samples[1], "hostile.log:3: comm 0x3: rank 8 outside 0..7: line ignored");
  EXPECT_EQ(src.implausible_samples[2],
            "hostile.log:4: Init timings: nranks 2000000000 above 1048576 (the largest job ferret accepts): line "
            "ignored");
  EXPECT_EQ(src.implausible_samples[3], "hostile.log:5: comm 0x4: rank -1 outside 0..7: line ignored");
  EXPECT_EQ(src.implausible_samples[4],
            "hostile.log:7: comm 0x6: nranks 2147483647 above 1048576 (the largest job ferret accepts): line ignored");
}

// `yes | ferret nccl -`: lines without NCCL content. The first line is 44 bytes; then 3 MiB of
// "y\n". Chunks are 1 MiB: after the first, 1,048,532 bytes have passed without progress (not
// over the 1 MiB limit); after the second, 2,097,152 - 44 = 2,097,108 have, and reading stops
// there, keeping the first line. The NCCL line after the flood is never reached.
// A number must be the whole token: "nranks 1e9" was read as nranks 1 by a prefix parse.
TEST(NcclLogParser, NumbersAreWholeTokens) {
  const NcclLog log = parse_nccl_text(
      "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 1e9 cudaDev 0 busId 1a000 commId 0x1 - Init START\n"
      "h:1:1 [0] NCCL INFO comm 0x2 rank 0x nranks 8 cudaDev 0 busId 1a000 commId 0x2 - Init START\n"
      "h:1:1 [0] NCCL INFO comm 0x3 rank 1 nranks 8 cudaDev 0 busId 1a000 commId 0x3 - Init START\n");
  ASSERT_EQ(log.comms.size(), 1u);
  EXPECT_EQ(log.comms[0].comm, "0x3");
  EXPECT_EQ(log.comms[0].nranks, 8);
  EXPECT_EQ(log.sources[0].not_understood, 1u);     // nranks 1e9: no nranks, not a comm line
  EXPECT_EQ(log.sources[0].implausible_lines, 1u);  // rank 0x: no rank, outside 0..7, ignored
}

// Hosts are interned by name: 3 sources naming 2,000 hosts in turn give 2,000 hosts, each line's
// origin pointing at its own name (interning was a linear search: 100,000 hosts took 35 s).
TEST(NcclLogParser, ManyHostsAreInternedOnce) {
  NcclLog log;
  for (int source = 0; source < 3; ++source) {
    std::string text;
    for (int h = 0; h < 2000; ++h) text += "host" + std::to_string(h) + ":1:1 [0] NCCL INFO cudaDriverVersion 12020\n";
    std::unique_ptr<ByteSource> bytes = make_memory_source(text);
    parse_nccl_source(*bytes, "log" + std::to_string(source), "none", log, {});
  }
  ASSERT_EQ(log.hosts.size(), 2000u);
  ASSERT_EQ(log.drivers.size(), 6000u);
  for (std::size_t i = 0; i < log.drivers.size(); ++i)
    ASSERT_EQ(log.host_name(log.drivers[i].origin.host), "host" + std::to_string(i % 2000)) << i;
}

TEST(NcclLogParser, StopsAfterTooManyBytesWithoutAnNcclLine) {
  std::string text = "h:1:1 [0] NCCL INFO cudaDriverVersion 12020\n";
  ASSERT_EQ(text.size(), 44u);
  for (int i = 0; i < 3 * 1024 * 1024 / 2; ++i) text += "y\n";
  text += "h:2:2 [0] NCCL INFO cudaDriverVersion 12040\n";
  NcclReadLimits limits;
  limits.max_bytes_without_progress = 1 << 20;
  const NcclLog log = parse_nccl_text(text, "yes.log", limits);
  ASSERT_EQ(log.drivers.size(), 1u);
  EXPECT_EQ(log.drivers[0].driver_version, 12020);
  EXPECT_EQ(log.sources[0].bytes, 2097152u);
  EXPECT_EQ(log.sources[0].stopped,
            "reading stopped at byte 2097152: 2097108 bytes since byte 44 without an NCCL line (limit 1048576 "
            "bytes); what came before is kept");
  // Without a limit (0) the whole text is read.
  limits.max_bytes_without_progress = 0;
  const NcclLog all = parse_nccl_text(text, "yes.log", limits);
  EXPECT_EQ(all.drivers.size(), 2u);
  EXPECT_EQ(all.sources[0].stopped, "");
  // The default (1 GiB) does not stop a 3 MiB log.
  EXPECT_EQ(parse_nccl_text(text).drivers.size(), 2u);
}

// /dev/zero: NUL bytes and no newline. One line that never ends is neither buffered whole nor
// read forever: nothing is kept from it and the stop counts from the start.
TEST(NcclLogParser, StopsOnAnEndlessLineOfNulBytes) {
  const std::string zeros(3 << 20, '\0');
  NcclReadLimits limits;
  limits.max_bytes_without_progress = 1 << 20;
  const NcclLog log = parse_nccl_text(zeros, "zero", limits);
  EXPECT_EQ(log.sources[0].bytes, 2097152u);
  EXPECT_EQ(log.total_nccl_lines(), 0u);
  EXPECT_EQ(log.sources[0].stopped,
            "reading stopped at byte 2097152: 2097152 bytes since the start without an NCCL line (limit 1048576 "
            "bytes); what came before is kept");
}

// One rank's log in each NCCL 2.x wording of a connection: the ranks, devices, direction and
// transport of every `->` line, counted by hand from the files.
TEST(NcclLogParser, ConnectionWordingsOfEveryNccl2Release) {
  const std::string dir = std::string(FERRET_SOURCE_DIR) + "/tests/data/nccl/";
  {  // 2.4: `Ring 00 : 3 -> 0 [receive] via NET/Socket/0` (no devices) and `Ring 00 : 0[0] -> 1[1] via P2P/IPC`
    NcclLog log;
    parse_nccl_file(dir + "rank0_nccl24_ring.log", log);
    ASSERT_EQ(log.connections.size(), 4u);
    const NcclConnectionRecord& r = log.connections[0];
    EXPECT_EQ(r.from_rank, 3);
    EXPECT_EQ(r.to_rank, 0);
    EXPECT_EQ(r.from_device, "");
    EXPECT_EQ(r.direction, 'r');
    EXPECT_EQ(log.transports[r.transport].net, "Socket");
    EXPECT_EQ(log.connections[1].from_device, "0");
    EXPECT_EQ(log.connections[1].to_device, "1");
    EXPECT_EQ(log.transports[log.connections[1].transport].p2p_mode, "IPC");
    ASSERT_EQ(log.rings.size(), 1u);  // `Ring 00 :    0   1   2   3`
    EXPECT_EQ(log.rings[0].ring_length, 4);
    EXPECT_EQ(log.total_not_understood(), 0u);
  }
  {  // 2.7: bus ids in the brackets, `NET/IB : Failed to open libibverbs.so[.1]`
    NcclLog log;
    parse_nccl_file(dir + "rank0_nccl27_busid_ib.log", log);
    ASSERT_EQ(log.connections.size(), 4u);
    EXPECT_EQ(log.connections[0].from_device, "1d000");
    EXPECT_EQ(log.connections[0].direction, 'r');
    ASSERT_FALSE(log.net.empty());
    EXPECT_EQ(log.net[1].event, NcclNetEvent::kIbNoDevice);
    EXPECT_EQ(log.net[1].name, "Failed to open libibverbs.so[.1]");
    EXPECT_EQ(log.total_not_understood(), 0u);
  }
  {  // 2.21: `[send] via NET/IB/0/GDRDMA`, `via P2P/CUMEM/read`, `via SHM/direct/direct`
    NcclLog log;
    parse_nccl_file(dir + "rank0_ib_gdr_cumem.log", log);
    ASSERT_EQ(log.connections.size(), 6u);
    const NcclTransport& cumem = log.transports[log.connections[0].transport];
    EXPECT_EQ(cumem.kind, NcclTransportKind::kP2P);
    EXPECT_EQ(cumem.p2p_mode, "CUMEM");
    const NcclConnectionRecord& send = log.connections[2];
    EXPECT_EQ(send.direction, 's');
    EXPECT_EQ(send.to_rank, 8);
    EXPECT_EQ(log.transports[send.transport].net, "IB");
    EXPECT_TRUE(log.transports[send.transport].gdr);
    EXPECT_EQ(log.transports[log.connections[3].transport].net_dev, 1);
    EXPECT_EQ(log.transports[log.connections[5].transport].kind, NcclTransportKind::kShm);
    EXPECT_EQ(log.total_not_understood(), 0u);
  }
  {  // 2.20 under torchrun: a bare `Failed to open libibverbs.so[.1]` is understood, not ignored
    NcclLog log;
    parse_nccl_file(dir + "rank0_socket_no_verbs.log", log);
    EXPECT_EQ(log.connections.size(), 6u);
    EXPECT_EQ(log.total_not_understood(), 0u);
    const auto no_ib = std::find_if(log.net.begin(), log.net.end(),
                                    [](const NcclNetRecord& n) { return n.event == NcclNetEvent::kIbNoDevice; });
    ASSERT_NE(no_ib, log.net.end());
    EXPECT_EQ(no_ib->name, "Failed to open libibverbs.so[.1]");
  }
}

// Other ways NCCL says InfiniBand is unusable; a `Failed to open` of something else stays unknown.
TEST(NcclLogParser, InfinibandUnavailableLines) {
  const NcclLog log = parse_nccl_text(
      "h:1:1 [0] NCCL INFO NET/IB : No device found.\n"
      "h:1:1 [0] NCCL INFO NET/IB : Unable to open device mlx5_0\n"
      "h:1:1 [0] NCCL INFO Failed to open libmlx5.so[.1]\n"
      "h:1:1 [0] NCCL INFO Failed to open libfoo.so\n");
  ASSERT_EQ(log.net.size(), 3u);
  EXPECT_EQ(log.net[0].name, "No device found");
  EXPECT_EQ(log.net[1].name, "Unable to open device mlx5_0");
  EXPECT_EQ(log.net[2].name, "Failed to open libmlx5.so[.1]");
  EXPECT_EQ(log.total_not_understood(), 1u);
}

}  // namespace nccl_log_parser_test
}  // namespace
}  // namespace ferret
