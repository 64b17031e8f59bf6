// nvidia-smi's default table (nvidia-smi, nvidia-smi -l S, a Slurm log's tables).
#include "ingest/smi/smi_reader.h"

#include <fmt/format.h>

#include "base/terminal_text.h"
#include "base/text.h"

namespace ferret {

namespace {

// ---- nvidia-smi's default table --------------------------------------------------------------------

// `nvidia-smi` without arguments (or with -l S, or in a loop of a job script) prints one boxed
// table per run:
//
//   Sun Dec  6 10:15:01 2026
//   +---------------------------------------------------------------------------------------+
//   | NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
//   |-----------------------------------------+----------------------+----------------------+
//   | GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
//   | Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
//   |=========================================+======================+======================|
//   |   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |
//   | N/A   33C    P0              62W / 400W |      4MiB / 81920MiB |      0%      Default |
//   |                                         |                      |             Disabled |
//   +-----------------------------------------+----------------------+----------------------+
//   | Processes: ...
//
// Column widths, heading lines and the MIG-mode line differ between driver generations, so rows
// are read by their `|` cells and the units of their values, never by position: a GPU's first
// line starts with its index and holds a PCI bus id, the next table line holds its readings.

constexpr std::string_view kSmiMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::string_view kSmiWeekdays[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

// The table's date line, C's asctime without a zone ("Sun Dec  6 10:15:01 2026"), alone or at the
// end of `watch`'s header ("Every 2.0s: nvidia-smi   host: Sun Dec  6 10:15:01 2026"): ns as if
// UTC, kSmiNoTime for any other line (`date` prints a zone and is not taken for the table's time).
std::int64_t smi_table_date(std::string_view line) {
  // Every line of a Slurm log is asked: the short test first (watch pads its header to the width
  // of the terminal, a few hundred columns at most).
  constexpr std::size_t kSmiLongestDateLine = 512;
  if (line.size() > kSmiLongestDateLine || line.find(':') == std::string_view::npos) return kSmiNoTime;
  const std::vector<std::string_view> words = smi_words(line);
  if (words.size() < 5) return kSmiNoTime;
  if (words.size() > 5 && !(words.front() == "Every" && contains(line, "nvidia-smi"))) return kSmiNoTime;
  const std::string_view* w = words.data() + (words.size() - 5);
  if (std::find(std::begin(kSmiWeekdays), std::end(kSmiWeekdays), w[0]) == std::end(kSmiWeekdays)) return kSmiNoTime;
  const auto month = std::find(std::begin(kSmiMonths), std::end(kSmiMonths), w[1]);
  if (month == std::end(kSmiMonths)) return kSmiNoTime;
  unsigned day = 0;
  if (w[2].empty() || w[2].size() > 2 || !smi_digits(w[2], w[2].size(), day) || w[4].size() != 4) return kSmiNoTime;
  return parse_smi_time(fmt::format("{}-{:02}-{:02} {}", w[4], month - std::begin(kSmiMonths) + 1, day, w[3]));
}

// `watch nvidia-smi` redirected to a file writes terminal control sequences (cursor moves, screen
// clears) around its screens: they are dropped before the line is read.
std::string smi_without_escapes(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\x1b') {
      out += line[i];
      continue;
    }
    if (i + 1 >= line.size()) break;
    const char kind = line[i + 1];
    if (kind == '[') {  // CSI: parameter bytes, then one final byte 0x40-0x7e
      i += 2;
      while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7e)) ++i;
    } else if (kind == ']') {  // OSC: up to BEL or ESC-backslash
      i += 2;
      while (i < line.size() && line[i] != '\x07' && line[i] != '\x1b') ++i;
      if (i < line.size() && line[i] == '\x1b') ++i;
    } else if (kind == '(' || kind == ')') {  // character set: ESC ( B
      i += 2;
    } else {
      i += 1;
    }
  }
  return out;
}

bool smi_hex(std::string_view s) {
  if (s.empty() || s.size() > 8) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  return true;
}

// A PCI bus id as the table prints it: 00000000:07:00.0 (older drivers: 0000:07:00.0).
bool smi_pci_bus_id(std::string_view w) {
  const std::size_t dot = w.rfind('.');
  if (dot == std::string_view::npos || dot + 2 != w.size() || !smi_hex(w.substr(dot + 1))) return false;
  const std::vector<std::string_view> parts = smi_split(w.substr(0, dot), ':');
  return parts.size() == 3 && smi_hex(parts[0]) && smi_hex(parts[1]) && smi_hex(parts[2]);
}

