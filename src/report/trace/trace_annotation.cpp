#include "report/trace/trace_annotation.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analysis/timeline/step_breakdown.h"
#include "base/input_error.h"
#include "base/text.h"
#include "diagnosis/finding.h"
#include "report/strict_json_source.h"

namespace ferret {

namespace {

// --- the events ferret adds -------------------------------------------------------------------

class EventText {
 public:
  EventText(std::int32_t pid) : pid_(pid) {}

  std::string metadata(std::string_view what, std::int32_t tid, std::string_view arg_key,
                       std::string_view arg_json) const {
    std::string e = head("M", what, tid);
    e += ",\"args\":{";
    append_json_string(e, arg_key);
    e += ':';
    e += arg_json;
    e += "}}";
    return e;
  }
  std::string counter(std::string_view name, std::int64_t ts_ns, std::string_view key, double value) const {
    std::string e = head("C", name, 0);
    e += ",\"ts\":";
    append_micros(e, ts_ns);
    e += ",\"args\":{";
    append_json_string(e, key);
    e += fmt::format(":{}}}}}", round_value(value));
    return e;
  }
  // A complete span ("X"), or an instant ("i", thread-scoped) when it has no length.
  std::string span(std::string_view name, std::int32_t tid, std::int64_t start_ns, std::int64_t dur_ns,
                   std::string_view args_json) const {
    std::string e = head(dur_ns > 0 ? "X" : "i", name, tid);
    e += ",\"ts\":";
    append_micros(e, start_ns);
    if (dur_ns > 0) {
      e += ",\"dur\":";
      append_micros(e, dur_ns);
    } else {
      e += ",\"s\":\"t\"";
    }
    e += ",\"args\":";
    e += args_json;
    e += '}';
    return e;
  }

