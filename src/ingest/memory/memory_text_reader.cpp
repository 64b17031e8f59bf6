#include "ingest/memory/memory_text_reader.h"

#include <charconv>
#include <cmath>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "base/input_error.h"
#include "base/text.h"
#include "base/units.h"
#include "ingest/byte_source.h"
#include "ingest/load_options.h"
#include "ingest/memory/allocator_snapshot_reader.h"

namespace ferret {

namespace {

constexpr std::string_view kOomMarker = "out of memory. Tried to allocate";
constexpr std::string_view kSummaryTitle = " memory summary, device ID";
constexpr std::size_t kOomTextBytes = 8 * 1024;  // a message with 64 processes listed fits
constexpr std::size_t kOomProcessesKept = 64;
constexpr std::uint64_t kSummaryBoxLines = 80;  // a full box is 47 lines
constexpr std::uint64_t kOomRepeatLines = 200;  // a re-raise prints the message again within a traceback

bool mt_is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
bool mt_is_digit(char c) { return c >= '0' && c <= '9'; }
bool mt_is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string_view mt_skip_blanks(std::string_view s) {
  while (!s.empty() && mt_is_space(s.front())) s.remove_prefix(1);
  return s;
}

// Sizes over 2^50 bytes (1 PiB, kMaxSnapshotBytes) are no device's memory: a corrupted number,
// taken as unreadable (-1) and counted here for the line's note (per thread: parsers run in
// Python threads at once).
thread_local std::uint64_t t_implausible_sizes = 0;

std::int64_t mt_scale(std::int64_t value, std::int64_t multiplier) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(value, multiplier, &r) || r > kMaxSnapshotBytes) {
    ++t_implausible_sizes;
    return -1;
  }
  return r;
}

std::int64_t mt_scale(double value, std::int64_t multiplier) {
  const double bytes = std::round(value * static_cast<double>(multiplier));
  if (!std::isfinite(bytes) || bytes < 0) return -1;
  if (bytes > static_cast<double>(kMaxSnapshotBytes)) {
    ++t_implausible_sizes;
    return -1;
  }
  return static_cast<std::int64_t>(bytes);
}

// A binary multiple by its printed unit; 0 when `unit` is none. torch prints KiB..PiB (older
// releases KB..PB for the same powers of 1024) and "B" or, in messages, "bytes".
std::int64_t mt_unit_bytes(std::string_view unit, bool* old_style = nullptr) {
  static constexpr std::pair<std::string_view, int> kUnits[] = {{"B", 0},    {"bytes", 0}, {"KiB", 10}, {"MiB", 20},
                                                                {"GiB", 30}, {"TiB", 40},  {"PiB", 50}, {"KB", 10},
                                                                {"MB", 20},  {"GB", 30},   {"TB", 40},  {"PB", 50}};
  for (const auto& [name, shift] : kUnits)
    if (unit == name) {
      if (old_style != nullptr && name.size() == 2) *old_style = true;
      return std::int64_t{1} << shift;
    }
  return 0;
}

// A number at the front of `s` (digits with at most one '.'), removed from it.
bool mt_take_number(std::string_view& s, double& value, std::int64_t& integer, bool& is_integer) {
  std::size_t n = 0, dots = 0;
  while (n < s.size() && (mt_is_digit(s[n]) || (s[n] == '.' && dots == 0))) dots += s[n++] == '.';
  if (n == 0 || !mt_is_digit(s[0])) return false;
  const std::string_view text = s.substr(0, n);
  is_integer = dots == 0;
  if (is_integer) {
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), integer);
    if (ec == std::errc::result_out_of_range)
      integer = INT64_MAX;
    else if (ec != std::errc{} || ptr != text.data() + text.size())
      return false;
    value = static_cast<double>(integer);
  } else {
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || ptr != text.data() + text.size()) return false;
  }
  s.remove_prefix(n);
  return true;
}

