// NCCL's messages: one handler per kind of INFO/WARN message, and the records they fill
// (versions, communicators, channels, transports, NICs, GPU Direct RDMA, plugins, the environment).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/terminal_text.h"
#include "base/text.h"
#include "ingest/nccl/nccl_log_parser.h"
#include "ingest/nccl/nccl_scan.h"

namespace ferret {

using namespace nccl_scan;  // this file is outside the unity build (CMakeLists.txt)

namespace {

// Why a rank / nranks pair cannot come from a real job; "" when it can.
std::string implausible_ranks(int rank, int nranks) {
  if (nranks > kMaxNcclRanks)
    return fmt::format("nranks {} above {} (the largest job ferret accepts): line ignored", nranks, kMaxNcclRanks);
  if (rank < 0 || rank >= nranks) return fmt::format("rank {} outside 0..{}: line ignored", rank, nranks - 1);
  return "";
}

// Lines NCCL prints at INFO that carry nothing this linter uses; known, so they count as
// understood rather than "not understood".
constexpr std::string_view kKnownIgnored[] = {
    "Setting affinity",
    "Connected all rings",
    "Connected all trees",
    "Connected NVLS",
    "threadThresholds",
    "P2P Chunksize",
    "NCCL git version",
    "Using non-device net plugin",
    "ENV/Plugin",
    "TUNER/Plugin",
    "PROFILER/Plugin",
    "Ring ",
    "Tree ",
    "bootstrapSplit",
    "DMA-BUF is available",
    "Launch mode",
    "Plugin Path",
    "P2P plugin",
    "CC Off",
    "MNNVL",
    "Comm config",
    "Allocated ",
    "NET/OFI",
    "Using internal",
    "NVLS comm",
    "Assigned NET plugin",
    "Initialized NET plugin",
    "Enabled NCCL Func/Proto/Algo",
};

}  // namespace

namespace {

bool parse_version(std::string_view text, NcclVersionRecord& r) {
  // "2.18.5+cuda12.2", "2.19.3" (torch's error messages), "2.21.5+cuda12.4".
  std::string_view token = take_token(text);
  if (token.empty() || !is_decimal_digit(token.front())) return false;
  const std::size_t plus = token.find('+');
  r.version = std::string(token.substr(0, plus));
  if (plus != std::string_view::npos) {
    std::string_view build = token.substr(plus + 1);
    if (build.starts_with("cuda")) build.remove_prefix(4);
    r.build_cuda = std::string(build);
  }
  return true;
}

bool parse_comm(std::string_view text, NcclCommRecord& r) {
  // Optional function name first ("ncclCommInitRank comm 0x..").
  std::string_view first = take_token(text);
  if (first != "comm") {
    if (!first.starts_with("nccl")) return false;
    if (take_token(text) != "comm") return false;
  }
  r.comm = std::string(take_token(text));
  if (!r.comm.starts_with("0x") && r.comm != "(nil)") return false;
  const std::size_t dash = text.rfind(" - ");
  std::string_view tail = dash == std::string_view::npos ? std::string_view() : trim(text.substr(dash + 3));
  std::string_view fields = dash == std::string_view::npos ? text : text.substr(0, dash);
  if (tail == "Init START")
    r.phase = NcclCommPhase::kStart;
  else if (tail == "Init COMPLETE")
    r.phase = NcclCommPhase::kComplete;
  else if (tail.starts_with("Destroy"))
    r.phase = NcclCommPhase::kDestroy;
  else if (tail.starts_with("Abort"))
    r.phase = NcclCommPhase::kAbort;
  else
    r.phase = NcclCommPhase::kInfo;
  bool any = false;
  while (true) {
    std::string_view key = take_token(fields);
    if (key.empty()) break;
    std::string_view value = take_token(fields);
    if (value.empty()) break;
    if (key == "rank")
      r.rank = to_int(value), any = true;
    else if (key == "nranks" || key == "nRanks")
      r.nranks = to_int(value);
    else if (key == "cudaDev")
      r.cuda_dev = to_int(value);
    else if (key == "nvmlDev")
      r.nvml_dev = to_int(value);
    else if (key == "busId")
      r.bus_id = std::string(value);
    else if (key == "commId")
      r.comm_id = std::string(value);
    else if (key == "nNodes")
      r.nnodes = to_int(value);
    else if (key == "localRanks")
      r.local_ranks = to_int(value);
  }
  return any && r.nranks > 0;
}

bool parse_init_timings(std::string_view text, NcclInitTimingRecord& r) {
  // "Init timings: rank 5 nranks 8 total 2.46 (kernels 0.18, ...)" or
  // "Init timings - ncclCommInitRankConfig: rank 3 nranks 8 total 55.01 (...)".
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  text.remove_prefix(colon + 1);
  if (!consume(text, "rank") || !take_int(text, r.rank)) return false;
  if (!consume(text, "nranks") || !take_int(text, r.nranks)) return false;
  if (!consume(text, "total") || !take_double(text, r.total_s)) return false;
  if (!consume(text, "(")) return true;
  const std::size_t close = text.find(')');
  for (std::string_view part : split(text.substr(0, close), ',')) {
    std::string_view name = take_token(part);
    double seconds = 0;
    if (!name.empty() && take_double(part, seconds)) r.phases.emplace_back(std::string(name), seconds);
  }
  return true;
}

bool parse_channel_counts(std::string_view text, NcclChannelCountRecord& r) {
  bool any = false;
  for (std::string_view part : split(text, ',')) {
    int n = -1;
    if (!take_int(part, n)) return false;
    part = trim(part);
    if (part == "coll channels")
      r.coll = n, any = true;
    else if (part == "collnet channels")
      r.collnet = n;
    else if (part == "nvls channels")
      r.nvls = n;
    else if (part == "p2p channels")
      r.p2p = n;
    else if (part == "p2p channels per peer")
      r.p2p_per_peer = n;
  }
  return any;
}

// "[0]mlx5_0:1/IB" / "[1]mlx5_9:1/IB/SHARP" / "[0]eth0:10.1.2.3<0>"
bool parse_nic(std::string_view token, bool ib, NcclNic& nic) {
  if (token.size() < 4 || token.front() != '[') return false;
  const std::size_t close = token.find(']');
  if (close == std::string_view::npos || !all_digits(token.substr(1, close - 1))) return false;
  token.remove_prefix(close + 1);
  if (token.empty()) return false;
  const std::size_t colon = token.find(':');
  nic.name = std::string(token.substr(0, colon));
  if (colon == std::string_view::npos) return true;
  std::string_view rest = token.substr(colon + 1);
  if (ib) {
    std::vector<std::string_view> parts = split(rest, '/');
    nic.port = to_int(parts[0]);
    if (parts.size() > 1) nic.link = std::string(parts[1]);
    for (std::size_t i = 2; i < parts.size(); ++i)
      if (parts[i] == "SHARP") nic.sharp = true;
  } else {
    nic.link = std::string(rest.substr(0, rest.find('<')));
  }
  return true;
}

std::string interface_name(std::string_view text) {
  // "eth0:10.0.0.1<0>" / "[0]lo:127.0.0.1<0>" -> "eth0" / "lo"
  text = trim(text);
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close != std::string_view::npos) text.remove_prefix(close + 1);
  }
  return std::string(text.substr(0, text.find(':')));
}

}  // namespace