 private:
  std::string head(std::string_view ph, std::string_view name, std::int32_t tid) const {
    std::string e = "{\"ph\":\"";
    e += ph;
    e += "\",\"cat\":\"";
    e += kAnnotationCategory;
    e += "\",\"name\":";
    append_json_string(e, name);
    e += fmt::format(",\"pid\":{},\"tid\":{}", pid_, tid);
    return e;
  }
  // Counter values with at most three decimals, and no "-0".
  static double round_value(double v) {
    const double r = std::round(v * 1000.0) / 1000.0;
    return r == 0 ? 0.0 : r;
  }
  std::int32_t pid_;
};

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

std::int32_t unused_pid(const TraceModel& model) {
  std::int32_t most = 0;
  for (std::size_t i = 0; i < model.size(); ++i) most = std::max(most, model.pid[i]);
  return most < INT32_MAX ? most + 1 : INT32_MAX;
}

// One counter track from equal buckets starting at `start`, `width` ns wide: a sample where the
// value changes, and 0 at the end so the track does not run on past the data.
template <typename Value>
void add_counter(AnnotationEvents& out, const EventText& text, const std::string& name, std::string_view key,
                 std::int64_t start, double width, const std::vector<Value>& values, double scale) {
  double last = std::nan("");
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (values[k] < 0) continue;  // before the first sample (memory curves)
    const double v = static_cast<double>(values[k]) * scale;
    if (v == last) continue;
    last = v;
    const auto ts = start + static_cast<std::int64_t>(std::llround(width * static_cast<double>(k)));
    out.events.push_back(text.counter(name, ts, key, v));
    ++out.counters;
  }
  if (!values.empty() && !std::isnan(last) && last != 0) {
    const auto end = start + static_cast<std::int64_t>(std::llround(width * static_cast<double>(values.size())));
    out.events.push_back(text.counter(name, end, key, 0));
    ++out.counters;
  }
}

std::string memory_label(const MemoryDevice& d) {
  if (d.device_type <= 0) return "CPU memory";
  return fmt::format("GPU {} memory", d.device_id);
}

void add_counters(AnnotationEvents& out, const EventText& text, const TraceAnalysis& a) {
  for (const DeviceTimeline& d : a.timeline.devices) {
    const double width = d.busy_series.empty() ? 0
                                               : static_cast<double>(d.span_end_ns - d.span_start_ns) /
                                                     static_cast<double>(d.busy_series.size());
    add_counter(out, text, fmt::format("GPU {} busy", d.device), "%", d.span_start_ns, width, d.busy_series, 100.0);
    if (!d.queue_series.empty()) {
      const double qwidth =
          static_cast<double>(d.span_end_ns - d.span_start_ns) / static_cast<double>(d.queue_series.size());
      add_counter(out, text, fmt::format("GPU {} launch queue", d.device), "launches", d.span_start_ns, qwidth,
                  d.queue_series, 1.0);
    }
  }
  constexpr double kMiB = 1.0 / (1024.0 * 1024.0);
  for (const MemoryDevice& d : a.memory.devices) {
    const MemoryCurve& c = d.curve;
    if (c.allocated.empty()) continue;
    const std::string label = memory_label(d);
    const auto width = static_cast<double>(c.bucket_ns);
    add_counter(out, text, label + " allocated", "MiB", c.start_ns, width, c.allocated, kMiB);
    add_counter(out, text, label + " reserved", "MiB", c.start_ns, width, c.reserved, kMiB);
  }
}

constexpr std::int32_t kStepsTid = 1;
constexpr std::int32_t kFirstFindingTid = 100;

void add_steps(AnnotationEvents& out, const EventText& text, const TraceAnalysis& a) {
  const StepBreakdownResult& b = a.breakdown;
  if (!b.has_steps || b.steps.empty()) return;
  out.events.push_back(text.metadata("thread_name", kStepsTid, "name", json_string("steps (ferret breakdown)")));
  out.events.push_back(text.metadata("thread_sort_index", kStepsTid, "sort_index", "0"));
  for (const StepCost& s : b.steps) {
    std::string name = fmt::format("ProfilerStep#{} {:.1f} ms:", s.number, static_cast<double>(s.duration_ns) / 1e6);
    std::string args = "{";
    bool first = true;
    for (int c = 0; c < kStepCategoryCount; ++c) {
      const auto category = static_cast<StepCategory>(c);
      const double pct = s.pct(category);
      if (pct >= 1.0) name += fmt::format("{} {} {:.0f}%", first ? "" : " ·", step_category_label(category), pct);
      if (pct >= 1.0) first = false;
      args += fmt::format("\"{} ms\":{:.3f},", step_category_key(category), static_cast<double>(s.of(category)) / 1e6);
    }
    args += fmt::format("\"step ms\":{:.3f}}}", static_cast<double>(s.duration_ns) / 1e6);
    out.events.push_back(text.span(name, kStepsTid, s.start_ns, s.duration_ns, args));
    ++out.steps;
  }
}

// Overlapping places (idle gaps of several devices) merge: spans on one track must nest.
std::vector<Interval> disjoint(std::vector<Interval> places) {
  std::sort(places.begin(), places.end(), [](const Interval& x, const Interval& y) { return x.start < y.start; });
  std::vector<Interval> out;
  for (const Interval& p : places) {
    if (!out.empty() && p.start < out.back().end) {
      out.back().end = std::max(out.back().end, p.end);
      continue;
    }
    out.push_back(p);
  }
  return out;
}

void add_findings(AnnotationEvents& out, const EventText& text, const TraceAnalysis& a, const Diagnosis& d) {
  std::int32_t rank = 0;
  for (const Finding& f : d.findings) {
    ++rank;
    const std::int32_t tid = kFirstFindingTid + rank;
    out.events.push_back(text.metadata("thread_name", tid, "name",
                                       json_string(fmt::format("#{} {} ({})", rank, f.id, severity_name(f.severity)))));
    out.events.push_back(text.metadata("thread_sort_index", tid, "sort_index", std::to_string(rank)));
    std::string args = "{\"id\":" + json_string(f.id) + ",\"severity\":" + json_string(severity_name(f.severity)) +
                       ",\"headline\":" + json_string(f.title);
    if (!f.fixes.empty()) args += ",\"fix\":" + json_string(f.fixes.front().text);
    if (f.predicted_speedup > 0) args += fmt::format(",\"predicted gain\":\"{:.2f}x\"", f.predicted_speedup);
    if (f.max_speedup > 1.005) args += fmt::format(",\"gain ceiling\":\"{:.2f}x\"", f.max_speedup);
    std::vector<Interval> places = disjoint(f.where.longest);
    if (places.empty()) {
      places.push_back({a.context.window_start_ns, a.context.window_end_ns});
      args += ",\"where\":\"the analysed window\"}";
    } else if (f.where.count > f.where.longest.size()) {
      args += fmt::format(",\"where\":\"the {} longest of {}\"}}", f.where.longest.size(), f.where.count);
    } else {
      args += fmt::format(",\"where\":\"all {}\"}}", f.where.count);
    }
    const std::string name = f.id + ": " + f.title;
    for (const Interval& p : places) {
      out.events.push_back(text.span(name, tid, p.start, p.length(), args));
      ++out.finding_marks;
    }
  }
}

}  // namespace

