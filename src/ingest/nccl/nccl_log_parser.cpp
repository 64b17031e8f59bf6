#include "ingest/nccl/nccl_log_parser.h"
#include "base/text.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "base/resident_memory.h"
#include "base/terminal_text.h"

namespace ferret {

namespace {

// ---- string_view scanning -----------------------------------------------------------------------

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }
bool is_decimal_digit(char c) { return c >= '0' && c <= '9'; }

// Removes `prefix` (after leading blanks) from `s`; false when it is not there.
bool consume(std::string_view& s, std::string_view prefix) {
  std::string_view t = s;
  while (!t.empty() && is_space(t.front())) t.remove_prefix(1);
  if (!t.starts_with(prefix)) return false;
  s = t.substr(prefix.size());
  return true;
}

void skip_blanks(std::string_view& s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
}

// A signed decimal integer at the front of `s` (after blanks).
bool take_int(std::string_view& s, int& out) {
  skip_blanks(s);
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  if (ec != std::errc{} || ptr == s.data()) return false;
  s.remove_prefix(static_cast<std::size_t>(ptr - s.data()));
  return true;
}

bool take_double(std::string_view& s, double& out) {
  skip_blanks(s);
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out, std::chars_format::general);
  if (ec != std::errc{} || ptr == s.data()) return false;
  s.remove_prefix(static_cast<std::size_t>(ptr - s.data()));
  return true;
}

// The next blank-separated token.
std::string_view take_token(std::string_view& s) {
  skip_blanks(s);
  std::size_t n = 0;
  while (n < s.size() && !is_space(s[n])) ++n;
  std::string_view token = s.substr(0, n);
  s.remove_prefix(n);
  return token;
}

// The last blank-separated token of `s`, removed from it.
// A launcher prefix without its trailing separators ("[1,0]<stdout>:" -> "[1,0]<stdout>"), so
// that bare lines ("[1,0]<stdout>:NCCL version ...") and prefixed ones compare equal.
std::string_view launcher_prefix(std::string_view s) {
  s = trim(s);
  while (!s.empty() && (s.back() == ':' || is_space(s.back()))) s.remove_suffix(1);
  return s;
}

std::string_view pop_last_token(std::string_view& s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  std::size_t n = s.size();
  while (n > 0 && !is_space(s[n - 1])) --n;
  std::string_view token = s.substr(n);
  s = s.substr(0, n);
  return token;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_decimal_digit(c)) return false;
  return true;
}

// The whole token as an int: "1e9" or "8x" is not 1 or 8 (from_chars alone reads a prefix).
int to_int(std::string_view s, int fallback = -1) {
  int v = fallback;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && ptr == s.data() + s.size() ? v : fallback;
}

// "`[3]`" -> 3 (NCCL prints the CUDA device in brackets).
bool bracketed_int(std::string_view token, int& out) {
  if (token.size() < 3 || token.front() != '[' || token.back() != ']') return false;
  std::string_view inner = token.substr(1, token.size() - 2);
  if (!inner.empty() && inner.front() == '-') inner.remove_prefix(1);
  if (!all_digits(inner)) return false;
  out = to_int(token.substr(1, token.size() - 2));
  return true;
}

// "host:pid:tid", possibly glued to a launcher prefix ("[1,0]<stdout>:host:12:34"): host is the
// text between the third-to-last ':' (or the start) and pid; `outer` gets what precedes it.
bool split_host_pid_tid(std::string_view token, std::string_view& host, int& pid, int& tid, std::string_view& outer) {
  const std::size_t tid_colon = token.rfind(':');
  if (tid_colon == std::string_view::npos || tid_colon == 0) return false;
  const std::string_view tid_text = token.substr(tid_colon + 1);
  const std::size_t pid_colon = token.rfind(':', tid_colon - 1);
  if (pid_colon == std::string_view::npos || pid_colon == 0) return false;
  const std::string_view pid_text = token.substr(pid_colon + 1, tid_colon - pid_colon - 1);
  if (!all_digits(tid_text) || !all_digits(pid_text)) return false;
  const std::size_t host_colon = token.rfind(':', pid_colon - 1);
  const std::size_t host_start = host_colon == std::string_view::npos ? 0 : host_colon + 1;
  host = token.substr(host_start, pid_colon - host_start);
  if (host.empty()) return false;
  outer = host_colon == std::string_view::npos ? std::string_view() : token.substr(0, host_colon);
  pid = to_int(pid_text);
  tid = to_int(tid_text);
  return true;
}

