#include "gen/inflate.h"

#include <sys/stat.h>

#include <simdjson.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "ingest/byte_source.h"
#include "ingest/kineto/decimal.h"
#include "ingest/kineto/json_scanner.h"

namespace ferret {

namespace od = simdjson::ondemand;

const std::vector<std::string>& inflated_id_args() {
  // correlation links a launch to its GPU work; External id links ops, launches and kernels
  // ("external id" in torch 1.8-1.9); the rest number ops and Python frames within one trace.
  static const std::vector<std::string> kIds = {"correlation",     "External id",          "external id",
                                                "Sequence number", "Profiler Event Index", "Ev Idx",
                                                "Python id",       "Python parent id"};
  return kIds;
}

namespace {

constexpr std::string_view kStepPrefix = "ProfilerStep#";

enum class PatchKind : std::uint8_t { kTimestamp, kId, kStepName };

// One token of an event's text that differs from copy to copy.
struct Patch {
  std::uint32_t offset = 0;  // from the event's '{'
  std::uint32_t length = 0;
  PatchKind kind = PatchKind::kId;
  bool quoted = false;          // the value was written as a JSON string
  bool integer_micros = false;  // a ts written without decimals (pre-2024 traces) stays an integer
  std::int64_t value = 0;       // ns for timestamps, the id, or the step number
};

// What one event contributes to the survey of the input, and the tokens to rewrite.
struct EventFacts {
  char phase = 0;
  bool has_ts = false;
  std::int64_t ts_ns = 0;
  std::int64_t end_ns = 0;
  std::vector<Patch> patches;