AnnotationEvents annotation_events(const TraceModel& model, const TraceAnalysis& analysis, const Diagnosis& diagnosis) {
  AnnotationEvents out;
  out.pid = unused_pid(model);
  const EventText text(out.pid);
  const std::string process =
      diagnosis.verdict.headline.empty() ? std::string("ferret") : "ferret: " + diagnosis.verdict.headline;
  out.events.push_back(text.metadata("process_name", 0, "name", json_string(process)));
  out.events.push_back(text.metadata("process_sort_index", 0, "sort_index", "-1"));
  add_counters(out, text, analysis);
  add_steps(out, text, analysis);
  add_findings(out, text, analysis, diagnosis);
  return out;
}

// --- streaming the original through ----------------------------------------------------------

namespace {

// What is open at a point where the document could be cut and closed: container kinds at depths
// 1 and 2 (deeper nesting is never a cut point), and where the events array stands.
struct CutState {
  int depth = 0;
  char open[3] = {0, 0, 0};  // '{' or '[' at depth 1 and 2
  int events_depth = -1;     // depth inside the traceEvents array, -1 before it opens
  bool events_nonempty = false;
  bool events_done = false;  // ferret's events are in
  bool root_nonempty = false;
  bool valid = false;  // false until the root opened
};

// Bytes held back past a cut point before giving up the ability to cut there: events are small,
// and a value this large is not an event (the pending bytes are written out, not lost).
constexpr std::size_t kMaxHeldBytes = std::size_t{64} << 20;

enum class SpliceComment { kNone, kSlash, kLine, kBlock, kBlockStar };

class Splicer {
 public:
  Splicer(const std::string& name, const std::vector<std::string>& events, OutputFile& out)
      : name_(name), events_(events), out_(out) {}

  // A byte inside a string. A root key is kept as written, escapes and all, and decoded when it
  // ends: "trace\u0045vents" is traceEvents (a second key added beside it would hide the trace's
  // own events).
  void string_byte(char c) {
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
      if (state_.depth == 1) {
        const std::optional<std::string> decoded = key_matchable_ ? decode_json_key(key_) : std::nullopt;
        last_string_ = decoded ? *decoded : std::string();
      }
      return;
    }
    if (state_.depth == 1 && key_matchable_) {
      if (key_.size() < 96)
        key_ += c;
      else
        key_matchable_ = false;
    }
  }

  // Comments (which the loader tolerates between tokens) pass through and never count as
  // structure: a ']' inside one must not close traceEvents. True when the byte belongs to one.
  bool comment_byte(char c) {
    if (comment_ == SpliceComment::kNone) return false;
    if (comment_ == SpliceComment::kSlash) {
      comment_ = c == '/' ? SpliceComment::kLine : c == '*' ? SpliceComment::kBlock : SpliceComment::kNone;
      // A lone '/': not a comment; this byte is read as usual (the loader rejects the slash).
      return comment_ != SpliceComment::kNone;
    }
    if (comment_ == SpliceComment::kLine) {
      if (c == '\n') comment_ = SpliceComment::kNone;
    } else if (c == '/' && comment_ == SpliceComment::kBlockStar) {
      comment_ = SpliceComment::kNone;
    } else {
      comment_ = c == '*' ? SpliceComment::kBlockStar : SpliceComment::kBlock;
    }
    return true;
  }