// "20.00 MiB", "0 bytes", "14324 MiB" at the front of `s` (after blanks), removed from it; -1 when
// there is none.
std::int64_t mt_take_size(std::string_view& s, bool* old_style = nullptr) {
  std::string_view t = mt_skip_blanks(s);
  double value = 0;
  std::int64_t integer = 0;
  bool is_integer = false;
  if (!mt_take_number(t, value, integer, is_integer)) return -1;
  t = mt_skip_blanks(t);
  std::size_t n = 0;
  while (n < t.size() && mt_is_alpha(t[n])) ++n;
  const std::int64_t multiplier = mt_unit_bytes(t.substr(0, n), old_style);
  if (multiplier == 0) return -1;
  s = t.substr(n);
  return is_integer ? mt_scale(integer, multiplier) : mt_scale(value, multiplier);
}

// The size written right before position `end` of `s` ("... 14.56 GiB| already allocated").
std::int64_t mt_size_before(std::string_view s, std::size_t end) {
  std::size_t i = end;
  while (i > 0 && mt_is_space(s[i - 1])) --i;
  std::size_t unit_start = i;
  while (unit_start > 0 && mt_is_alpha(s[unit_start - 1])) --unit_start;
  std::size_t number_start = unit_start;
  while (number_start > 0 && mt_is_space(s[number_start - 1])) --number_start;
  while (number_start > 0 && (mt_is_digit(s[number_start - 1]) || s[number_start - 1] == '.')) --number_start;
  std::string_view rest = s.substr(number_start, i - number_start);
  const std::int64_t v = mt_take_size(rest);
  return rest.empty() ? v : -1;
}

// The size right after the first `marker` in `s` at or after `from`; -1 when either is missing.
std::int64_t mt_size_after(std::string_view s, std::string_view marker, std::size_t from = 0) {
  const std::size_t at = s.find(marker, from);
  if (at == std::string_view::npos) return -1;
  std::string_view rest = s.substr(at + marker.size());
  return mt_take_size(rest);
}

std::int64_t mt_size_before_marker(std::string_view s, std::string_view marker) {
  const std::size_t at = s.find(marker);
  return at == std::string_view::npos ? -1 : mt_size_before(s, at);
}

// A non-negative integer at the front of `s` (after blanks); -1 when none.
std::int64_t mt_take_int(std::string_view s) {
  s = mt_skip_blanks(s);
  double value = 0;
  std::int64_t integer = -1;
  bool is_integer = false;
  if (!mt_take_number(s, value, integer, is_integer) || !is_integer) return -1;
  return integer;
}

int mt_device(std::int64_t v) { return v >= 0 && v <= 1 << 20 ? static_cast<int>(v) : -1; }

// A summary cell: a size ("14324 MiB", "0 B") or a count ("4102", "9 K").
std::int64_t mt_cell(std::string_view cell, bool size, bool& old_style) {
  cell = trim(cell);
  if (size) {
    std::string_view rest = cell;
    const std::int64_t v = mt_take_size(rest, &old_style);
    return trim(rest).empty() ? v : -1;
  }
  double value = 0;
  std::int64_t integer = 0;
  bool is_integer = false;
  if (!mt_take_number(cell, value, integer, is_integer) || !is_integer) return -1;
  cell = trim(cell);
  if (cell.empty()) return integer;
  if (cell == "K") return mt_scale(integer, 1000);
  if (cell == "M") return mt_scale(integer, 1000 * 1000);
  return -1;
}

bool mt_border(std::string_view inner, char c) {
  inner = trim(inner);
  if (inner.size() < 10) return false;
  for (char x : inner)
    if (x != c) return false;
  return true;
}

std::string mt_example(std::string_view text) {
  text = trim(text);
  return std::string(text.substr(0, 48)) + (text.size() > 48 ? "..." : "");
}

}  // namespace

// ---- summaries ------------------------------------------------------------------------------------

void MemoryTextParser::issue(const std::string& kind, std::string_view example, std::uint64_t line) {
  if (line == 0) line = line_;
  auto& [count, first] = issues_[kind];
  if (count++ == 0)
    first = example.empty() ? fmt::format("line {}", line) : fmt::format("line {}: \"{}\"", line, mt_example(example));
}