// ---- transports -----------------------------------------------------------------------------------

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
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

NcclTransport parse_nccl_transport(std::string_view via) {
  NcclTransport t;
  via = trim(via);
  t.text = std::string(via);
  const std::vector<std::string_view> parts = split(via, '/');
  const std::string_view head = parts.empty() ? std::string_view() : parts.front();
  if (head == "P2P") {
    t.kind = NcclTransportKind::kP2P;
    if (parts.size() > 1) t.p2p_mode = std::string(parts[1]);
  } else if (head == "SHM") {
    t.kind = NcclTransportKind::kShm;
  } else if (head == "NET") {
    t.kind = NcclTransportKind::kNet;
    if (parts.size() > 1) t.net = std::string(parts[1]);
    if (parts.size() > 2) {
      // "0", "1(0)" (PXN: NIC 1 through the proxy of GPU 0)
      std::string_view dev = parts[2];
      int n = -1;
      if (take_int(dev, n)) t.net_dev = n;
    }
  } else if (head.starts_with("COLLNET") || head.starts_with("CollNet")) {
    t.kind = NcclTransportKind::kCollNet;
  } else if (head.starts_with("NVLS")) {
    t.kind = NcclTransportKind::kNvls;
  }
  for (std::size_t i = 1; i < parts.size(); ++i)
    if (parts[i].starts_with("GDRDMA")) t.gdr = true;
  return t;
}

// ---- the line parser ------------------------------------------------------------------------------

NcclLogParser::NcclLogParser(NcclLog& log, std::string source_name, std::string compression) : log_(log) {
  NcclSource s;
  s.name = std::move(source_name);
  s.compression = std::move(compression);
  log_.sources.push_back(std::move(s));
  source_index_ = static_cast<std::uint32_t>(log_.sources.size() - 1);
  // Earlier sources of the same log interned names already.
  for (std::uint32_t i = 0; i < log_.hosts.size(); ++i) host_index_.emplace(log_.hosts[i], i);
  for (std::uint32_t i = 0; i < log_.transports.size(); ++i) transport_index_.emplace(log_.transports[i].text, i);
}

NcclSource& NcclLogParser::source() { return log_.sources[source_index_]; }

std::uint32_t NcclLogParser::intern_host(std::string_view host) {
  // Lines of one host come in runs: check the last one first.
  if (last_host_ < log_.hosts.size() && log_.hosts[last_host_] == host) return last_host_;
  const auto [it, added] = host_index_.try_emplace(std::string(host), static_cast<std::uint32_t>(log_.hosts.size()));
  if (added) log_.hosts.emplace_back(host);
  return last_host_ = it->second;
}

std::uint32_t NcclLogParser::intern_transport(std::string_view via) {
  via = trim(via);
  const auto [it, added] =
      transport_index_.try_emplace(std::string(via), static_cast<std::uint32_t>(log_.transports.size()));
  if (added) log_.transports.push_back(parse_nccl_transport(via));
  return it->second;
}

void NcclLogParser::note_implausible(const NcclOrigin& origin, std::string what) {
  NcclSource& src = source();
  ++src.implausible_lines;
  if (src.implausible_samples.size() < kMaxImplausibleSamples)
    src.implausible_samples.push_back(fmt::format("{}:{}: {}", src.name, origin.line, what));
}

namespace {

// Why a rank / nranks pair cannot come from a real job; "" when it can.
std::string implausible_ranks(int rank, int nranks) {
  if (nranks > kMaxNcclRanks)
    return fmt::format("nranks {} above {} (the largest job ferret accepts): line ignored", nranks, kMaxNcclRanks);
  if (rank < 0 || rank >= nranks) return fmt::format("rank {} outside 0..{}: line ignored", rank, nranks - 1);
  return "";
}

}  // namespace

void NcclLogParser::remember_process(std::string_view outer, const NcclOrigin& origin) {
  last_any_ = origin;
  for (LastProcess& p : last_process_)
    if (p.outer == outer) {
      p.origin = origin;
      return;
    }
  if (last_process_.size() < 4096) last_process_.push_back({std::string(outer), origin});
}