  void clear() {
    phase = 0;
    has_ts = false;
    ts_ns = end_ns = 0;
    patches.clear();
  }
};

std::string_view trim_token(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool is_id_arg(std::string_view key) {
  for (const std::string& id : inflated_id_args())
    if (key == id) return true;
  return false;
}

// The token of a scalar value and its text without quotes.
struct ScalarToken {
  std::string_view token;  // as written, quotes included
  std::string_view text;   // inside the quotes for strings
  bool quoted = false;
};

bool scalar_token(od::value& v, ScalarToken& out) {
  const od::json_type type = v.type();
  if (type != od::json_type::number && type != od::json_type::string) return false;
  out.token = trim_token(v.raw_json_token());
  out.quoted = type == od::json_type::string;
  out.text = out.quoted && out.token.size() >= 2 ? out.token.substr(1, out.token.size() - 2) : out.token;
  return true;
}

std::uint32_t offset_in(std::string_view token, const char* event_begin) {
  return static_cast<std::uint32_t>(token.data() - event_begin);
}

// Adds an id patch when the value is a plain non-negative integer. Negative values (ids that
// overflowed int64 in the profiler) cannot be shifted without changing their meaning; they are
// left alone and reported by the caller through `unshifted`.
void add_id_patch(od::value v, const char* event_begin, EventFacts& facts, std::uint64_t& unshifted) {
  ScalarToken t;
  if (!scalar_token(v, t)) return;
  std::int64_t id = 0;
  if (t.text.find_first_of(".eE") != std::string_view::npos) return;
  if (parse_int64(t.text, id) != DecimalStatus::kOk) return;
  if (id < 0) {
    ++unshifted;
    return;
  }
  facts.patches.push_back({offset_in(t.token, event_begin), static_cast<std::uint32_t>(t.token.size()), PatchKind::kId,
                           t.quoted, false, id});
}

// Reads the fields of one event object; never throws for well-formed JSON of any shape.
void analyze_event(od::object object, const char* event_begin, EventFacts& facts, std::uint64_t& unshifted) {
  facts.clear();
  std::int64_t dur_ns = 0;
  for (auto field : object) {
    const std::string_view key = field.unescaped_key();
    od::value v = field.value();
    if (key == "ph") {
      if (v.type() == od::json_type::string) {
        const std::string_view ph = v.get_string();
        facts.phase = ph.empty() ? '?' : ph[0];
      }
    } else if (key == "ts") {
      ScalarToken t;
      std::int64_t ns = 0;
      if (!scalar_token(v, t)) continue;
      const DecimalStatus st = parse_micros_to_nanos(t.text, ns);
      if (st != DecimalStatus::kOk && st != DecimalStatus::kRounded) continue;
      facts.has_ts = true;
      facts.ts_ns = ns;
      const bool integer = t.text.find_first_of(".eE") == std::string_view::npos;
      facts.patches.push_back({offset_in(t.token, event_begin), static_cast<std::uint32_t>(t.token.size()),
                               PatchKind::kTimestamp, t.quoted, integer, ns});
    } else if (key == "dur") {
      ScalarToken t;
      std::int64_t ns = 0;
      if (scalar_token(v, t) && parse_micros_to_nanos(t.text, ns) != DecimalStatus::kInvalid && ns > 0) dur_ns = ns;
    } else if (key == "name") {
      if (v.type() != od::json_type::string) continue;
      const std::string_view token = trim_token(v.raw_json_token());
      const std::string_view name = v.get_string();
      if (name.substr(0, kStepPrefix.size()) != kStepPrefix) continue;
      const std::string_view digits = name.substr(kStepPrefix.size());
      std::int64_t number = 0;
      if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string_view::npos)
        continue;
      if (parse_int64(digits, number) != DecimalStatus::kOk) continue;
      facts.patches.push_back({offset_in(token, event_begin), static_cast<std::uint32_t>(token.size()),
                               PatchKind::kStepName, true, false, number});
    } else if (key == "id") {
      add_id_patch(v, event_begin, facts, unshifted);
    } else if (key == "args") {
      if (v.type() != od::json_type::object) continue;
      for (auto arg : v.get_object()) {
        const std::string_view arg_key = arg.unescaped_key();
        if (is_id_arg(arg_key)) add_id_patch(arg.value(), event_begin, facts, unshifted);
      }
    }
  }
  facts.end_ns = facts.ts_ns + (facts.phase == 'X' ? dur_ns : 0);
  // Fields arrive in document order, so patches are already sorted by offset.
}

// How copy k differs from the input.
struct CopyShift {
  std::uint64_t copy = 0;
  std::int64_t time_ns = 0;
  std::int64_t id = 0;
  std::int64_t step = 0;
};

void append_patched(std::string& out, std::string_view event, const std::vector<Patch>& patches,
                    const CopyShift& shift) {
  std::size_t at = 0;
  for (const Patch& p : patches) {
    out.append(event.substr(at, p.offset - at));
    if (p.quoted) out.push_back('"');
    switch (p.kind) {
      case PatchKind::kTimestamp:
        if (p.integer_micros)
          append_int(out, (p.value + shift.time_ns) / 1000);
        else
          append_micros(out, p.value + shift.time_ns);
        break;
      case PatchKind::kId: append_int(out, p.value + shift.id); break;
      case PatchKind::kStepName:
        out.append(kStepPrefix);
        append_int(out, p.value + shift.step);
        break;
    }
    if (p.quoted) out.push_back('"');
    at = p.offset + p.length;
  }
  out.append(event.substr(at));
}

// Survey of the input, gathered while copy 0 is written.
struct Survey {
  std::uint64_t events = 0;
  std::uint64_t metadata = 0;
  std::int64_t first_ts = std::numeric_limits<std::int64_t>::max();
  std::int64_t last_end = std::numeric_limits<std::int64_t>::min();
  std::int64_t max_id = -1;
  std::int64_t min_step = std::numeric_limits<std::int64_t>::max();
  std::int64_t max_step = -1;
  std::uint64_t unshifted_ids = 0;
  std::uint64_t skipped = 0;

  void add(const EventFacts& f) {
    if (f.phase == 'M') {
      ++metadata;
      return;
    }
    ++events;
    if (f.has_ts) {
      first_ts = std::min(first_ts, f.ts_ns);
      last_end = std::max(last_end, std::max(f.end_ns, f.ts_ns));
    }
    for (const Patch& p : f.patches) {
      if (p.kind == PatchKind::kId) max_id = std::max(max_id, p.value);
      if (p.kind == PatchKind::kStepName) {
        min_step = std::min(min_step, p.value);
        max_step = std::max(max_step, p.value);
      }
    }
  }
};

// Streams the input once, writing one copy of its events. Copy 0 writes events verbatim and
// fills the survey; later copies rewrite the patched tokens and leave metadata out.
class CopyWriter {
 public:
  CopyWriter(TraceWriter& writer, Survey& survey) : writer_(writer), survey_(survey) {}