  // A byte before the root value: a byte order mark passes, '{' or '[' opens the root (true),
  // anything else is not a trace.
  bool opens_root(char c, std::uint64_t offset) {
    if (offset == 0 && c == '\xEF') {  // a UTF-8 byte order mark: its three bytes pass through
      bom_left_ = 2;
      return false;
    }
    if (bom_left_ > 0) {
      --bom_left_;
      return false;
    }
    if (c != '{' && c != '[')
      throw InputError(fmt::format("{}: not a JSON trace: byte {} is '{}', where '{{' or '[' should open it", name_,
                                   offset, printable(c)));
    state_.valid = true;
    state_.depth = 1;
    state_.open[1] = c;
    if (c == '[') state_.events_depth = 1, result_.events_array_found = true;
    return true;
  }

  void feed(const char* data, std::size_t n) {
    std::size_t seg = 0;  // start of the bytes of this chunk not yet in held_ or written
    for (std::size_t i = 0; i < n; ++i) {
      const char c = data[i];
      const std::uint64_t offset = result_.bytes_in + i;
      if (after_root_) break;
      if (in_string_) {
        string_byte(c);
        continue;
      }
      if (comment_byte(c)) continue;
      if (c == '/') {
        comment_ = SpliceComment::kSlash;
        continue;
      }
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
      if (!state_.valid) {
        if (opens_root(c, offset)) cut_after(data, seg, i);
        continue;
      }
      if (state_.depth == 1 && state_.open[1] == '{' && c != ':' && c != ',' && c != '}') state_.root_nonempty = true;
      if (state_.depth == state_.events_depth && c != ',' && c != ']') state_.events_nonempty = true;
      switch (c) {
        case '"':
          in_string_ = true;
          key_.clear();
          key_matchable_ = true;
          break;
        case ':':
          if (state_.depth == 1) colon_key_ = last_string_;
          break;
        case ',':
          if (state_.depth <= cut_depth()) cut_before(data, seg, i);
          if (state_.depth == 1) colon_key_.clear();
          break;
        case '{':
        case '[':
          ++state_.depth;
          if (state_.depth == 2) {
            state_.open[2] = c;
            if (c == '[' && state_.open[1] == '{' && colon_key_ == "traceEvents" && state_.events_depth < 0) {
              state_.events_depth = 2;
              result_.events_array_found = true;
            }
          }
          if (state_.depth <= cut_depth()) cut_after(data, seg, i);
          break;
        case '}':
        case ']':
          if (state_.depth == state_.events_depth && c == ']' && !state_.events_done) {
            write_held(data, seg, i);
            out_.write(inserted(state_.events_nonempty));
            state_.events_done = true;
            cut_ = state_;  // what is written stays; a cut from here closes without adding again
          } else if (state_.depth == 1 && c == '}' && !state_.events_done) {
            write_held(data, seg, i);  // a root object without traceEvents: the key is added
            out_.write(events_key(state_.root_nonempty));
            state_.events_done = true;
            cut_ = state_;
          }
          --state_.depth;
          if (state_.depth == 1) colon_key_.clear();
          if (state_.depth == 0) {
            after_root_ = true;
            write_held(data, seg, i + 1);
          }
          break;
        default: break;
      }
    }
    if (after_root_) {
      out_.write(std::string_view(data + seg, n - seg));
      result_.bytes_copied += n - seg;
    } else {
      held_.append(data + seg, n - seg);
      if (held_.size() > kMaxHeldBytes) {  // too long to hold: written, no cut point before it
        write_held_only();
        cut_lost_ = true;
      }
    }
    result_.bytes_in += n;
  }