bool NcclLogParser::attribute_bare(std::string_view outer, NcclOrigin& origin) const {
  // Same launcher prefix first; prefixes that change every line (timestamps) fall back to the
  // last process seen at all.
  const NcclOrigin* from = last_any_.host == kNoHost ? nullptr : &last_any_;
  for (const LastProcess& p : last_process_)
    if (p.outer == outer) from = &p.origin;
  if (from == nullptr) return false;
  origin.host = from->host;
  origin.pid = from->pid;
  origin.tid = from->tid;
  origin.dev = from->dev;
  origin.inferred = true;
  return true;
}

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

namespace {

// Where the NCCL part of a line starts: " NCCL INFO", " NCCL WARN" or a bare "NCCL version ".
struct NcclMarker {
  std::size_t at = std::string_view::npos;  // npos: not an NCCL line
  bool warn = false;
  bool bare_version = false;
};

NcclMarker find_marker(std::string_view line) {
  NcclMarker marker;
  const char* data = line.data();
  for (std::size_t from = 0; from + 5 <= line.size();) {
    const void* hit = ::memmem(data + from, line.size() - from, "NCCL ", 5);
    if (hit == nullptr) break;
    const std::size_t pos = static_cast<std::size_t>(static_cast<const char*>(hit) - data);
    const std::string_view after = line.substr(pos + 5);
    const bool boundary =
        pos == 0 || is_space(line[pos - 1]) || line[pos - 1] == ':' || line[pos - 1] == ']' || line[pos - 1] == ')';
    if (boundary && (after.starts_with("INFO") || after.starts_with("WARN"))) {
      marker.at = pos;
      marker.warn = after.starts_with("WARN");
      return marker;
    }
    // Bare version (printed without a prefix): only a launcher prefix may precede it, and the
    // version ends the line. Torch's error messages ("... NCCL version 2.19.3") fail the first test.
    if (boundary && after.starts_with("version ") && pos <= 64 && contains(line.substr(pos), "+cuda")) {
      marker.at = pos;
      marker.bare_version = true;
      return marker;
    }
    from = pos + 5;
  }
  return marker;
}

// "file.cc:123 (func)" or "file.cc:123" at the end of what precedes a WARN marker: the location,
// removed from `pre` ("" when it is not there).
std::string_view take_warn_location(std::string_view& pre) {
  std::string_view probe = pre;
  std::string_view token = pop_last_token(probe);
  if (token.size() > 2 && token.front() == '(' && token.back() == ')') {
    pre = probe;
    token = pop_last_token(probe);
  }
  if (!token.empty() && token.find(':') != std::string_view::npos && is_decimal_digit(token.back()) &&
      (token.find('.') != std::string_view::npos || token.find('/') != std::string_view::npos)) {
    pre = probe;
    return token;
  }
  return {};
}

// "[3]" at the end of `pre`: the CUDA device, removed from `pre`.
void take_device(std::string_view& pre, NcclOrigin& origin) {
  std::string_view probe = pre;
  int dev = -1;
  if (bracketed_int(pop_last_token(probe), dev)) {
    origin.dev = dev;
    pre = probe;
  }
}

}  // namespace

void NcclLogParser::take_process(std::string_view line, std::string_view pre, NcclOrigin& origin) {
  std::string_view probe = pre;
  const std::string_view token = pop_last_token(probe);
  std::string_view host, glued_outer;
  int pid = -1, tid = -1;
  if (!split_host_pid_tid(token, host, pid, tid, glued_outer)) return;
  origin.host = intern_host(host);
  origin.pid = pid;
  origin.tid = tid;
  // The launcher prefix: what came before the host (glued to it or separated by a blank).
  const std::string_view outer =
      glued_outer.empty()
          ? probe
          : line.substr(0, static_cast<std::size_t>(glued_outer.data() + glued_outer.size() - line.data()));
  remember_process(launcher_prefix(outer), origin);
}

