// The entry points of smi_log_parser.h: the time format, sniffing the layout, and the loop that
// feeds a source's lines to the layout's reader (smi_reader.h and one file per layout).
#include "ingest/smi/smi_log_parser.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "base/input_error.h"
#include "base/terminal_text.h"
#include "base/text.h"

#include "ingest/line_source.h"
#include "ingest/smi/smi_reader.h"

namespace ferret {

std::int64_t parse_smi_time(std::string_view text) {
  text = trim(text);
  unsigned y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  std::size_t at = 0;
  if (!smi_digits(text, 4, y)) return kSmiNoTime;
  if (text.size() > 4 && (text[4] == '/' || text[4] == '-')) {  // 2024/01/31 or 2024-01-31
    if (text.size() < 10 || text[7] != text[4] || !smi_digits(text.substr(5), 2, mo) ||
        !smi_digits(text.substr(8), 2, d))
      return kSmiNoTime;
    at = 10;
  } else {  // dmon's 20240131
    if (!smi_digits(text.substr(4), 2, mo) || !smi_digits(text.substr(6), 2, d)) return kSmiNoTime;
    at = 8;
  }
  if (at >= text.size() || (text[at] != ' ' && text[at] != 'T')) return kSmiNoTime;
  while (at < text.size() && (text[at] == ' ' || text[at] == 'T')) ++at;
  const std::string_view clock = text.substr(at);
  if (clock.size() < 8 || clock[2] != ':' || clock[5] != ':' || !smi_digits(clock, 2, h) ||
      !smi_digits(clock.substr(3), 2, mi) || !smi_digits(clock.substr(6), 2, s))
    return kSmiNoTime;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 || y < 1970 || y > 2200) return kSmiNoTime;
  std::int64_t frac_ns = 0;
  std::size_t i = 8;
  if (i < clock.size() && clock[i] == '.') {
    std::int64_t scale = 100000000;
    for (++i; i < clock.size() && clock[i] >= '0' && clock[i] <= '9'; ++i) {
      frac_ns += (clock[i] - '0') * scale;
      scale /= 10;
    }
  }
  if (i != clock.size()) return kSmiNoTime;
  const std::int64_t days = smi_days_from_civil(y, mo, d);
  return ((days * 86400 + h * 3600 + mi * 60 + s) * 1000000000) + frac_ns;
}

namespace {

// ---- sniffing and the source loop -------------------------------------------------------------------

bool smi_csv_header_with(std::string_view line, SmiColumnMapper mapper, SmiField key_field, std::size_t min_known) {
  std::size_t known = 0;
  bool key = false;
  for (std::string_view cell : smi_split(line, ',')) {
    const std::string_view name = trim(cell.substr(0, cell.find(" [")));
    const SmiColumn c = mapper(name, "");
    known += c.field != SmiField::kIgnore;
    key = key || c.field == key_field;
  }
  return key && known >= min_known;
}

// The format the first line that says something names; kUnknown when it names none.
SmiFormat smi_sniff_first_line(std::string_view head) {
  std::size_t lines = 0;
  while (!head.empty() && lines < 200) {
    const std::size_t nl = head.find('\n');
    const std::string_view line = trim(head.substr(0, nl));
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    ++lines;
    if (line.empty()) continue;
    if (line.starts_with("# HELP DCGM_") || line.starts_with("# TYPE DCGM_") || line.starts_with("DCGM_FI_"))
      return SmiFormat::kPrometheus;
    if (line.front() == '#') {
      const std::vector<std::string_view> words = smi_words(line.substr(1));
      if (!words.empty() && ascii_lower(words.front()) == "entity") return SmiFormat::kDcgmiDmon;
      bool gpu = false, pid = false, sm = false;
      for (std::string_view w : words) {
        const std::string lw = ascii_lower(w);
        gpu = gpu || lw == "gpu";
        pid = pid || lw == "pid";
        sm = sm || lw == "sm" || lw == "pwr" || lw == "mem" || lw == "pclk" || lw == "fb";
      }
      if (gpu && pid) return SmiFormat::kPmon;
      if (gpu && sm) return SmiFormat::kDmon;
      continue;
    }
    if (line.find(',') != std::string_view::npos) {
      if (smi_csv_header_with(line, query_csv_column, SmiField::kUtil, 1) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kTime, 2) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kKey, 2) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kUuid, 2) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kBusId, 2) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kMemUsed, 1) ||
          smi_csv_header_with(line, query_csv_column, SmiField::kPower, 1))
        return SmiFormat::kQueryCsv;
      if (smi_csv_header_with(line, rocm_csv_column, SmiField::kKey, 2)) return SmiFormat::kRocmSmiCsv;
      if (smi_csv_header_with(line, amd_csv_column, SmiField::kKey, 2)) return SmiFormat::kAmdSmiCsv;
      // A headerless nvidia-smi CSV starts with its timestamp (or an index) and holds numbers.
      const std::vector<std::string_view> cells = smi_split(line, ',');
      if (cells.size() >= 2 && parse_smi_time(cells.front()) != kSmiNoTime) return SmiFormat::kQueryCsv;
    }
    return SmiFormat::kUnknown;  // the first line that says something says what the log is
  }
  return SmiFormat::kUnknown;
}

}  // namespace