  // Handles one scanned batch.
  void write_batch(RawBatch& raw, const CopyShift& shift) {
    const std::size_t n = raw.event_begin.size();
    if (n == 0) return;
    char* data = raw.data.get();
    // Fast path: the batch "{..},{..}" is parsed in place as one array document "[{..},{..}]"
    // (the scanner leaves a byte of headroom before the first event and padding after the last).
    const std::size_t begin = raw.event_begin.front() - 1;
    const std::size_t end = raw.event_end.back() + 1;
    const char saved_open = data[begin], saved_close = data[end - 1];
    data[begin] = '[';
    data[end - 1] = ']';
    std::size_t done = 0;
    try {
      od::document doc = batch_parser_.iterate(data + begin, end - begin, raw.capacity - begin);
      for (auto element : doc.get_array()) {
        analyze_event(element.get_object(), data + raw.event_begin[done], facts_, survey_.unshifted_ids);
        emit(std::string_view(data + raw.event_begin[done], raw.event_end[done] - raw.event_begin[done]), shift);
        ++done;
      }
    } catch (const simdjson::simdjson_error&) {
      // A malformed event stops the batch parse; the rest is parsed one event at a time below.
    }
    data[begin] = saved_open;
    data[end - 1] = saved_close;
    for (std::size_t i = done; i < n; ++i) {
      const std::string_view text(data + raw.event_begin[i], raw.event_end[i] - raw.event_begin[i]);
      scratch_.assign(text);
      scratch_.append(simdjson::SIMDJSON_PADDING, ' ');
      try {
        od::document doc = event_parser_.iterate(scratch_.data(), text.size(), scratch_.size());
        analyze_event(doc.get_object(), scratch_.data(), facts_, survey_.unshifted_ids);
      } catch (const simdjson::simdjson_error&) {
        if (shift.copy == 0) ++survey_.skipped;
        continue;
      }
      emit(text, shift);
    }
  }

 private:
  void emit(std::string_view text, const CopyShift& shift) {
    if (shift.copy == 0) {
      survey_.add(facts_);
      writer_.event(text);
    } else if (facts_.phase != 'M') {
      patched_.clear();
      append_patched(patched_, text, facts_.patches, shift);
      writer_.event(patched_);
    }
  }

  TraceWriter& writer_;
  Survey& survey_;
  od::parser batch_parser_;
  od::parser event_parser_;
  EventFacts facts_;
  std::string scratch_;
  std::string patched_;
};

// Smallest power of ten above `value` (at least 10): ids of copy k then read as k followed by the
// original id, which keeps them recognisable when debugging.
std::int64_t power_of_ten_above(std::int64_t value) {
  std::int64_t p = 10;
  while (p <= value && p <= std::numeric_limits<std::int64_t>::max() / 10) p *= 10;
  return p;
}

bool fits_after_shift(std::int64_t max_value, std::int64_t stride, std::uint64_t copy) {
  if (stride <= 0 || max_value < 0) return true;
  const auto limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() - max_value);
  return copy <= limit / static_cast<std::uint64_t>(stride);
}

}  // namespace