  SpliceResult finish() {
    if (after_root_) return result_;
    if (!state_.valid) throw InputError(name_ + ": empty: no JSON trace in it");
    if (cut_lost_)
      throw InputError(fmt::format("{}: ends at byte {} inside a value of over {} MiB; cannot close the document",
                                   name_, result_.bytes_in, kMaxHeldBytes >> 20));
    // Cut where the document last stood between values, and close what was open there.
    const std::uint64_t dropped = held_.size();
    held_.clear();
    CutState s = cut_;
    std::string closing;
    for (int d = s.depth; d >= 1; --d) {
      if (d == s.events_depth && !s.events_done) {
        closing += inserted(s.events_nonempty);
        s.events_done = true;
      } else if (d == 1 && s.open[1] == '{' && !s.events_done) {
        closing += events_key(s.root_nonempty);
        s.events_done = true;
      }
      closing += s.open[d] == '{' ? '}' : ']';
    }
    out_.write(closing);
    result_.repair = fmt::format(
        "{}: ends early at byte {} (truncated): the last {} bytes, an unfinished event, left out and the "
        "document closed",
        name_, result_.bytes_in, dropped);
    return result_;
  }

 private:
  // Cut points lie between the members of the root and the elements of the arrays and objects in
  // it (events among them), never inside an event: depth 1 for a bare array of events.
  int cut_depth() const { return state_.open[1] == '[' ? 1 : 2; }
  static std::string printable(char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  // The events and the array's closing bracket (the ']' or '}' that ends it in the input follows).
  std::string inserted(bool after_elements) const {
    std::string s;
    for (const std::string& e : events_) {
      if (after_elements || !s.empty()) s += ',';
      s += e;
    }
    return s;
  }
  std::string events_key(bool after_members) const {
    return std::string(after_members ? "," : "") + "\"traceEvents\":[" + inserted(false) + "]";
  }
  void write_held_only() {
    out_.write(held_);
    result_.bytes_copied += held_.size();
    held_.clear();
  }
  // Writes what is held and this chunk's bytes before `end`.
  void write_held(const char* data, std::size_t& seg, std::size_t end) {
    write_held_only();
    out_.write(std::string_view(data + seg, end - seg));
    result_.bytes_copied += end - seg;
    seg = end;
  }
  // A cut point just before byte i (a comma), or just after it (an opening bracket).
  void cut_before(const char* data, std::size_t& seg, std::size_t i) {
    write_held(data, seg, i);
    cut_ = state_;
    cut_lost_ = false;
  }
  void cut_after(const char* data, std::size_t& seg, std::size_t i) {
    write_held(data, seg, i + 1);
    cut_ = state_;
    cut_lost_ = false;
  }

  const std::string& name_;
  const std::vector<std::string>& events_;
  OutputFile& out_;
  SpliceResult result_;
  CutState state_, cut_;
  std::string held_;  // bytes since the last cut point, not yet written
  bool cut_lost_ = false;
  bool in_string_ = false, escape_ = false, after_root_ = false;
  int bom_left_ = 0;
  SpliceComment comment_ = SpliceComment::kNone;
  std::string key_, last_string_, colon_key_;  // strings at depth 1: a key before ':' names a member
  bool key_matchable_ = false;
};

}  // namespace

SpliceResult splice_trace(ByteSource& source, const std::string& name, const std::vector<std::string>& events,
                          OutputFile& out) {
  StrictJsonSource strict(source);  // the output is strict JSON whatever the loader tolerated
  Splicer splicer(name, events, out);
  std::vector<char> buffer(std::size_t{1} << 20);
  for (;;) {
    const std::size_t n = strict.read(buffer.data(), buffer.size());
    if (n == 0) break;
    splicer.feed(buffer.data(), n);
  }
  SpliceResult r = splicer.finish();
  const std::string damage = source.damage();
  if (!damage.empty()) r.repair = r.repair.empty() ? damage : damage + "; " + r.repair;
  if (const std::string rewrites = strict.rewrites(); !rewrites.empty()) {
    const std::string note = fmt::format("{}: written as strict JSON: {}", name, rewrites);
    r.repair = r.repair.empty() ? note : r.repair + "; " + note;
  }
  return r;
}

}  // namespace ferret