SmiFormat sniff_smi_format(std::string_view head) {
  const SmiFormat by_first_line = smi_sniff_first_line(head);
  if (by_first_line != SmiFormat::kUnknown) return by_first_line;
  // A Slurm log holds the job's own output before (and between) nvidia-smi's tables: the table's
  // version line anywhere in the head says what the log is.
  return smi_head_has_table(head) ? SmiFormat::kSmiTable : SmiFormat::kUnknown;
}

namespace {

std::unique_ptr<SmiReader> make_smi_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options) {
  switch (src.format) {
    case SmiFormat::kQueryCsv: return make_csv_reader(log, src, options, query_csv_column);
    case SmiFormat::kRocmSmiCsv: return make_csv_reader(log, src, options, rocm_csv_column);
    case SmiFormat::kAmdSmiCsv: return make_csv_reader(log, src, options, amd_csv_column);
    case SmiFormat::kDmon: return make_dmon_reader(log, src, options);
    case SmiFormat::kPmon: return make_pmon_reader(log, src, options);
    case SmiFormat::kDcgmiDmon: return make_dcgmi_reader(log, src, options);
    case SmiFormat::kPrometheus: return make_prometheus_reader(log, src, options);
    case SmiFormat::kSmiTable: return make_table_reader(log, src, options);
    case SmiFormat::kUnknown: break;
  }
  return nullptr;
}

// Why a log is refused, and how to write one ferret reads: the first line that says something,
// which names no layout, and no nvidia-smi table in the head either.
std::string smi_refusal(const std::string& name, std::string_view head) {
  std::size_t number = 1;
  std::string_view first;
  while (!head.empty()) {
    const std::size_t nl = head.find('\n');
    first = trim(head.substr(0, nl));
    if (!first.empty() || nl == std::string_view::npos) break;
    head.remove_prefix(nl + 1);
    ++number;
  }
  return fmt::format(
      "{}: not a GPU utilisation log ferret reads: line {} (`{}`) starts none of the layouts it knows (nvidia-smi's "
      "table or --query-gpu CSV, nvidia-smi dmon/pmon, dcgmi dmon, dcgm-exporter metrics, rocm-smi --csv, amd-smi "
      "metric --csv), and no nvidia-smi table (`| NVIDIA-SMI ... Driver Version ...`) is in its first 64 KiB. To log "
      "the GPUs beside a job: {} > gpus.csv (or nvidia-smi -l 5 for the default table)",
      terminal_safe(name), number, terminal_safe(first.substr(0, 80)), kSmiLogCommand);
}

// The first line of a headerless query CSV, for the refusal's message.
bool smi_headerless(std::string_view head) {
  const std::size_t nl = head.find('\n');
  const std::string_view first = trim(head.substr(0, nl));
  return !smi_csv_header_with(first, query_csv_column, SmiField::kUtil, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kTime, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kKey, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kMemUsed, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kPower, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kUuid, 1) &&
         !smi_csv_header_with(first, query_csv_column, SmiField::kBusId, 1);
}

}  // namespace