void MemoryTextParser::close_summary(bool complete) {
  if (!in_box_) return;
  in_box_ = false;
  box_.complete = complete;
  if (!complete) issue("memory summary cut short (its rows end before the closing border), kept as far as read");
  if (out_.summaries.size() < kMaxMemoryTextRecords)
    out_.summaries.push_back(box_);
  else
    ++out_.dropped_records;
  box_ = MemorySummary{};
}

void MemoryTextParser::summary_line(std::string_view line) {
  const std::size_t title = line.find(kSummaryTitle);
  if (title != std::string_view::npos && line.substr(0, title).find("PyTorch") != std::string_view::npos) {
    close_summary(false);
    in_box_ = true;
    box_ = MemorySummary{};
    box_.line = last_was_border_ ? line_ - 1 : line_;
    box_.device = mt_device(mt_take_int(line.substr(title + kSummaryTitle.size())));
    box_lines_ = 0;
    box_rows_ = 0;
    box_metric_ = -1;
    return;
  }
  const std::size_t first_bar = line.find('|');
  const std::size_t last_bar = line.rfind('|');
  const bool boxed = first_bar != std::string_view::npos && last_bar > first_bar;
  const std::string_view inner = boxed ? line.substr(first_bar + 1, last_bar - first_bar - 1) : std::string_view();
  last_was_border_ = boxed && mt_border(inner, '=');
  if (!in_box_) return;
  if (!boxed || ++box_lines_ > kSummaryBoxLines) {
    close_summary(false);
    return;
  }
  if (mt_border(inner, '=')) {
    if (box_rows_ > 0) close_summary(true);
    return;
  }
  if (mt_border(inner, '-')) return;
  if (inner.find("OOMs:") != std::string_view::npos) {
    const std::size_t ooms = inner.find("OOMs:");
    box_.ooms = mt_take_int(inner.substr(ooms + 5));
    const std::size_t retries = inner.find("retries:");
    if (retries != std::string_view::npos) box_.alloc_retries = mt_take_int(inner.substr(retries + 8));
    if (box_.ooms < 0 || box_.alloc_retries < 0) issue("memory summary OOMs / retries line not readable", inner);
    return;
  }
  if (inner.find("Cur Usage") != std::string_view::npos) return;
  // A metric row: name | cur | peak | tot alloc | tot freed.
  std::vector<std::string_view> cells;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= inner.size(); ++i)
    if (i == inner.size() || inner[i] == '|') {
      cells.push_back(inner.substr(start, i - start));
      start = i + 1;
    }
  const std::string_view name = trim(cells.front());
  SummaryStat* stat = nullptr;
  int metric = -1;
  if (name == "from large pool" || name == "from small pool") {
    if (box_metric_ < 0) {
      issue("memory summary pool row without its metric row, skipped", inner);
      return;
    }
    metric = box_metric_;
    SummaryRows& rows = box_.rows[static_cast<std::size_t>(metric)];
    stat = name == "from large pool" ? &rows.large_pool : &rows.small_pool;
  } else {
    for (std::size_t m = 0; m < kSummaryMetrics; ++m)
      if (name == summary_metric_name(static_cast<SummaryMetric>(m))) metric = static_cast<int>(m);
    if (metric < 0) {
      issue("memory summary row not a known metric, skipped", inner);
      box_metric_ = -1;
      return;
    }
    box_metric_ = metric;
    box_.rows[static_cast<std::size_t>(metric)].present = true;
    stat = &box_.rows[static_cast<std::size_t>(metric)].all;
  }
  ++box_rows_;
  if (cells.size() != 5) {
    issue("memory summary row without its 4 columns, skipped", inner);
    ++box_.bad_cells;
    return;
  }
  const bool size = summary_metric_is_size(static_cast<SummaryMetric>(metric));
  std::int64_t* targets[4] = {&stat->current, &stat->peak, &stat->allocated, &stat->freed};
  for (std::size_t c = 0; c < 4; ++c) {
    *targets[c] = mt_cell(cells[c + 1], size, box_.binary_kb);
    if (*targets[c] < 0) {
      ++box_.bad_cells;
      issue(size ? "memory summary cell not a size, taken as missing"
                 : "memory summary cell not a count, taken as missing",
            cells[c + 1]);
    }
  }
}

// ---- out-of-memory messages -----------------------------------------------------------------------