// The cells of a table line `| a | b | c |`, empty when the line is not one.
std::vector<std::string_view> smi_table_cells(std::string_view t) {
  if (t.size() < 2 || t.front() != '|' || t.back() != '|') return {};
  return smi_split(t.substr(1, t.size() - 2), '|');
}

// The table's own lines that hold no reading: borders (`+---+`, `|===|`), column headings and the
// MIG-mode line under a GPU's readings (every cell blank but the last).
bool smi_table_furniture(std::string_view t, const std::vector<std::string_view>& cells) {
  if (t.find_first_not_of(" |+-=") == std::string_view::npos) return true;
  for (const std::string_view heading :
       {"Persistence-M", "Bus-Id", "Memory-Usage", "GPU-Util", "MIG M.", "Compute M.", "Pwr:Usage", "Uncorr. ECC"})
    if (contains(t, heading)) return true;
  if (cells.empty()) return false;
  for (std::size_t i = 0; i + 1 < cells.size(); ++i)
    if (!cells[i].empty()) return false;
  return true;
}

// A GPU's first line: `|   0  NVIDIA A100-SXM4-80GB  On  | 00000000:07:00.0 Off |   0 |`.
struct SmiTableGpu {
  bool open = false;
  std::uint64_t line = 0;
  std::string index, name, bus_id;
};

bool smi_table_gpu_line(const std::vector<std::string_view>& cells, SmiTableGpu& out) {
  if (cells.size() < 3) return false;
  const std::vector<std::string_view> words = smi_words(cells[0]);
  if (words.size() < 2 || words[0].size() > 6) return false;
  unsigned index = 0;
  if (!smi_digits(words[0], words[0].size(), index)) return false;
  std::string_view bus;
  for (const std::string_view w : smi_words(cells[1]))
    if (smi_pci_bus_id(w)) bus = w;
  if (bus.empty()) return false;
  std::size_t name_end = words.size();
  if (name_end > 2 && (words.back() == "On" || words.back() == "Off")) --name_end;  // persistence mode
  out = SmiTableGpu{};
  out.open = true;
  out.index = std::string(words[0]);
  out.bus_id = std::string(bus);
  for (std::size_t i = 1; i < name_end; ++i) out.name += (i > 1 ? " " : "") + std::string(words[i]);
  out.name = out.name.substr(0, 128);
  return true;
}

class SmiTableReader : public SmiReader {
 public:
  SmiTableReader(SmiLog& log, SmiSource& src, const SmiReadOptions& options) : SmiReader(log, src, options) {
    source().columns = {"index",     "name",        "bus id",       "temperature", "power draw",
                        "power cap", "memory used", "memory total", "GPU-Util"};
  }

  void line(std::string_view raw) override {
    std::string clean;
    if (raw.find('\x1b') != std::string_view::npos) {
      clean = smi_without_escapes(raw);
      raw = clean;
    }
    const std::string_view t = trim(raw);
    if (t.empty()) return;
    if (const std::int64_t date = smi_table_date(t); date != kSmiNoTime) {
      date_ns_ = date - options_.utc_offset_s * 1000000000;
      return;
    }
    const bool border = t.front() == '+' && t.find_first_not_of("+-=") == std::string_view::npos;
    if (t.front() != '|' && !border) {  // the job's own output (`set -x`'s `+ cmd` too), between or inside tables
      skip("not nvidia-smi table text");
      return;
    }
    if (contains(t, "NVIDIA-SMI")) {  // a new table: its time is the date line printed before it
      drop_pending();
      table_ns_ = date_ns_;
      date_ns_ = kSmiNoTime;
      in_gpu_table_ = true;
      return;
    }
    if (contains(t, "Processes:") || contains(t, "MIG devices:")) {  // tables whose rows are not GPUs
      drop_pending();
      in_gpu_table_ = false;
      return;
    }
    if (!in_gpu_table_) return;  // the rows of the process and MIG tables
    const std::vector<std::string_view> cells = smi_table_cells(t);
    if (smi_table_furniture(t, cells)) return;
    SmiTableGpu first;
    if (smi_table_gpu_line(cells, first)) {
      drop_pending();
      pending_ = std::move(first);
      pending_.line = line_number;
      return;
    }
    if (pending_.open && cells.size() >= 3) {
      readings(t);
      return;
    }
    skip("not nvidia-smi table text");  // a `|` or `+` line of the job's own
  }

  void finish() override { drop_pending(); }

 private:
  std::int64_t date_ns_ = kSmiNoTime;   // the last date line, for the next table
  std::int64_t table_ns_ = kSmiNoTime;  // the time of the table being read
  bool in_gpu_table_ = true;            // a log may start inside a table (no version line yet)
  SmiTableGpu pending_;                 // a GPU's first line, waiting for its readings