void NcclLogParser::feed_line(std::string_view line) {
  NcclSource& src = source();
  ++line_number_;
  ++src.lines;
  if (line.size() > kMaxLineBytes) {
    line = line.substr(0, kMaxLineBytes);
    ++src.long_lines;
  }
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  if (line.size() < 12) return;
  const NcclMarker marker = find_marker(line);
  if (marker.at == std::string_view::npos) return;
  // Ranks writing to one stream glue lines together mid-line ("... Ring 00host:12:34 [1] NCCL
  // INFO ..."): a second NCCL marker with its own host:pid:tid prefix starts a line of its own.
  if (const std::size_t split = interleaved_split(line, marker.at); split != std::string_view::npos) {
    ++src.interleaved_lines;
    const std::string_view first = line.substr(0, split), rest = line.substr(split);
    const NcclMarker a = find_marker(first), b = find_marker(rest);
    feed_nccl_part(first, a.at, a.warn, a.bare_version);
    feed_nccl_part(rest, b.at, b.warn, b.bare_version);
    return;
  }
  feed_nccl_part(line, marker.at, marker.warn, marker.bare_version);
}

std::size_t NcclLogParser::interleaved_split(std::string_view line, std::size_t first_marker) const {
  const std::size_t from = first_marker + 9;
  if (from >= line.size()) return std::string_view::npos;
  const NcclMarker next = find_marker(line.substr(from));
  if (next.at == std::string_view::npos || next.bare_version) return std::string_view::npos;
  // Back from the second marker: blanks, an optional "[dev]", blanks, then the host:pid:tid token.
  std::size_t end = from + next.at;
  while (end > from && is_space(line[end - 1])) --end;
  if (end > from && line[end - 1] == ']') {
    std::size_t open = end - 1;
    while (open > from && line[open - 1] != '[') --open;
    if (open == from) return std::string_view::npos;
    end = open - 1;
    while (end > from && is_space(line[end - 1])) --end;
  }
  std::size_t start = end;
  while (start > from && !is_space(line[start - 1])) --start;
  std::string_view token = line.substr(start, end - start);
  std::string_view host, outer;
  int pid = -1, tid = -1;
  if (!split_host_pid_tid(token, host, pid, tid, outer)) return std::string_view::npos;
  // Glued to the first line's text ("00host"): a host seen before ends the token's head.
  const std::string_view head = token.substr(0, token.find(':'));
  for (const std::string& known : log_.hosts)
    if (!known.empty() && known.size() < head.size() && head.ends_with(known))
      return start + head.size() - known.size();
  return start > from ? start : std::string_view::npos;
}

void NcclLogParser::feed_nccl_part(std::string_view line, std::size_t marker_at, bool warn, bool bare_version) {
  NcclSource& src = source();
  if (marker_at == std::string_view::npos) return;
  const NcclMarker marker{marker_at, warn, bare_version};
  ++src.nccl_lines;

  NcclOrigin origin;
  origin.source = source_index_;
  origin.line = line_number_;
  std::string_view pre = line.substr(0, marker.at);
  if (marker.bare_version) {
    attribute_bare(launcher_prefix(pre), origin);
    if (parse_message(line.substr(marker.at), origin))
      ++src.recognised;
    else
      ++src.not_understood;
    return;
  }
  // The prefix is read from the right: [location (WARN)], [device], host:pid:tid, launcher text.
  const std::string_view where = marker.warn ? take_warn_location(pre) : std::string_view();
  take_device(pre, origin);
  take_process(line, pre, origin);

  std::string_view message = line.substr(marker.at + 9);  // after "NCCL INFO" / "NCCL WARN"
  bool understood = false;
  if (marker.warn) {
    NcclWarnRecord r;
    r.origin = origin;
    r.where = std::string(where);
    r.message = terminal_safe(trim(message));  // display text: a binary line cannot garble a report
    // A P2P check that fails says so as a WARN.
    if (r.message.starts_with("P2P is disabled between")) parse_message(r.message, origin);
    log_.warnings.push_back(std::move(r));
    understood = true;
  } else {
    understood = parse_message(message, origin);
  }
  if (understood) {
    ++src.recognised;
  } else {
    ++src.not_understood;
    if (log_.not_understood_samples.size() < 5)
      log_.not_understood_samples.push_back(terminal_safe(trim(message).substr(0, 160)));
  }
}

// ---- sources --------------------------------------------------------------------------------------

namespace {

// Resident memory is read once per this many NCCL lines: cheap next to parsing them.
constexpr std::uint64_t kLinesPerMemoryCheck = 8192;

}  // namespace