void MemoryTextParser::oom_line(std::string_view line) {
  const std::size_t at = line.find(kOomMarker);
  if (at != std::string_view::npos) {
    close_oom();
    in_oom_ = true;
    oom_ = OomMessage{};
    oom_.line = line_;
    // "... torch.OutOfMemoryError: CUDA out of memory": the backend, then the exception's name.
    std::string_view before = line.substr(0, at);
    while (!before.empty() && mt_is_space(before.back())) before.remove_suffix(1);
    std::size_t b = before.size();
    while (b > 0 && mt_is_alpha(before[b - 1])) --b;
    oom_.backend = std::string(before.substr(b, 8));
    before = before.substr(0, b);
    while (!before.empty() && mt_is_space(before.back())) before.remove_suffix(1);
    if (!before.empty() && before.back() == ':') {
      before.remove_suffix(1);
      std::size_t e = before.size();
      while (e > 0 &&
             (mt_is_alpha(before[e - 1]) || mt_is_digit(before[e - 1]) || before[e - 1] == '.' || before[e - 1] == '_'))
        --e;
      // An exception's name ("torch.OutOfMemoryError", "RuntimeError"), not a logger's words ("failed:").
      const std::string_view name = before.substr(e);
      if (name.find("Error") != std::string_view::npos || name.find("Exception") != std::string_view::npos)
        oom_.exception = std::string(name.substr(0, 80));
    }
    oom_text_.assign(line.substr(at, kOomTextBytes));
  } else if (in_oom_) {
    ++oom_.lines;
    if (oom_text_.size() < kOomTextBytes)
      oom_text_.append(" ").append(line.substr(0, kOomTextBytes - oom_text_.size()));
  } else {
    return;
  }
  const std::string_view t = oom_text_;
  const bool ended = t.find("reserved by PyTorch but unallocated") != std::string_view::npos ||
                     t.find("reserved in total by PyTorch") != std::string_view::npos ||
                     t.find(" cached)") != std::string_view::npos;
  if (ended || oom_.lines >= kOomMessageLines) close_oom();
}

