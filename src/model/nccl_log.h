// The NCCL log's storage model: what NCCL_DEBUG=INFO lines said, as typed records with the
// origin (host, pid, device, source line) of each. A second storage model beside TraceModel, since
// a log is not a trace: ingest/nccl_log_parser fills it, analysis/nccl_setup reads it
// (docs/ARCHITECTURE.md, "NCCL logs"). Hosts and `via` clauses are interned: a log repeats them
// on every line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferret {

inline constexpr std::uint32_t kNoHost = 0xffffffffu;

// Where a record came from: the NCCL prefix (host interned in NcclLog::hosts; -1 when absent)
// and the position in the input.
struct NcclOrigin {
  std::uint32_t host = kNoHost;
  std::int32_t pid = -1;
  std::int32_t tid = -1;
  std::int32_t dev = -1;     // the `[dev]` field: the CUDA device current on that thread
  std::uint32_t source = 0;  // index into NcclLog::sources
  std::uint64_t line = 0;    // 1-based line number in that source
  bool inferred = false;     // bare line attributed to the preceding NCCL line's process
};

// `NCCL version 2.18.5+cuda12.2` (bare or prefixed).
struct NcclVersionRecord {
  NcclOrigin origin;
  std::string version;     // "2.18.5"
  std::string build_cuda;  // "12.2": the CUDA toolkit NCCL was built with; "" when not printed
};

// `cudaDriverVersion 12020` -> 12.2.
struct NcclDriverRecord {
  NcclOrigin origin;
  int driver_version = -1;  // as printed: 1000 * major + 10 * minor
};

enum class NcclCommPhase : std::uint8_t { kStart, kComplete, kInfo, kDestroy, kAbort };

// `[ncclCommInitRank ]comm 0x.. rank R nranks N cudaDev D [nvmlDev M] [busId B] [commId 0x..]
// - Init START|COMPLETE`; the graph line `comm 0x.. rank R nRanks N nNodes K localRanks L
// localRank l MNNVL m` (kInfo); `... - Destroy|Abort COMPLETE`.
struct NcclCommRecord {
  NcclOrigin origin;
  NcclCommPhase phase = NcclCommPhase::kInfo;
  std::string comm;     // "0x55cc8aa86c70"
  std::string comm_id;  // "0x65e0bd6ee7449db4"; "" before NCCL 2.12 or on kInfo lines
  std::string bus_id;   // "1c000"
  int rank = -1;
  int nranks = -1;
  int cuda_dev = -1;
  int nvml_dev = -1;
  int nnodes = -1;       // kInfo lines only
  int local_ranks = -1;  // kInfo lines only
};

// `Init timings[ - ncclCommInitRankConfig]: rank R nranks N total T (kernels a, alloc b, ...)`.
struct NcclInitTimingRecord {
  NcclOrigin origin;
  int rank = -1;
  int nranks = -1;
  double total_s = -1;
  std::vector<std::pair<std::string, double>> phases;  // in printed order, seconds
};

enum class NcclTransportKind : std::uint8_t { kP2P, kShm, kNet, kCollNet, kNvls, kUnknown };
const char* nccl_transport_kind_name(NcclTransportKind k);  // "P2P", "SHM", "NET", ...

// What a `via ...` clause says, e.g. "P2P/IPC/read", "SHM/direct/direct", "NET/IB/0/GDRDMA",
// "NET/IB/1(0)/GDRDMA", "NET/Socket/0", "NET/AWS Libfabric/0/GDRDMA", "P2P/CUMEM".
struct NcclTransport {
  NcclTransportKind kind = NcclTransportKind::kUnknown;
  std::string text;      // the clause as printed
  std::string p2p_mode;  // P2P: "IPC", "CUMEM", "direct pointer", ...
  std::string net;       // NET: "IB", "Socket", "IBext", "AWS Libfabric", ...
  int net_dev = -1;      // NET: the NIC index
  bool gdr = false;      // NET: "/GDRDMA" (GPU Direct RDMA in use)
};

// `Channel 00/0 : 0[0] -> 1[1] via P2P/IPC`, older `Channel 00 : 0[3d000] -> 1[3e000] via ...` and
// NCCL 2.4's `Ring 00 : 0[0] -> 1[1] via P2P/IPC` / `Ring 00 : 3 -> 0 [receive] via NET/IB/0` (no
// devices: from_device / to_device stay ""); `[send]` / `[receive]` before `via` on network
// connections. The line is printed by the sending rank, or by the receiving one for `[receive]`.
struct NcclConnectionRecord {
  NcclOrigin origin;
  int channel = -1;
  int from_rank = -1;
  int to_rank = -1;
  std::string from_device;  // inside the brackets: a CUDA device (2.12+) or a bus id (older)
  std::string to_device;
  char direction = ' ';         // 's' send, 'r' receive, ' ' unspecified
  std::uint32_t transport = 0;  // index into NcclLog::transports
};

// `Channel 00/24 :    0   1   2 ...`: one ring (the rank order, counted, not stored).
struct NcclRingRecord {
  NcclOrigin origin;
  int channel = -1;
  int channels = -1;
  int ring_length = 0;
};

// `Trees [0] 1/-1/-1->0->-1 [1] ...`.
struct NcclTreesRecord {
  NcclOrigin origin;
  int trees = 0;
};

// `24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per
// peer` (older NCCL omits collnet / nvls): -1 where a count is not printed.
struct NcclChannelCountRecord {
  NcclOrigin origin;
  int coll = -1;
  int collnet = -1;
  int nvls = -1;
  int p2p = -1;
  int p2p_per_peer = -1;
};