// What a message handler may touch: the log being filled, the parser's interning and its notes on
// ignored lines, and where the line came from.
struct NcclMessageContext {
  NcclLogParser& parser;
  const NcclOrigin& origin;
  NcclLog& log() { return parser.log_; }
  std::uint32_t intern_transport(std::string_view via) { return parser.intern_transport(via); }
  void note_implausible(std::string what) { parser.note_implausible(origin, std::move(what)); }
};

namespace {

// ---- one handler per kind of message: true when the message was understood ----------------------

bool version_message(NcclMessageContext& c, std::string_view m) {
  NcclVersionRecord r;
  r.origin = c.origin;
  if (!parse_version(m.substr(13), r)) return false;  // after "NCCL version "
  c.log().versions.push_back(std::move(r));
  return true;
}

bool driver_message(NcclMessageContext& c, std::string_view m) {
  NcclDriverRecord r;
  r.origin = c.origin;
  std::string_view rest = m.substr(18);  // after "cudaDriverVersion "
  if (!take_int(rest, r.driver_version)) return false;
  c.log().drivers.push_back(r);
  return true;
}

// `0[0] -> 1[1] [send] via P2P/IPC`, after "Channel 00/0 :".
bool connection_message(NcclMessageContext& c, int channel, std::string_view rest) {
  NcclConnectionRecord r;
  r.origin = c.origin;
  r.channel = channel;
  // The device in brackets after each rank is absent on NCCL 2.4's network lines
  // (`Ring 00 : 3 -> 0 [receive] via NET/IB/0`).
  auto take_device_field = [&](std::string& device) {
    std::string_view probe = rest;
    if (!consume(probe, "[") || probe.starts_with("send]") || probe.starts_with("receive]")) return true;
    const std::size_t close = probe.find(']');
    if (close == std::string_view::npos) return false;
    device = std::string(probe.substr(0, close));
    rest = probe.substr(close + 1);
    return true;
  };
  if (!take_int(rest, r.from_rank) || !take_device_field(r.from_device)) return false;
  if (!consume(rest, "->") || !take_int(rest, r.to_rank) || !take_device_field(r.to_device)) return false;
  if (consume(rest, "[send]"))
    r.direction = 's';
  else if (consume(rest, "[receive]"))
    r.direction = 'r';
  if (!consume(rest, "via ")) return false;
  r.transport = c.intern_transport(rest);
  c.log().connections.push_back(std::move(r));
  return true;
}

// A connection (`->`) or a ring: the ranks in order. `Channel 00/0 : ...` (2.12+), `Channel 00 :
// ...` (2.5-2.11) and `Ring 00 : ...` (2.4 and older) say the same.
bool channel_message(NcclMessageContext& c, std::string_view m) {
  std::string_view rest = m.substr(m.find(' ') + 1);  // after "Channel " / "Ring "
  int channel = -1, second = -1;
  if (!take_int(rest, channel)) return false;
  if (consume(rest, "/")) take_int(rest, second);
  if (!consume(rest, ":")) return false;
  if (contains(rest, "->")) return connection_message(c, channel, rest);
  NcclRingRecord r;
  r.origin = c.origin;
  r.channel = channel;
  r.channels = second;
  int rank = 0;
  while (take_int(rest, rank)) ++r.ring_length;
  if (r.ring_length == 0 || !trim(rest).empty()) return false;
  c.log().rings.push_back(r);
  return true;
}

// NCCL 2.4's `Ring 00 : ...` lines; other `Ring ...` wordings stay known and unused.
bool ring_message(NcclMessageContext& c, std::string_view m) {
  channel_message(c, m);
  return true;
}

bool trees_message(NcclMessageContext& c, std::string_view m) {
  NcclTreesRecord r;
  r.origin = c.origin;
  for (char ch : m) r.trees += ch == '[';
  c.log().trees.push_back(r);
  return r.trees > 0;
}

bool init_timings_message(NcclMessageContext& c, std::string_view m) {
  NcclInitTimingRecord r;
  r.origin = c.origin;
  if (!parse_init_timings(m, r)) return false;
  if (std::string why = implausible_ranks(r.rank, r.nranks); !why.empty()) {
    c.note_implausible("Init timings: " + why);
    return true;
  }
  c.log().init_timings.push_back(std::move(r));
  return true;
}

// "comm 0x.. rank ..." or a function name first ("ncclCommInitRank comm 0x..").
bool is_comm_message(std::string_view m) {
  return m.starts_with("comm ") || (m.starts_with("nccl") && contains(m.substr(0, 48), " comm 0x"));
}

bool comm_message(NcclMessageContext& c, std::string_view m) {
  NcclCommRecord r;
  r.origin = c.origin;
  if (!parse_comm(m, r)) return false;
  if (std::string why = implausible_ranks(r.rank, r.nranks); !why.empty()) {
    c.note_implausible("comm " + r.comm + ": " + why);
    return true;
  }
  c.log().comms.push_back(std::move(r));
  return true;
}

bool is_channel_count_message(std::string_view m) {
  return is_decimal_digit(m.front()) && contains(m, " coll channels");
}

bool channel_count_message(NcclMessageContext& c, std::string_view m) {
  NcclChannelCountRecord r;
  r.origin = c.origin;
  if (!parse_channel_counts(m, r)) return false;
  c.log().channel_counts.push_back(r);
  return true;
}

// Printed with or without "NET/IB : " in front, so found anywhere in the message.
bool is_gdr_message(std::string_view m) { return contains(m, "GPU Direct RDMA"); }

bool gdr_message(NcclMessageContext& c, std::string_view m) {
  NcclGdrRecord r;
  r.origin = c.origin;
  std::string_view rest = m.substr(m.find("GPU Direct RDMA") + 15);
  const std::size_t for_pos = rest.find(" for ");
  const std::string_view state = rest.substr(0, for_pos);
  if (contains(state, "nabled"))
    r.enabled = true;
  else if (!contains(state, "isabled"))
    return false;
  if (for_pos == std::string_view::npos) return false;
  rest.remove_prefix(for_pos + 5);
  if (consume(rest, "GPU ")) {
    r.gpu = std::string(take_token(rest));
    if (consume(rest, "/") && consume(rest, "HCA")) take_int(rest, r.hca);
    if (consume(rest, "(distance")) {
      take_int(rest, r.distance);
      take_token(rest);  // "<=", "<" or ">"
      take_int(rest, r.max_distance);
    }
  } else if (consume(rest, "HCA")) {
    take_int(rest, r.hca);
    std::string_view name = trim(rest);
    if (name.size() >= 2 && name.front() == '\'') {
      name.remove_prefix(1);
      r.hca_name = std::string(name.substr(0, name.find('\'')));
    }
  } else {
    return false;
  }
  c.log().gdr.push_back(std::move(r));
  return true;
}

// The NICs of a `Using [0]mlx5_0:1/IB [1]...` list; true when at least one was read.
bool take_nics(std::string_view devices, bool ib, std::vector<NcclNic>& nics) {
  while (true) {
    std::string_view token = take_token(devices);
    if (token.empty()) break;
    NcclNic nic;
    if (parse_nic(token, ib, nic)) nics.push_back(std::move(nic));
  }
  return !nics.empty();
}

// Why NCCL cannot use InfiniBand: `No device found.`, `Failed to open libibverbs.so[.1]` (the verbs
// library is not installed: NCCL's ibvwrap prints it, bare or after `NET/IB :`), `Unable to open
// device mlx5_0`, `No active IB device found`.
bool is_ib_unavailable(std::string_view rest) {
  rest = trim(rest);
  return rest.starts_with("No device found") || rest.starts_with("Failed to open") ||
         rest.starts_with("Unable to open") || rest.starts_with("No active");
}

std::string ib_unavailable_reason(std::string_view rest) {
  rest = trim(rest);
  if (!rest.empty() && rest.back() == '.') rest.remove_suffix(1);
  return terminal_safe(rest.substr(0, 120));
}

// A network record that carries only a name.
bool push_net_event(NcclMessageContext& c, NcclNetEvent event, std::string name) {
  NcclNetRecord r;
  r.origin = c.origin;
  r.event = event;
  r.name = std::move(name);
  c.log().net.push_back(std::move(r));
  return true;
}

// A bare `Failed to open libibverbs.so[.1]` (or libmlx5 / librdmacm): InfiniBand unavailable.
bool ib_library_message(NcclMessageContext& c, std::string_view m) {
  if (!contains(m, "ibverbs") && !contains(m, "mlx5") && !contains(m, "rdmacm")) return false;
  return push_net_event(c, NcclNetEvent::kIbNoDevice, ib_unavailable_reason(m));
}

bool ib_message(NcclMessageContext& c, std::string_view m) {
  std::string_view rest = m.substr(6);  // after "NET/IB"
  if (!consume(rest, ":")) return false;
  NcclNetRecord r;
  r.origin = c.origin;
  if (is_ib_unavailable(rest)) {
    r.event = NcclNetEvent::kIbNoDevice;
    r.name = ib_unavailable_reason(rest);
  } else if (consume(rest, "Using")) {
    r.event = NcclNetEvent::kIbDevices;
    r.name = "IB";
    const std::size_t semi = rest.find(';');
    if (semi != std::string_view::npos) {
      std::string_view oob = rest.substr(semi + 1);
      if (consume(oob, "OOB")) r.oob = interface_name(oob);
    }
    if (!take_nics(rest.substr(0, semi), true, r.nics)) return false;
  } else if (consume(rest, "Made virtual device")) {
    const std::size_t speed = rest.find("speed=");
    if (speed == std::string_view::npos) return true;
    r.event = NcclNetEvent::kIbSpeed;
    const std::size_t name = rest.find("name=");
    if (name != std::string_view::npos) {
      std::string_view n = rest.substr(name + 5);
      r.name = std::string(take_token(n));
    }
    std::string_view s = rest.substr(speed + 6);
    int mbps = -1;
    if (!take_int(s, mbps)) return false;
    r.speed_gbps = mbps / 1000.0;  // NCCL prints Mb/s
  } else {
    return false;
  }
  c.log().net.push_back(std::move(r));
  return true;
}

bool socket_message(NcclMessageContext& c, std::string_view m) {
  std::string_view rest = m.substr(10);  // after "NET/Socket"
  if (!consume(rest, ":")) return false;
  if (!consume(rest, "Using")) return contains(rest, "interfaces found");
  NcclNetRecord r;
  r.origin = c.origin;
  r.event = NcclNetEvent::kSocketDevices;
  r.name = "Socket";
  if (!take_nics(rest, false, r.nics)) return false;
  c.log().net.push_back(std::move(r));
  return true;
}

bool plugin_message(NcclMessageContext& c, std::string_view m) {
  NcclNetRecord r;
  r.origin = c.origin;
  const std::size_t loaded = m.find("Loaded ");
  if (loaded != std::string_view::npos) {
    // "Loaded net plugin NCCL RDMA Plugin v6 (v6)", "Loaded coll plugin SHARP (v6)"
    std::string_view rest = m.substr(loaded + 7);
    r.collnet_plugin = rest.starts_with("coll");
    const std::size_t plugin = rest.find("plugin ");
    if (plugin != std::string_view::npos) rest.remove_prefix(plugin + 7);
    const std::size_t version = rest.rfind(" (v");
    r.name = std::string(trim(rest.substr(0, version)));
    r.event = NcclNetEvent::kPluginLoaded;
  } else if (m.starts_with("Successfully loaded external")) {
    r.event = NcclNetEvent::kPluginLoaded;
    std::string_view rest = m.substr(28);
    consume(rest, "network");
    consume(rest, "plugin");
    r.name = std::string(trim(rest));
  } else if (contains(m, "No plugin found") || contains(m, "Could not find") || contains(m, "returned") ||
             contains(m, "dlerror")) {
    r.event = NcclNetEvent::kPluginAbsent;
  } else {
    // "Failed to find ncclNetPlugin_v7 symbol.", "Plugin name set by env to ...": version probing.
    return contains(m, "Failed to find") || contains(m, "set by env");
  }
  // A failed load prints two lines ("Plugin load ... returned 2", "No plugin found"): keep one.
  std::vector<NcclNetRecord>& net = c.log().net;
  if (r.event == NcclNetEvent::kPluginAbsent && !net.empty()) {
    const NcclNetRecord& prev = net.back();
    if (prev.event == NcclNetEvent::kPluginAbsent && prev.origin.host == c.origin.host &&
        prev.origin.pid == c.origin.pid && prev.origin.source == c.origin.source &&
        prev.origin.line + 1 == c.origin.line)
      return true;
  }
  net.push_back(std::move(r));
  return true;
}

// "Using network IB", older "Using internal Network Socket".
bool using_network_message(NcclMessageContext& c, std::string_view m) {
  NcclNetRecord r;
  r.origin = c.origin;
  r.event = NcclNetEvent::kUsingNetwork;
  r.name = std::string(trim(m.substr(m.find("etwork ") + 7)));
  c.log().net.push_back(std::move(r));
  return true;
}

bool bootstrap_message(NcclMessageContext& c, std::string_view m) {
  std::string_view rest = m.substr(9);  // after "Bootstrap"
  consume(rest, ":");
  if (!consume(rest, "Using")) return false;
  return push_net_event(c, NcclNetEvent::kBootstrap, interface_name(rest));
}

bool p2p_disabled_message(NcclMessageContext& c, std::string_view m) {
  NcclP2pDisabledRecord r;
  r.origin = c.origin;
  std::string_view rest = m.substr(23);  // after "P2P is disabled between"
  r.nvlink = consume(rest, "NVLINK");
  const std::size_t gpus = rest.find("GPUs");
  if (gpus != std::string_view::npos) {
    rest.remove_prefix(gpus + 4);
    take_int(rest, r.gpu_a);
    if (consume(rest, "and")) take_int(rest, r.gpu_b);
  }
  c.log().p2p_disabled.push_back(r);
  return true;
}

bool nvls_message(NcclMessageContext& c, std::string_view m) {
  NcclNvlsRecord r;
  r.origin = c.origin;
  std::string_view rest = m.substr(26);  // after "NVLS multicast support is "
  r.available = !consume(rest, "not");
  if (consume(rest, "available") && consume(rest, "on dev")) take_int(rest, r.dev);
  const std::size_t n = rest.find("NVLS_NCHANNELS");
  if (n != std::string_view::npos) {
    std::string_view channels = rest.substr(n + 14);
    take_int(channels, r.channels);
  }
  c.log().nvls.push_back(r);
  return true;
}

// `NCCL_IB_DISABLE set by environment to 1`; other NCCL_* lines are known and carry nothing used.
bool env_message(NcclMessageContext& c, std::string_view m) {
  std::size_t name_end = 0;
  while (name_end < m.size() &&
         ((m[name_end] >= 'A' && m[name_end] <= 'Z') || is_decimal_digit(m[name_end]) || m[name_end] == '_'))
    ++name_end;
  std::string_view rest = m.substr(name_end);
  if (!consume(rest, "set by environment to") && !consume(rest, "set to")) return true;
  NcclEnvRecord r;
  r.origin = c.origin;
  r.name = std::string(m.substr(0, name_end));
  std::string_view value = trim(rest);
  // Older NCCL ends the sentence with a period ("set by environment to 0.").
  if (!value.empty() && value.back() == '.') value.remove_suffix(1);
  r.value = std::string(value);
  c.log().env.push_back(std::move(r));
  return true;
}

// A message is handled by the first row that matches it: its prefix, or `matches` when the
// prefix is empty. Order matters where texts overlap ("NET/IB : GPU Direct RDMA ..." is a GDR line).
struct MessageKind {
  std::string_view prefix;
  bool (*matches)(std::string_view message);
  bool (*handle)(NcclMessageContext& context, std::string_view message);
};

constexpr MessageKind kMessageKinds[] = {
    {"NCCL version ", nullptr, version_message},
    {"cudaDriverVersion ", nullptr, driver_message},
    {"Channel ", nullptr, channel_message},
    {"Ring ", nullptr, ring_message},
    {"Failed to open ", nullptr, ib_library_message},
    {"Trees ", nullptr, trees_message},
    {"Init timings", nullptr, init_timings_message},
    {"", is_comm_message, comm_message},
    {"", is_channel_count_message, channel_count_message},
    {"", is_gdr_message, gdr_message},
    {"NET/IB", nullptr, ib_message},
    {"NET/Socket", nullptr, socket_message},
    {"NET/Plugin", nullptr, plugin_message},
    {"Successfully loaded external", nullptr, plugin_message},
    {"Using network ", nullptr, using_network_message},
    {"Using internal Network ", nullptr, using_network_message},
    {"Bootstrap", nullptr, bootstrap_message},
    {"P2P is disabled between", nullptr, p2p_disabled_message},
    {"NVLS multicast support is ", nullptr, nvls_message},
    {"NCCL_", nullptr, env_message},
};

}  // namespace

bool NcclLogParser::parse_message(std::string_view m, const NcclOrigin& origin) {
  m = trim(m);
  if (m.empty()) return false;
  NcclMessageContext context{*this, origin};
  for (const MessageKind& kind : kMessageKinds) {
    const bool match = kind.prefix.empty() ? kind.matches(m) : m.starts_with(kind.prefix);
    if (match) return kind.handle(context, m);
  }
  for (std::string_view known : kKnownIgnored)
    if (m.starts_with(known)) return true;
  return false;
}

}  // namespace ferret