void MemoryTextParser::close_oom() {
  if (!in_oom_) return;
  in_oom_ = false;
  OomMessage& o = oom_;
  const std::string_view t = oom_text_;
  std::string_view rest = t.substr(kOomMarker.size());
  o.requested = mt_take_size(rest);
  rest = mt_skip_blanks(rest);
  if (!rest.empty() && rest.front() == '(') {
    // torch 1.x: "(GPU 0; 15.78 GiB total capacity; 14.56 GiB already allocated; 3.44 MiB free; ...)".
    std::string_view inner =
        rest.substr(1, rest.find(')') == std::string_view::npos ? std::string_view::npos : rest.find(')') - 1);
    while (!inner.empty()) {
      const std::size_t semi = inner.find(';');
      const std::string_view part = trim(inner.substr(0, semi));
      inner = semi == std::string_view::npos ? std::string_view() : inner.substr(semi + 1);
      if (part.starts_with("GPU ")) {
        o.device = mt_device(mt_take_int(part.substr(4)));
        continue;
      }
      std::string_view label = part;
      const std::int64_t v = mt_take_size(label);
      label = trim(label);
      if (label == "total capacity")
        o.total_capacity = v;
      else if (label == "already allocated")
        o.allocated = v;
      else if (label == "free")
        o.device_free = v;
      else if (label == "allowed")
        o.allowed = v;
      else if (label == "reserved in total by PyTorch" || label == "cached")
        o.reserved = v;
    }
    if (o.reserved >= 0 && o.allocated >= 0)
      o.reserved_unallocated = std::max<std::int64_t>(0, saturating_sub(o.reserved, o.allocated));
  } else {
    // torch 2.x: sentences.
    o.torch2_wording = true;
    const std::size_t gpu = t.find("GPU ");
    if (gpu != std::string_view::npos) o.device = mt_device(mt_take_int(t.substr(gpu + 4)));
    o.total_capacity = mt_size_after(t, "total capacity of ");
    if (o.total_capacity < 0) o.total_capacity = mt_size_after(t, "total capacty of ");
    o.device_free = mt_size_after(t, " of which ");
    o.allowed = mt_size_before_marker(t, " allowed;");
    o.allocated = mt_size_after(t, "Of the allocated memory ");
    o.private_pools = mt_size_before_marker(t, " allocated in private pools");
    o.reserved_unallocated = mt_size_before_marker(t, " is reserved by PyTorch but unallocated");
    if (o.allocated >= 0 && o.reserved_unallocated >= 0)
      o.reserved = saturating_add(o.allocated, o.reserved_unallocated);
    o.process_in_use = mt_size_after(t, "this process has ");
    for (std::size_t p = t.find("Process "); p != std::string_view::npos; p = t.find("Process ", p + 8)) {
      std::string_view s = t.substr(p + 8);
      const std::int64_t pid = mt_take_int(s);
      const std::size_t has = s.find(" has ");
      if (pid < 0 || has == std::string_view::npos || has > 24) continue;
      s = s.substr(has + 5);
      const std::int64_t bytes = mt_take_size(s);
      if (bytes < 0) continue;
      if (o.processes.size() >= kOomProcessesKept) {
        issue("out-of-memory message listing over 64 processes: the rest not kept", {}, o.line);
        break;
      }
      o.processes.push_back({pid, bytes});
    }
    if (o.process_in_use < 0 && o.reserved >= 0) {
      for (std::size_t i = 0; i < o.processes.size(); ++i)
        if (o.processes[i].bytes >= o.reserved &&
            (o.self_index < 0 || o.processes[i].bytes < o.processes[static_cast<std::size_t>(o.self_index)].bytes))
          o.self_index = static_cast<int>(i);
      if (o.self_index >= 0) o.process_in_use = o.processes[static_cast<std::size_t>(o.self_index)].bytes;
    }
  }
  if (o.requested < 0 || o.device < 0 || o.total_capacity < 0 || o.allocated < 0 || o.reserved < 0)
    issue("out-of-memory message missing some of its numbers (kept with what it says)", t, o.line);
  // The same message again soon after (a re-raise, an exception logged twice) is one event.
  if (!out_.ooms.empty()) {
    OomMessage& prev = out_.ooms.back();
    if (o.line - last_oom_line_ <= kOomRepeatLines && prev.backend == o.backend && prev.device == o.device &&
        prev.requested == o.requested && prev.total_capacity == o.total_capacity && prev.device_free == o.device_free &&
        prev.allocated == o.allocated && prev.reserved == o.reserved) {
      ++prev.repeats;
      last_oom_line_ = o.line;  // repeats are measured from the latest copy
      return;
    }
  }
  last_oom_line_ = o.line;
  if (out_.ooms.size() < kMaxMemoryTextRecords)
    out_.ooms.push_back(std::move(o));
  else
    ++out_.dropped_records;
}

// ---- lines ----------------------------------------------------------------------------------------

void MemoryTextParser::feed_line(std::string_view line) {
  ++line_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > kMaxMemoryTextLineBytes) {
    line = line.substr(0, kMaxMemoryTextLineBytes);
    ++out_.long_lines;
  }
  const std::uint64_t implausible = t_implausible_sizes;
  summary_line(line);
  oom_line(line);
  if (t_implausible_sizes != implausible)
    issue("size over 2^50 bytes (1 PiB), no device's memory, taken as unreadable", line);
}

void MemoryTextParser::finish() {
  const std::uint64_t implausible = t_implausible_sizes;
  close_summary(false);
  close_oom();
  if (t_implausible_sizes != implausible)
    issue("size over 2^50 bytes (1 PiB), no device's memory, taken as unreadable", oom_text_);
  out_.lines = line_;
  if (out_.long_lines > 0)
    out_.notes.push_back(
        fmt::format("{} lines over {} KiB cut to that length", out_.long_lines, kMaxMemoryTextLineBytes >> 10));
  if (out_.dropped_records > 0)
    out_.notes.push_back(fmt::format("{} summaries or messages past the first {} not kept", out_.dropped_records,
                                     kMaxMemoryTextRecords));
  for (const auto& [kind, seen] : issues_)
    out_.notes.push_back(fmt::format("{} x {} (first at {})", seen.first, kind, seen.second));
  issues_.clear();
}