void parse_nccl_source(ByteSource& source, const std::string& name, const std::string& compression, NcclLog& log,
                       const NcclReadLimits& limits) {
  NcclLogParser parser(log, name, compression);
  constexpr std::size_t kChunk = 1 << 20;
  std::unique_ptr<char[]> buffer(new char[kChunk]);
  std::string carry;       // a line split across chunks
  bool carry_cut = false;  // the carried line is over kMaxLineBytes: the rest is dropped
  std::uint64_t bytes = 0;
  // Progress is an NCCL line: the byte offset after the last one (or the start).
  std::uint64_t progress_at_byte = 0;
  std::uint64_t nccl_lines_seen = 0;
  std::uint64_t line_end = 0;  // byte offset just past the line being fed
  bool over_memory = false;
  auto feed = [&](std::string_view line) {
    parser.feed_line(line);
    if (parser.source().nccl_lines != nccl_lines_seen) {
      nccl_lines_seen = parser.source().nccl_lines;
      progress_at_byte = line_end;
      if (limits.max_memory_bytes > 0 && nccl_lines_seen % kLinesPerMemoryCheck == 0) {
        const std::uint64_t held = resident_bytes();
        if (held > limits.max_memory_bytes) {
          parser.source().stopped = fmt::format(
              "reading stopped at byte {} (NCCL line {}): ferret holds {} MiB, over --max-memory ({} MiB); what "
              "came before is kept",
              line_end, nccl_lines_seen, held >> 20, limits.max_memory_bytes >> 20);
          over_memory = true;
        }
      }
    }
  };
  while (true) {
    std::size_t n = 0;
    try {
      n = source.read(buffer.get(), kChunk);
    } catch (const InputError& e) {
      if (bytes == 0) throw;
      parser.source().damage = e.what();
      break;
    }
    if (n == 0) break;
    const std::uint64_t chunk_start = bytes;
    bytes += n;
    std::string_view chunk(buffer.get(), n);
    while (!chunk.empty()) {
      const void* nl = std::memchr(chunk.data(), '\n', chunk.size());
      const std::size_t len = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - chunk.data()) : chunk.size();
      const std::string_view piece = chunk.substr(0, len);
      if (nl == nullptr) {
        // Keep at most one byte past the limit, so that feed_line sees the line as too long.
        if (carry.size() <= kMaxLineBytes)
          carry.append(piece.substr(0, kMaxLineBytes + 1 - carry.size()));
        else
          carry_cut = true;
        break;
      }
      line_end = chunk_start + static_cast<std::uint64_t>(piece.data() - buffer.get()) + len + 1;
      if (carry.empty() && !carry_cut) {
        feed(piece);
      } else {
        if (carry.size() <= kMaxLineBytes) carry.append(piece.substr(0, kMaxLineBytes + 1 - carry.size()));
        feed(carry);
        carry.clear();
        carry_cut = false;
      }
      chunk.remove_prefix(len + 1);
      if (over_memory) break;
    }
    if (over_memory) {
      carry.clear();
      break;
    }
    if (limits.max_bytes_without_progress > 0 && bytes - progress_at_byte > limits.max_bytes_without_progress) {
      parser.source().stopped = fmt::format(
          "reading stopped at byte {}: {} bytes since {} without an NCCL line (limit {} bytes); what came before "
          "is kept",
          bytes, bytes - progress_at_byte,
          nccl_lines_seen == 0 ? std::string("the start") : fmt::format("byte {}", progress_at_byte),
          limits.max_bytes_without_progress);
      carry.clear();
      break;
    }
  }
  if (!carry.empty()) {
    line_end = bytes;
    feed(carry);
  }
  parser.source().bytes = bytes;
  if (parser.source().damage.empty()) parser.source().damage = source.damage();
}

void parse_nccl_file(const std::string& path, NcclLog& log, const NcclReadLimits& limits) {
  OpenedSource opened = open_byte_source(path);
  parse_nccl_source(*opened.source, path, opened.compression, log, limits);
}

NcclLog parse_nccl_text(std::string_view text, const std::string& name, const NcclReadLimits& limits) {
  NcclLog log;
  std::unique_ptr<ByteSource> source = make_memory_source(std::string(text));
  parse_nccl_source(*source, name, "none", log, limits);
  return log;
}

}  // namespace ferret