InflateResult inflate_trace(const InflateOptions& options) {
  if (options.input == "-") throw InputError("inflate reads its input once per copy: give a file, not stdin");
  if (options.copies == 0 && options.target_bytes == 0)
    throw std::invalid_argument("inflate needs a target size or a number of copies");
  if (options.gap_ns < 0) throw std::invalid_argument("the gap between copies cannot be negative");

  InflateResult result;
  // The input is opened before the output is created, so that a missing input leaves no file behind.
  OpenedSource first_pass = open_byte_source(options.input);
  OutputFile out(options.output, options.compression, {options.input});  // never over the input it reads
  Survey survey;
  std::vector<std::pair<std::string, std::string>> trailing_keys;
  std::unique_ptr<TraceWriter> writer;

  // Copy 0: the input as it is, surveyed on the way.
  {
    EventScanner scanner(*first_pass.source, options.input);
    RawBatch raw;
    bool more = scanner.next(raw);
    const ScanSummary& scan = scanner.summary();
    // Keys seen so far precede the event array; the rest follow it (known at the end).
    writer = std::make_unique<TraceWriter>(out, scan.root_is_array);
    const std::size_t keys_before = scan.header.size();
    for (const auto& [key, value] : scan.header) writer->header(key, value);
    CopyWriter copier(*writer, survey);
    while (more) {
      copier.write_batch(raw, CopyShift{});
      more = scanner.next(raw);
    }
    trailing_keys.assign(scan.header.begin() + static_cast<std::ptrdiff_t>(keys_before), scan.header.end());
    for (const std::string& key : scan.header_dropped)
      result.warnings.push_back(
          fmt::format("top-level key \"{}\" is larger than the scanner's limit and was left out", key));
    if (scan.truncated)
      result.warnings.push_back(fmt::format(
          "the input is truncated (inside {}); each copy repeats the events before the cut", scan.truncation_detail));
  }
  result.copies = 1;
  if (options.progress) options.progress(out.bytes_in(), options.target_bytes);

  result.events_per_copy = survey.events;
  result.metadata_events = survey.metadata;
  result.skipped_events = survey.skipped;
  if (survey.skipped > 0)
    result.warnings.push_back(fmt::format("{} input events are not valid JSON and were left out", survey.skipped));
  if (survey.unshifted_ids > 0)
    result.warnings.push_back(fmt::format(
        "{} negative ids (int64 overflow in the profiler) repeat unchanged in every copy", survey.unshifted_ids));
  const bool has_time = survey.first_ts <= survey.last_end;
  result.first_ts_ns = has_time ? survey.first_ts : 0;
  result.last_end_ns = has_time ? survey.last_end : 0;
  // Whole microseconds, so that traces written in integer microseconds stay integers.
  const std::int64_t span = has_time ? survey.last_end - survey.first_ts : 0;
  result.period_ns = (span + options.gap_ns + 999) / 1000 * 1000;
  if (result.period_ns == 0) result.period_ns = 1000;
  result.id_stride = power_of_ten_above(survey.max_id);
  result.step_stride = survey.max_step >= 0 ? survey.max_step - survey.min_step + 1 : 0;

  auto done = [&] {
    if (options.copies > 0) return result.copies >= options.copies;
    return out.bytes_in() >= options.target_bytes;
  };
  while (!done()) {
    const std::uint64_t k = result.copies;
    if (!fits_after_shift(survey.max_id, result.id_stride, k) ||
        !fits_after_shift(has_time ? survey.last_end : 0, result.period_ns, k) ||
        !fits_after_shift(survey.max_step, result.step_stride, k)) {
      result.warnings.push_back(fmt::format("stopped after {} copies: more would overflow int64 ids or timestamps", k));
      break;
    }
    CopyShift shift;
    shift.copy = k;
    shift.time_ns = static_cast<std::int64_t>(k) * result.period_ns;
    shift.id = static_cast<std::int64_t>(k) * result.id_stride;
    shift.step = static_cast<std::int64_t>(k) * result.step_stride;
    OpenedSource opened = open_byte_source(options.input);
    EventScanner scanner(*opened.source, options.input);
    CopyWriter copier(*writer, survey);
    RawBatch raw;
    while (scanner.next(raw)) copier.write_batch(raw, shift);
    ++result.copies;
    if (options.progress) options.progress(out.bytes_in(), options.target_bytes);
  }

  for (const auto& [key, value] : trailing_keys) writer->header(key, value);
  writer->finish();
  out.close();
  result.events_written = writer->events();
  result.json_bytes = out.bytes_in();
  result.file_bytes = out.bytes_out();
  return result;
}

}  // namespace ferret