MemoryText parse_memory_text(std::string_view text, const std::string& name) {
  MemoryText out;
  out.source = name;
  out.bytes = text.size();
  MemoryTextParser parser(out);
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    parser.feed_line(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  parser.finish();
  return out;
}

// ---- sniffing -------------------------------------------------------------------------------------

namespace {

bool mt_is_pickle(std::string_view first) { return !first.empty() && static_cast<unsigned char>(first[0]) == 0x80; }

void mt_require_content(const MemoryText& text) {
  if (!text.summaries.empty() || !text.ooms.empty()) return;
  throw InputError(fmt::format(
      "{}: neither an allocator snapshot (a pickle starts with byte 0x80, after gzip/zstd) nor text holding a "
      "torch.cuda.memory_summary() table (\"PyTorch CUDA memory summary, device ID\") or an out-of-memory message "
      "(\"out of memory. Tried to allocate\"); {} lines read",
      text.source, text.lines));
}

}  // namespace

MemoryInput read_memory_input_bytes(const std::string& bytes, const std::string& name, std::uint64_t max_bytes) {
  MemoryInput in;
  if (mt_is_pickle(bytes)) {
    in.is_snapshot = true;
    in.snapshot = read_allocator_snapshot_bytes(bytes, name, max_bytes);
    return in;
  }
  in.text = parse_memory_text(bytes, name);
  mt_require_content(in.text);
  return in;
}

MemoryInput read_memory_input(const std::string& path, std::uint64_t max_bytes) {
  const std::uint64_t bound = max_bytes > 0 ? max_bytes : default_max_memory_bytes();
  OpenedSource opened = open_byte_source(path);
  ByteSource& source = *opened.source;
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::vector<char> buffer(kChunk);
  std::size_t n = source.read(buffer.data(), kChunk);
  MemoryInput in;
  if (mt_is_pickle(std::string_view(buffer.data(), n))) {
    in.is_snapshot = true;
    const std::string bytes = read_snapshot_bytes(source, std::string(buffer.data(), n), path, bound);
    const std::string damage = source.damage();
    in.snapshot = read_allocator_snapshot_bytes(bytes, path, bound);
    if (!damage.empty()) in.snapshot.notes.push_back(damage);
    return in;
  }
  // Text: streamed line by line; a line longer than the bound is cut and the rest of it skipped.
  MemoryText& text = in.text;
  text.source = path;
  MemoryTextParser parser(text);
  std::string carry;
  bool cutting = false;  // inside a line already cut: drop until its newline
  std::uint64_t records_seen = 0, progress_at = 0;
  std::string stopped;
  while (n > 0) {
    text.bytes += n;
    std::string_view chunk(buffer.data(), n);
    while (!chunk.empty()) {
      const std::size_t nl = chunk.find('\n');
      const std::string_view piece = chunk.substr(0, nl);
      if (!cutting) {
        if (carry.size() + piece.size() > kMaxMemoryTextLineBytes) {
          // carry holds at most the bound here: one byte past it tells feed_line to cut and count.
          carry.append(piece.substr(0, kMaxMemoryTextLineBytes + 1 - carry.size()));
          cutting = true;
        } else {
          carry.append(piece);
        }
      }
      if (nl == std::string_view::npos) break;
      parser.feed_line(carry);
      carry.clear();
      cutting = false;
      chunk.remove_prefix(nl + 1);
    }
    if (parser.records() != records_seen) {
      records_seen = parser.records();
      progress_at = text.bytes;
    }
    if (text.bytes - progress_at > kMemoryTextBytesWithoutProgress) {
      stopped = fmt::format("reading stopped after {} MiB without a summary or an out-of-memory message",
                            kMemoryTextBytesWithoutProgress >> 20);
      break;
    }
    n = source.read(buffer.data(), kChunk);
  }
  if (!carry.empty() && stopped.empty()) parser.feed_line(carry);
  parser.finish();
  if (!stopped.empty()) text.notes.push_back(stopped);
  if (!source.damage().empty()) text.notes.push_back(source.damage());
  mt_require_content(text);
  return in;
}

}  // namespace ferret