  void drop_pending() {
    if (!pending_.open) return;
    pending_.open = false;
    skip(fmt::format("GPU {}'s line {} without its readings line", pending_.index, pending_.line));
  }

  // `| N/A   33C    P0   62W / 400W |   4MiB / 81920MiB |   0%   Default |`: each value is known by
  // its unit. A pair around `/` is draw / cap in W or used / total in a memory unit; a lone C value
  // is the temperature; the first % in the cell after the memory pair is the utilisation (a % before
  // it is the fan's speed).
  void readings(std::string_view t) {
    pending_.open = false;
    // `N/A` holds a slash: it becomes `NA` (still not available) before the pairs are looked for.
    std::string text;
    text.reserve(t.size() + 16);
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.substr(i, 3) == "N/A") {
        text += "NA";
        i += 2;
      } else if (t[i] == '/') {
        text += " / ";
      } else {
        text += t[i];
      }
    }
    const std::vector<std::string_view> cells = smi_table_cells(trim(text));
    SmiSample s;
    s.time_ns = table_ns_;
    s.line = pending_.line;
    std::size_t read = 0;
    std::size_t memory_cell = cells.size();
    auto value = [&](std::string_view word, std::string_view want, double& slot) {
      double v = 0;
      std::string_view unit;
      const SmiValue r = smi_parse_number(word, v, &unit);
      if (r == SmiValue::kNotAvailable || word == "ERR!") {
        note_na();
        return;
      }
      if (r != SmiValue::kNumber) return;
      if (want == "MiB") {
        const double scale = smi_memory_scale(unit, kSmiNone);
        if (!smi_has(scale)) return;
        v *= scale;
      } else if (unit != want) {
        return;
      }
      slot = v;
      ++read;
    };
    auto unit_of = [](std::string_view word) {
      double v = 0;
      std::string_view unit;
      return smi_parse_number(word, v, &unit) == SmiValue::kNumber ? unit : std::string_view();
    };
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::vector<std::string_view> words = smi_words(cells[c]);
      std::vector<bool> paired(words.size(), false);
      for (std::size_t i = 1; i + 1 < words.size(); ++i) {
        if (words[i] != "/") continue;
        const std::string_view left = words[i - 1], right = words[i + 1];
        const std::string_view unit = unit_of(left).empty() ? unit_of(right) : unit_of(left);
        const bool power = unit == "W" || (unit.empty() && c == 0);
        const bool memory = !power && (smi_has(smi_memory_scale(unit, kSmiNone)) || unit.empty());
        if (power) {
          value(left, "W", s.power_w);
          value(right, "W", s.power_limit_w);
        } else if (memory) {
          value(left, "MiB", s.mem_used_mib);
          value(right, "MiB", s.mem_total_mib);
          if (memory_cell == cells.size()) memory_cell = c;
        }
        paired[i - 1] = paired[i] = paired[i + 1] = true;
      }
      for (std::size_t i = 0; i < words.size(); ++i)
        if (!paired[i] && !smi_has(s.temp_c) && unit_of(words[i]) == "C") value(words[i], "C", s.temp_c);
    }
    // GPU-Util: the first word of the cell after Memory-Usage (the last cell when there is none).
    const std::size_t util_cell = memory_cell + 1 < cells.size() ? memory_cell + 1 : cells.size() - 1;
    if (!cells.empty() && util_cell < cells.size()) {
      const std::vector<std::string_view> words = smi_words(cells[util_cell]);
      if (!words.empty()) value(words.front(), "%", s.util_pct);
    }
    if (read == 0) {
      skip(fmt::format("GPU {}'s readings line holds no value", pending_.index));
      return;
    }
    SmiGpu* g = gpu(pending_.index);
    if (g == nullptr) return;
    if (g->name.empty()) g->name = pending_.name;
    if (g->bus_id.empty()) g->bus_id = pending_.bus_id;
    add_sample(*g, s);
  }
};

}  // namespace

// The head holds the table's version line (`| NVIDIA-SMI 535.104.05   Driver Version: ...`).
// "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver" does not count.
bool smi_head_has_table(std::string_view head) {
  while (!head.empty()) {
    const std::size_t nl = head.find('\n');
    const std::string_view line = head.substr(0, nl);
    if (contains(line, "NVIDIA-SMI") && contains(line, "Driver Version")) return true;
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
  }
  return false;
}

std::unique_ptr<SmiReader> make_table_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options) {
  return std::make_unique<SmiTableReader>(log, src, options);
}

}  // namespace ferret