struct NcclNic {
  std::string name;  // "mlx5_0", "eth0"
  int port = -1;     // IB port
  std::string link;  // "IB", "RoCE" (IB devices); the address for sockets ("10.1.2.3")
  bool sharp = false;
};

enum class NcclNetEvent : std::uint8_t {
  kIbDevices,      // NET/IB : Using [0]mlx5_0:1/IB [1]...; OOB eth0:10.0.0.1<0>
  kIbNoDevice,     // NET/IB : No device found. / [NET/IB : ]Failed to open libibverbs.so[.1] (name: the reason)
  kSocketDevices,  // NET/Socket : Using [0]eth0:10.1.2.3<0>
  kUsingNetwork,   // Using network IB | Socket | IBext | ... (older: Using internal Network IB)
  kPluginAbsent,   // NET/Plugin : No plugin found / Could not find / Plugin load returned
  kPluginLoaded,   // NET/Plugin: Loaded net plugin X (vN) / Loaded coll plugin SHARP
  kBootstrap,      // Bootstrap : Using eth0:10.0.0.1<0>
  kIbSpeed,        // NET/IB : Made virtual device [0] name=mlx5_0 speed=400000 ...
};
struct NcclNetRecord {
  NcclOrigin origin;
  NcclNetEvent event = NcclNetEvent::kUsingNetwork;
  std::string name;  // network / plugin name / bootstrap interface
  std::vector<NcclNic> nics;
  std::string oob;              // IB: the out-of-band interface
  bool collnet_plugin = false;  // a coll (SHARP) plugin, not a net plugin
  double speed_gbps = -1;       // kIbSpeed: link speed in Gb/s
};

// `[NET/IB : ]GPU Direct RDMA Enabled|Disabled for HCA 0 'mlx5_0'` and
// `GPU Direct RDMA Enabled|Disabled for GPU 81000 / HCA 1 (distance 6 <= 7), read 0`.
struct NcclGdrRecord {
  NcclOrigin origin;
  bool enabled = false;
  int hca = -1;
  std::string hca_name;  // "mlx5_0" when printed
  std::string gpu;       // bus id (or "dev[nvml]") when the line names a GPU
  int distance = -1;
  int max_distance = -1;
};

// `P2P is disabled between [NVLINK ]connected GPUs 1 and 0`.
struct NcclP2pDisabledRecord {
  NcclOrigin origin;
  int gpu_a = -1;
  int gpu_b = -1;
  bool nvlink = false;
};

// `NVLS multicast support is [not ]available on dev 0[ (NVLS_NCHANNELS 16)]`.
struct NcclNvlsRecord {
  NcclOrigin origin;
  bool available = false;
  int dev = -1;
  int channels = -1;
};

// `NCCL_IB_DISABLE set by environment to 1`, `NCCL_IB_HCA set to mlx5_0`.
struct NcclEnvRecord {
  NcclOrigin origin;
  std::string name;
  std::string value;
};

// `host:pid:tid [0] misc/socket.cc:441 (func) NCCL WARN message`.
struct NcclWarnRecord {
  NcclOrigin origin;
  std::string where;  // "misc/socket.cc:441"
  std::string message;
};

struct NcclSource {
  std::string name;
  std::string compression;
  std::uint64_t bytes = 0;  // decompressed bytes read
  std::uint64_t lines = 0;
  std::uint64_t nccl_lines = 0;
  std::uint64_t recognised = 0;
  std::uint64_t not_understood = 0;
  std::uint64_t long_lines = 0;  // lines cut at the parser's kMaxLineBytes
  // Lines holding another process's NCCL line glued on (ranks writing to one stream), split at
  // the second line's prefix and read as two.
  std::uint64_t interleaved_lines = 0;
  std::string damage;  // a truncated compressed stream, as the ByteSource reports it
  // Lines ignored for an implausible value (nranks above kMaxNcclRanks, rank outside 0..nranks-1),
  // counted; the first kMaxImplausibleSamples described as "NAME:LINE: what was wrong".
  std::uint64_t implausible_lines = 0;
  std::vector<std::string> implausible_samples;
  // "" when the source was read to its end; else why and at which byte reading stopped
  // (NcclReadLimits::max_bytes_without_progress).
  std::string stopped;
};

// Everything read from one or more logs.
struct NcclLog {
  std::vector<NcclSource> sources;
  std::vector<std::string> hosts;         // interned host names
  std::vector<NcclTransport> transports;  // interned `via` clauses
  std::vector<NcclVersionRecord> versions;
  std::vector<NcclDriverRecord> drivers;
  std::vector<NcclCommRecord> comms;
  std::vector<NcclInitTimingRecord> init_timings;
  std::vector<NcclConnectionRecord> connections;
  std::vector<NcclRingRecord> rings;
  std::vector<NcclTreesRecord> trees;
  std::vector<NcclChannelCountRecord> channel_counts;
  std::vector<NcclNetRecord> net;
  std::vector<NcclGdrRecord> gdr;
  std::vector<NcclP2pDisabledRecord> p2p_disabled;
  std::vector<NcclNvlsRecord> nvls;
  std::vector<NcclEnvRecord> env;
  std::vector<NcclWarnRecord> warnings;
  // A few NCCL lines that were not understood (message text, first ones seen), to show the user.
  std::vector<std::string> not_understood_samples;

  std::uint64_t total_lines() const;
  std::uint64_t total_nccl_lines() const;
  std::uint64_t total_recognised() const;
  std::uint64_t total_not_understood() const;
  std::string_view host_name(std::uint32_t host) const;  // "" for kNoHost
};

}  // namespace ferret
