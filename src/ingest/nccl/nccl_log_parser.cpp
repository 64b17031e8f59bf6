#include "ingest/nccl/nccl_log_parser.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "base/resident_memory.h"
#include "base/terminal_text.h"
#include "base/text.h"
#include "ingest/line_source.h"
#include "ingest/nccl/nccl_scan.h"

namespace ferret {

using namespace nccl_scan;  // this file is outside the unity build (CMakeLists.txt)

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
  LineSplitter lines(kMaxLineBytes);
  // Progress is an NCCL line: the byte offset after the last one (or the start).
  std::uint64_t progress_at_byte = 0;
  std::uint64_t nccl_lines_seen = 0;
  // feed_line truncates a line over kMaxLineBytes itself (and counts it): `cut` adds nothing.
  auto feed = [&](std::string_view line, bool /*cut*/, std::uint64_t line_end) {
    parser.feed_line(line);
    if (parser.source().nccl_lines == nccl_lines_seen) return true;
    nccl_lines_seen = parser.source().nccl_lines;
    progress_at_byte = line_end;
    if (limits.max_memory_bytes == 0 || nccl_lines_seen % kLinesPerMemoryCheck != 0) return true;
    const std::uint64_t held = resident_bytes();
    if (held <= limits.max_memory_bytes) return true;
    parser.source().stopped = fmt::format(
        "reading stopped at byte {} (NCCL line {}): ferret holds {} MiB, over --max-memory ({} MiB); what came "
        "before is kept",
        line_end, nccl_lines_seen, held >> 20, limits.max_memory_bytes >> 20);
    return false;
  };
  const ReadEnd end = read_chunks(source, [&](std::string_view chunk, std::uint64_t offset) {
    if (!lines.split(chunk, offset, feed)) {
      lines.drop_partial();
      return false;
    }
    const std::uint64_t bytes = offset + chunk.size();
    if (limits.max_bytes_without_progress == 0 || bytes - progress_at_byte <= limits.max_bytes_without_progress)
      return true;
    parser.source().stopped = fmt::format(
        "reading stopped at byte {}: {} bytes since {} without an NCCL line (limit {} bytes); what came before is "
        "kept",
        bytes, bytes - progress_at_byte,
        nccl_lines_seen == 0 ? std::string("the start") : fmt::format("byte {}", progress_at_byte),
        limits.max_bytes_without_progress);
    lines.drop_partial();
    return false;
  });
  lines.finish(end.bytes, feed);
  parser.source().bytes = end.bytes;
  parser.source().damage = end.damage;
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