void parse_smi_source(ByteSource& source, const std::string& name, const std::string& compression, SmiLog& log,
                      const SmiReadOptions& options) {
  constexpr std::size_t kSniffBytes = 64 * 1024;
  std::string head;  // the first bytes, kept until the format is known
  std::unique_ptr<SmiReader> reader;
  LineSplitter splitter(kSmiMaxLineBytes);
  std::uint64_t lines = 0;
  std::uint64_t samples_seen = 0, progress_at_byte = 0;

  // A line to the reader; false once the reader has stopped.
  auto feed = [&](std::string_view line, bool cut, std::uint64_t /*end*/) {
    ++lines;
    reader->line_number = lines;
    if (cut || line.size() > kSmiMaxLineBytes) {
      ++reader->source().long_lines;
      ++reader->source().skipped_lines;
      if (reader->source().skipped_examples.size() < kSmiSkippedExamples)
        reader->source().skipped_examples.push_back(
            fmt::format("line {}: longer than {} KiB", lines, kSmiMaxLineBytes / 1024));
      return !reader->stop;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    reader->line(line);
    return !reader->stop;
  };
  auto start = [&]() {
    SmiSource src;
    src.name = name;
    src.compression = compression;
    src.format = sniff_smi_format(head);
    // With --columns, a CSV whose first line is data is a headerless nvidia-smi CSV.
    if (src.format == SmiFormat::kUnknown && !options.columns.empty() &&
        head.substr(0, head.find('\n')).find(',') != std::string::npos)
      src.format = SmiFormat::kQueryCsv;
    if (src.format == SmiFormat::kUnknown) {
      if (head.find_first_not_of(" \t\r\n") == std::string::npos)
        throw InputError(terminal_safe(name) + ": the log is empty");
      throw InputError(smi_refusal(name, head));
    }
    if (src.format == SmiFormat::kQueryCsv && options.columns.empty() && smi_headerless(head))
      throw InputError(terminal_safe(name) +
                       ": an nvidia-smi CSV without a header (--format=csv,noheader): its columns cannot be known; "
                       "pass the --query-gpu list with --columns (e.g. --columns timestamp,index,utilization.gpu)");
    reader = make_smi_reader(log, src, options);
    splitter.split(head, 0, feed);
    head.clear();
  };

  const ReadEnd end = read_chunks(source, [&](std::string_view chunk, std::uint64_t offset) {
    if (reader == nullptr) {
      head.append(chunk);
      if (head.size() >= kSniffBytes) start();
      return reader == nullptr || !reader->stop;
    }
    if (!splitter.split(chunk, offset, feed)) return false;
    // Endless input without samples (/dev/zero after a header, a stream of junk) stops.
    const std::uint64_t bytes = offset + chunk.size();
    if (reader->source().samples != samples_seen) {
      samples_seen = reader->source().samples;
      progress_at_byte = bytes;
    } else if (bytes - progress_at_byte > kSmiMaxBytesWithoutSample) {
      reader->source().stopped =
          fmt::format("reading stopped at byte {}: {} bytes without a sample; what came before is kept", bytes,
                      bytes - progress_at_byte);
      return false;
    }
    return true;
  });
  if (reader == nullptr) start();
  if (!reader->stop) splitter.finish(end.bytes, feed);
  reader->finish();
  SmiSource& src = reader->source();
  src.bytes = end.bytes;
  src.lines = lines;
  src.damage = end.damage;
}

void parse_smi_file(const std::string& path, SmiLog& log, const SmiReadOptions& options) {
  OpenedSource opened = open_byte_source(path);
  parse_smi_source(*opened.source, path, opened.compression, log, options);
}

SmiLog parse_smi_text(std::string_view text, const std::string& name, const SmiReadOptions& options) {
  SmiLog log;
  std::unique_ptr<ByteSource> source = make_memory_source(std::string(text));
  parse_smi_source(*source, name, "none", log, options);
  return log;
}

}  // namespace ferret
