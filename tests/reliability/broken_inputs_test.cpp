// The broken-input suite: hostile and damaged traces generated from small real ones, each run
// through the built `ferret` binary (`info --json`, `analyze --json` twice, `analyze --md`) to
// check the promises of docs/RELIABILITY.md:
//   - no crash: every run exits 0 or 2, never by a signal;
//   - no hang: every run ends within a bound proportional to the input's size;
//   - exit 2 names the file, and only when nothing usable remains;
//   - every complete event before the damage is kept;
//   - every repair and skip is counted, in `info` and in `analyze`, with its location;
//   - the same input gives byte-identical `--json`;
//   - (control characters in string fields) `analyze`, `analyze --md`, `info` and stderr hold no
//     raw control byte and no forged line.
// Each test (one input class) writes its tally to $FERRET_RELIABILITY_DIR/<class>.json;
// tests/tools/reliability_table.py turns the tallies into the table of docs/RELIABILITY.md.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pickle_writer.h"
#include "terminal_hazard.h"
#include "test_util.h"

namespace ferret::test {
namespace {
namespace broken_inputs_test {

using namespace pickle_writer;  // p_str, p_int, p_list, p_dict, p_snapshot, ...

namespace fs = std::filesystem;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------
// Base traces: small real recordings shipped in the repo, re-serialised one event per line so
// the byte range of every event is known independently of ferret's own scanner.

std::string gunzip(const std::string& compressed) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 32), Z_OK);
  std::string out;
  char buf[1 << 16];
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(compressed.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof buf - zs.avail_out);
  }
  inflateEnd(&zs);
  return out;
}

// One gzip member holding `data` (level 9: repeated bytes compress about 1000:1).
std::string gzip_member(const std::string& data) {
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

struct Base {
  std::string name;
  bool array_root = false;
  std::string prologue;             // everything before the first event
  std::vector<std::string> events;  // compact JSON, one per line
  std::vector<bool> timed;          // the event is not metadata
  std::string epilogue;

  std::string text() const { return text_of(events); }
  std::string text_of(const std::vector<std::string>& evs) const {
    std::string out = prologue;
    for (std::size_t i = 0; i < evs.size(); ++i) {
      out += evs[i];
      out += i + 1 < evs.size() ? ",\n" : "\n";
    }
    return out + epilogue;
  }
  // Offset one past the end of each event in text().
  std::vector<std::size_t> event_ends() const {
    std::vector<std::size_t> ends;
    std::size_t at = prologue.size();
    for (std::size_t i = 0; i < events.size(); ++i) {
      at += events[i].size();
      ends.push_back(at);
      at += i + 1 < events.size() ? 2 : 1;
    }
    return ends;
  }
  // Complete events (and timed ones among them) that end at or before byte `offset`.
  std::pair<std::uint64_t, std::uint64_t> complete_before(std::size_t offset) const {
    const auto ends = event_ends();
    std::uint64_t n = 0, t = 0;
    for (std::size_t i = 0; i < ends.size() && ends[i] <= offset; ++i) n++, t += timed[i] ? 1 : 0;
    return {n, t};
  }
  std::uint64_t timed_count() const { return static_cast<std::uint64_t>(std::count(timed.begin(), timed.end(), true)); }
};

Base make_base(const std::string& name, const std::string& text) {
  Base b;
  b.name = name;
  const ordered_json doc = ordered_json::parse(text);
  const ordered_json* events = nullptr;
  if (doc.is_array()) {
    b.array_root = true;
    b.prologue = "[\n";
    b.epilogue = "]\n";
    events = &doc;
  } else {
    b.prologue = "{\n";
    for (const auto& [key, value] : doc.items()) {
      if (key == "traceEvents") continue;
      b.prologue += "  " + ordered_json(key).dump() + ": " + value.dump() + ",\n";
    }
    b.prologue += "  \"traceEvents\": [\n";
    b.epilogue = "  ],\n  \"traceName\": \"reliability\"\n}\n";
    events = &doc["traceEvents"];
  }
  for (const auto& e : *events) {
    b.events.push_back(e.dump());
    b.timed.push_back(e.value("ph", "") != "M");
  }
  return b;
}

// The real torch 1.13 CPU recording (legacy autograd export, a bare array).
const Base& real_cpu_base() {
  static const Base b =
      make_base("cpu-input-bound",
                gunzip(read_file(std::string(FERRET_SOURCE_DIR) + "/examples/traces/cpu-input-bound.json.gz")));
  return b;
}

// A small Kineto 2.x trace with GPU events and a header, plus events carrying an escape, a \u
// escape and multi-byte UTF-8, so cuts can land inside each of them.
const Base& kineto_base() {
  static const Base b = [] {
    Base base = make_base("tiny-kineto2", read_file(std::string(FERRET_SOURCE_DIR) + "/tests/data/tiny-kineto2.json"));
    // Drop the fixture's deliberately broken events (negative dur, missing ts): this base is clean.
    std::vector<std::string> kept;
    std::vector<bool> timed;
    for (std::size_t i = 0; i < base.events.size(); ++i) {
      if (base.events[i].find("aten::relu") != std::string::npos ||
          base.events[i].find("aten::no_ts") != std::string::npos)
        continue;
      kept.push_back(base.events[i]);
      timed.push_back(base.timed[i]);
    }
    kept.push_back(
        R"({"ph":"X","cat":"cpu_op","name":"aten::quote\"d \\ name","pid":100,"tid":100,"ts":1600.5,"dur":12.25})");
    kept.push_back(R"({"ph":"X","cat":"cpu_op","name":"caf\u00e9 \u2603","pid":100,"tid":100,"ts":1700.125,"dur":3})");
    kept.push_back(
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"na\xc3\xafve \xe2\x98\x83 "
        "\xf0\x9f\x94\xa5\",\"pid\":100,\"tid\":100,\"ts\":1800,\"dur\":4}");
    timed.insert(timed.end(), 3, true);
    base.events = kept;
    base.timed = timed;
    return base;
  }();
  return b;
}

// A GPU-shaped generated trace (kernels, copies, launches, steps) for the classes about GPU
// fields; no real GPU recording can ship in the repo.
const Base& gpu_base() {
  static const Base b =
      make_base("synthetic-input-bound",
                gunzip(read_file(std::string(FERRET_SOURCE_DIR) + "/examples/traces/synthetic-input-bound.json.gz")));
  return b;
}

// ---------------------------------------------------------------------------------------------
// One case and its runs.

struct Case {
  std::string label;
  std::string bytes;        // the file's content, written to a temporary file
  std::string path;         // or: run on this path as it is
  std::string stdin_shell;  // or: this shell pipeline feeds ferret's stdin ("-")
  std::string extra_args;
  std::uint64_t min_events = 0;  // undamaged complete events that must be kept
  std::uint64_t min_timed = 0;   // of them, events `analyze` can use: it must not give up
  bool must_count = false;       // the damage must show as a repair, a skip or a note
  bool must_reject = false;      // nothing is usable: exit 2 expected
  double bound_s = 0;            // time bound; 0: proportional to the size
  std::string same_analysis_as;  // analyze --json must equal the output for these bytes
  // Or only the step time (within 0.1%) and the top finding must equal theirs for these bytes.
  std::string same_verdict_as;
  std::function<void(const std::string& md, const std::string& text)> check_output;
  bool must_be_terminal_safe = false;  // text, --md and stderr hold no raw control byte or forged line
};

struct Run {
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
  std::string out, err;
};

std::string results_dir() {
  const char* dir = std::getenv("FERRET_RELIABILITY_DIR");
  return dir ? dir : std::string(FERRET_BINARY_DIR) + "/reliability";
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Run run(const std::string& args, const std::string& stdin_shell, double bound_s) {
  Run r;
  const std::string out = temp_path("rel.out"), err = temp_path("rel.err");
  const std::string ferret = std::string("FERRET_NO_HUGEPAGES=1 timeout -s KILL ") +
                             std::to_string(static_cast<int>(bound_s + 1)) + " " + FERRET_BINARY + " " + args;
  std::string cmd = (stdin_shell.empty() ? ferret : stdin_shell + " | " + ferret) + " >" + out + " 2>" + err;
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(("bash -c " + shell_quote(cmd)).c_str());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  // timeout -s KILL exits 137; a crash inside ferret shows as 128 + signal from bash.
  if (code == 137)
    r.timed_out = true;
  else if (code > 128)
    r.signal = code - 128;
  r.exit_code = code;
  r.out = read_file(out);
  r.err = read_file(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

// Outcome buckets of docs/RELIABILITY.md.
enum Outcome { kLoaded, kRepaired, kStoppedEarly, kRejected, kOutcomeCount };
const char* const kOutcomeKeys[] = {"loaded", "repaired", "stopped_early", "rejected"};

void write_tally(const std::string& name, const std::string& what, std::size_t cases, std::size_t violations,
                 const std::size_t (&outcomes)[kOutcomeCount], double max_seconds) {
  fs::create_directories(results_dir());
  ordered_json j = {{"class", name}, {"what", what}, {"cases", cases}, {"violations", violations}};
  for (int k = 0; k < kOutcomeCount; ++k) j["outcomes"][kOutcomeKeys[k]] = outcomes[k];
  j["max_seconds_per_case"] = max_seconds;
  write_file(results_dir() + "/" + name + ".json", j.dump(2) + "\n");
}

// Sanitizer builds run every Nth case (FERRET_RELIABILITY_STRIDE): the sanitizers look for
// memory errors, which a sample finds as well as the whole set, at a fifth of the time.
bool skipped_by_stride(std::size_t& seen) {
  static const std::size_t stride = [] {
    const char* s = std::getenv("FERRET_RELIABILITY_STRIDE");
    return s && std::atoi(s) > 1 ? static_cast<std::size_t>(std::atoi(s)) : std::size_t{1};
  }();
  return seen++ % stride != 0;
}

// One class of the suite run through the CLI: counts cases, violations (any failure a case
// adds) and outcomes, and writes the tally for docs/RELIABILITY.md when the test ends.
template <typename CaseT>
class CaseTally {
 public:
  CaseTally(std::string name, std::string what) : name_(std::move(name)), what_(std::move(what)) {}
  virtual ~CaseTally() { write_tally(name_, what_, cases_, violations_, outcomes_, max_seconds_); }

  void check(const CaseT& c) {
    if (skipped_by_stride(seen_)) return;
    ++cases_;
    const ::testing::TestResult* result = ::testing::UnitTest::GetInstance()->current_test_info()->result();
    const int parts_before = result->total_part_count();
    check_case(c);
    if (result->total_part_count() != parts_before) ++violations_;
  }

 protected:
  virtual void check_case(const CaseT& c) = 0;

  std::string name_, what_;
  std::size_t seen_ = 0, cases_ = 0, violations_ = 0;
  std::size_t outcomes_[kOutcomeCount] = {};
  double max_seconds_ = 0;
};

class ClassTally {
 public:
  ClassTally(std::string name, std::string what) : name_(std::move(name)), what_(std::move(what)) {}
  ~ClassTally() { write_tally(name_, what_, cases_, violations_, outcomes_, max_seconds_); }

  // Runs one case and checks every promise; failures are test failures naming the case.
  void check(const Case& c) {
    if (skipped_by_stride(seen_)) return;
    ++cases_;
    const ::testing::TestResult* result = ::testing::UnitTest::GetInstance()->current_test_info()->result();
    const int parts_before = result->total_part_count();
    const bool ok = check_case(c);
    if (!ok || result->total_part_count() != parts_before) ++violations_;
  }

  std::size_t cases() const { return cases_; }

 private:
  bool check_case(const Case& c) {
    std::string target = c.path;
    const bool uses_file = c.path.empty() && c.stdin_shell.empty();
    if (uses_file) {
      target = temp_path("case-" + name_ + ".json");
      write_file(target, c.bytes);
    }
    if (!c.stdin_shell.empty()) target = "-";
    const double size_mb = static_cast<double>(c.bytes.size()) / (1 << 20);
    // 10 s plus 2 s per MB: about 100x the release build's time, room for sanitizer builds.
    const double bound = c.bound_s > 0 ? c.bound_s : 10 + 2 * size_mb;
    const std::string file_arg = target == "-" ? "-" : shell_quote(target);
    const std::string tag = name_ + " / " + c.label;

    std::string reference;
    const std::string& reference_bytes = c.same_analysis_as.empty() ? c.same_verdict_as : c.same_analysis_as;
    if (!reference_bytes.empty()) {
      write_file(target, reference_bytes);
      reference = run("analyze --json " + c.extra_args + " " + file_arg, "", bound).out;
      write_file(target, c.bytes);
    }

    const Run info = run("info --json " + c.extra_args + " " + file_arg, c.stdin_shell, bound);
    const Run analyze = run("analyze --json " + c.extra_args + " " + file_arg, c.stdin_shell, bound);
    std::vector<Run> runs = {info, analyze};
    Run analyze_again, markdown, text;
    // Streams cannot be replayed; files that cannot be read have no output to compare.
    const bool repeatable = c.stdin_shell.empty() && c.path.empty();
    if (repeatable) {
      analyze_again = run("analyze --json " + c.extra_args + " " + file_arg, "", bound);
      markdown = run("analyze --md " + c.extra_args + " " + file_arg, "", bound);
      text = run("analyze " + c.extra_args + " " + file_arg, "", bound);
      runs.insert(runs.end(), {analyze_again, markdown, text});
    }
    // `info` shows the fields `analyze` does not (threads, processes, versions, distributedInfo).
    Run info_text;
    if (c.must_be_terminal_safe) runs.push_back(info_text = run("info " + c.extra_args + " " + file_arg, "", bound));
    if (uses_file) std::remove(target.c_str());

    bool ok = true;
    auto fail = [&](const std::string& what) {
      ADD_FAILURE() << tag << ": " << what;
      ok = false;
    };
    for (const Run& r : runs) {
      max_seconds_ = std::max(max_seconds_, r.seconds);
      if (r.timed_out)
        fail("hung: still running after " + std::to_string(bound) + " s");
      else if (r.signal)
        fail("crashed with signal " + std::to_string(r.signal) + "; stderr: " + r.err.substr(0, 500));
      else if (r.exit_code != 0 && r.exit_code != 2)
        fail("exit code " + std::to_string(r.exit_code) + "; stderr: " + r.err.substr(0, 500));
    }
    if (!ok) return false;

    // The message names the file (or stdin) whenever a run gives up.
    const std::string shown_name = target == "-" ? "<stdin>" : target;
    for (const Run& r : runs)
      if (r.exit_code == 2 && r.err.find(shown_name) == std::string::npos)
        fail("exit 2 without naming the input: " + r.err.substr(0, 300));

    // info: what was kept and counted.
    std::uint64_t events = 0, issues = 0, notes = 0;
    bool truncated = false;
    if (info.exit_code == 0) {
      const json doc = json::parse(info.out, nullptr, false);
      if (doc.is_discarded() || !doc.contains("traces") || doc["traces"].empty()) {
        fail("info --json is not a valid document");
        return false;
      }
      const json& t = doc["traces"][0];
      events = t.value("events", std::uint64_t{0});
      for (const char* key : {"repairs", "skips"})
        for (const json& issue : t[key]) {
          issues += issue.value("count", std::uint64_t{0});
          if (issue.value("first", std::string()).empty())
            fail(std::string(key) + " entry without a location: " + issue.dump());
        }
      notes = t["notes"].size();
      truncated = t.value("truncated", false);
    }
    if (events < c.min_events)
      fail("kept " + std::to_string(events) + " events; the " + std::to_string(c.min_events) +
           " complete events before the damage must all be kept");
    if (info.exit_code == 2 && c.min_events > 0)
      fail("info gave up although sound events remain: " + info.err.substr(0, 300));
    if (analyze.exit_code == 2 && c.min_timed > 0)
      fail("analyze gave up although timed events remain: " + analyze.err.substr(0, 300));
    if (c.must_reject && info.exit_code != 2 && analyze.exit_code != 2)
      fail("expected exit 2: nothing in this input is usable");
    if (c.must_count && info.exit_code == 0 && issues + notes == 0) fail("the damage is not counted in info --json");

    // analyze: the same counts, and the same output twice.
    if (analyze.exit_code == 0) {
      const json doc = json::parse(analyze.out, nullptr, false);
      if (doc.is_discarded() || doc["traces"].empty() || !doc["traces"][0].contains("input")) {
        fail("analyze --json is not a valid document");
        return false;
      }
      const json& input = doc["traces"][0]["input"];
      const std::uint64_t shown = input["repairs"].size() + input["skips"].size() + input["notes"].size();
      if (c.must_count && shown == 0) fail("the damage is not counted in analyze --json");
      if (issues + notes > 0 && shown == 0) fail("info counts repairs or notes that analyze does not show");
    }
    if (repeatable && analyze.out != analyze_again.out)
      fail("analyze --json differs between two runs of the same input");
    if (repeatable && analyze.exit_code != markdown.exit_code)
      fail("analyze --md and --json disagree on the exit code");
    if (!c.same_analysis_as.empty()) {
      // Repair locations name events by their position in the file, which the shuffle changed.
      auto without_locations = [](const std::string& text) {
        json doc = json::parse(text, nullptr, false);
        if (doc.is_discarded()) return std::string("invalid JSON");
        for (json& t : doc["traces"])
          for (const char* key : {"repairs", "skips"})
            for (json& issue : t["input"][key]) issue.erase("first");
        return doc.dump(1);
      };
      const std::string got = without_locations(analyze.out), want = without_locations(reference);
      if (got != want) {
        std::size_t at = 0;
        while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
        fail("analyze --json differs from the output for the same events in their original order, at: " +
             got.substr(at > 200 ? at - 200 : 0, 400) + "\n---- expected ----\n" +
             want.substr(at > 200 ? at - 200 : 0, 400));
      }
    }
    if (!c.same_verdict_as.empty()) {
      const json got = json::parse(analyze.out, nullptr, false), want = json::parse(reference, nullptr, false);
      if (got.is_discarded() || want.is_discarded()) {
        fail("analyze --json of the case or its base is invalid");
        return false;
      }
      const json &g = got["traces"][0], &w = want["traces"][0];
      const double got_step = g["steps"].value("avg_us", 0.0), want_step = w["steps"].value("avg_us", 0.0);
      if (std::abs(got_step - want_step) > 0.001 * want_step)
        fail("step time " + std::to_string(got_step) + " us differs from the base's " + std::to_string(want_step) +
             " us");
      const std::string got_top = g["findings"].empty() ? "none" : g["findings"][0].value("id", "");
      const std::string want_top = w["findings"].empty() ? "none" : w["findings"][0].value("id", "");
      if (got_top != want_top) fail("top finding " + got_top + " differs from the base's " + want_top);
    }
    if (c.check_output && markdown.exit_code == 0) c.check_output(markdown.out, text.out);
    if (c.must_be_terminal_safe) {
      for (const auto& [what, output] : {std::pair<const char*, const std::string&>{"analyze", text.out},
                                         {"analyze --md", markdown.out},
                                         {"info", info_text.out}})
        if (const std::string hazard = terminal_hazard(output); !hazard.empty())
          fail(std::string(what) + ": " + hazard);
      for (const Run& r : runs)
        if (const std::string hazard = terminal_hazard(r.err); !hazard.empty()) fail("stderr: " + hazard);
    }

    Outcome outcome = kLoaded;
    if (info.exit_code == 2)
      outcome = kRejected;
    else if (truncated)
      outcome = kStoppedEarly;
    else if (issues > 0)
      outcome = kRepaired;
    ++outcomes_[outcome];
    return ok;
  }

  std::string name_, what_;
  std::size_t seen_ = 0, cases_ = 0, violations_ = 0;
  std::size_t outcomes_[kOutcomeCount] = {};
  double max_seconds_ = 0;
};

// Deterministic choices: std::mt19937's sequence is fixed by the standard (its distributions
// are not, so they are not used).
struct Random {
  std::mt19937 gen;
  explicit Random(unsigned seed) : gen(seed) {}
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(gen() % n); }
};

Case whole(const Base& b, std::string label, std::string bytes, bool must_count, std::uint64_t lost = 0) {
  Case c;
  c.label = std::move(label);
  c.bytes = std::move(bytes);
  c.min_events = b.events.size() - lost;
  c.min_timed = b.timed_count() - lost;
  c.must_count = must_count;
  return c;
}

// An event added to a base (the base's events are all kept; the new one may be repaired or skipped).
Case with_event(const Base& b, std::string label, const std::string& event, bool must_count) {
  std::vector<std::string> evs = b.events;
  evs.insert(evs.begin() + static_cast<std::ptrdiff_t>(evs.size() / 2), event);
  return whole(b, std::move(label), b.text_of(evs), must_count);
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// ---------------------------------------------------------------------------------------------
// The input classes.

TEST(BrokenInputs, Truncation) {
  ClassTally tally("truncation",
                   "cut at many offsets, including inside a string, a number, an escape and a multi-byte character");
  for (const Base* b : {&real_cpu_base(), &kineto_base()}) {
    const std::string text = b->text();
    std::vector<std::size_t> cuts;
    for (std::size_t k = 0; k <= 40; ++k) cuts.push_back(text.size() * k / 40);
    // Targeted cuts: inside strings, numbers, escapes and UTF-8 sequences.
    for (const char* needle :
         {"\"name\":\"", "\"ts\":", "\\\"", "\\\\", "\\u00", "\xc3", "\xe2\x98", "\xf0\x9f\x94", "1600.5", "},"}) {
      const std::size_t at = text.find(needle);
      if (at == std::string::npos) continue;
      const std::size_t len = std::string_view(needle).size();
      for (std::size_t d = 1; d <= len + 2; ++d) cuts.push_back(at + d);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (std::size_t cut : cuts) {
      Case c;
      c.label = b->name + " cut at byte " + std::to_string(cut) + " of " + std::to_string(text.size());
      c.bytes = text.substr(0, cut);
      std::tie(c.min_events, c.min_timed) = b->complete_before(cut);
      // Cut inside the epilogue after every event: the events are whole, the document is not.
      c.must_count = cut < text.size();
      if (cut < b->prologue.size() && b->array_root) c.must_count = cut > 0;
      tally.check(c);
    }
  }
  EXPECT_GT(tally.cases(), std::getenv("FERRET_RELIABILITY_STRIDE") ? 20u : 100u);
}

TEST(BrokenInputs, ByteFlips) {
  ClassTally tally("byte flips", "1 to 4 random bytes replaced by random values (200 seeded cases)");
  Random rng(20261202);
  for (const Base* b : {&real_cpu_base(), &kineto_base()}) {
    const std::string text = b->text();
    for (int k = 0; k < 100; ++k) {
      std::string bytes = text;
      const std::size_t flips = 1 + rng.below(4);
      std::size_t first = bytes.size();
      for (std::size_t f = 0; f < flips; ++f) {
        const std::size_t at = rng.below(bytes.size());
        bytes[at] = static_cast<char>(rng.below(256));
        first = std::min(first, at);
      }
      Case c;
      c.label = b->name + " case " + std::to_string(k) + ", first flip at byte " + std::to_string(first);
      c.bytes = bytes;
      std::tie(c.min_events, c.min_timed) = b->complete_before(first);
      tally.check(c);
    }
  }
}

TEST(BrokenInputs, InvalidUtf8) {
  ClassTally tally("invalid UTF-8",
                   "stray, overlong, surrogate and cut-off sequences in names, categories, args and keys");
  const std::vector<std::pair<std::string, std::string>> sequences = {{"stray 0xff", "\xff"},
                                                                      {"lone lead byte", "\xc3"},
                                                                      {"overlong slash", "\xc0\xaf"},
                                                                      {"UTF-16 surrogate", "\xed\xa0\x80"},
                                                                      {"cut 4-byte sequence", "\xf0\x9f\x94"},
                                                                      {"continuation only", "\x80\x80"}};
  for (const Base* b : {&real_cpu_base(), &kineto_base()}) {
    for (const auto& [what, seq] : sequences) {
      for (const char* where : {"name", "cat", "arg", "key"}) {
        std::string event;
        const std::string w = where;
        if (w == "name")
          event = R"({"ph":"X","cat":"cpu_op","name":"bad)" + seq + R"(name","pid":1,"tid":1,"ts":5,"dur":1})";
        if (w == "cat") event = R"({"ph":"X","cat":"cpu)" + seq + R"(","name":"x","pid":1,"tid":1,"ts":5,"dur":1})";
        if (w == "arg")
          event = R"({"ph":"X","cat":"cpu_op","name":"x","pid":1,"tid":1,"ts":5,"dur":1,"args":{"Input type":")" + seq +
                  R"("}})";
        if (w == "key")
          event = R"({"ph":"X","cat":"cpu_op","name":"x","pid":1,"tid":1,"ts":5,"dur":1,"args":{"k)" + seq + R"(":1}})";
        // Bytes inside an unknown key are never decoded, so only the others must be counted.
        tally.check(with_event(*b, b->name + ": " + what + " in " + w, event, w != "key"));
      }
    }
  }
}

TEST(BrokenInputs, ControlCharacters) {
  ClassTally tally("control characters", "raw NUL, 0x01, 0x1f, tab, newline and DEL inside strings");
  for (const Base* b : {&real_cpu_base(), &kineto_base()}) {
    for (const std::string& ch : {std::string(1, '\0'), std::string("\x01"), std::string("\x1f"), std::string("\t"),
                                  std::string("\n"), std::string("\x7f")}) {
      for (const char* where : {"name", "cat"}) {
        const std::string w = where;
        const std::string event =
            w == "name" ? R"({"ph":"X","cat":"cpu_op","name":"a)" + ch + R"(b","pid":1,"tid":1,"ts":5,"dur":1})"
                        : R"({"ph":"X","cat":"cpu)" + ch + R"(op","name":"ab","pid":1,"tid":1,"ts":5,"dur":1})";
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(ch[0]));
        // DEL is a legal character in JSON strings; the others must be repaired.
        tally.check(with_event(*b, b->name + ": " + hex + " in " + w, event, ch != "\x7f"));
      }
    }
  }
}

TEST(BrokenInputs, SpecialNumbers) {
  ClassTally tally("NaN, Infinity, 1e999", "non-JSON and out-of-range numbers in ts, dur, pid, tid and numeric args");
  const Base& b = kineto_base();
  const std::vector<std::pair<std::string, bool>> values = {
      // value, must be counted wherever it is
      {"NaN", true}, {"Infinity", true},  {"-Infinity", true}, {"1e999", false}, {"-1e999", false}, {"1e308", false},
      {"-0", false}, {"1.5e-400", false}, {"0x10", true},      {"+5", true},     {".5", true}};
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"ts", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":@,"dur":1})"},
      {"dur", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":@})"},
      {"pid", R"({"ph":"X","cat":"cpu_op","name":"n","pid":@,"tid":100,"ts":5,"dur":1})"},
      {"tid", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":@,"ts":5,"dur":1})"},
      {"args.correlation",
       R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1,"args":{"correlation":@}})"},
      {"args.grid", R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1,"args":{"grid":[@,1,1]}})"},
      {"args.Bytes",
       R"({"ph":"i","cat":"cpu_instant_event","name":"[memory]","pid":100,"tid":100,"ts":5,"args":{"Bytes":@}})"},
  };
  for (const auto& [field, event] : fields) {
    for (const auto& [value, always] : values) {
      // Out-of-range values must be counted where they cannot be kept: in times and integer args.
      const bool out_of_range = value == "1e999" || value == "-1e999" || value == "1e308";
      const bool counted = always || (out_of_range && field != "pid" && field != "tid");
      tally.check(with_event(b, field + " = " + value, replace_all(event, "@", value), counted));
    }
  }
}

TEST(BrokenInputs, IntegersPastInt64) {
  ClassTally tally("integers past int64", "2^63, 2^64, 20-digit and negative 20-digit integers in ids, times and args");
  const Base& b = kineto_base();
  const std::vector<std::string> values = {"9223372036854775808", "18446744073709551616", "99999999999999999999",
                                           "-99999999999999999999"};
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"ts", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":@,"dur":1})"},
      {"dur", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":@})"},
      {"pid", R"({"ph":"X","cat":"cpu_op","name":"n","pid":@,"tid":100,"ts":5,"dur":1})"},
      {"args.External id",
       R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":1,"args":{"External id":@}})"},
      {"args.correlation",
       R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1,"args":{"correlation":@}})"},
      {"args.Total Allocated",
       R"({"ph":"i","cat":"cpu_instant_event","name":"[memory]","pid":100,"tid":100,"ts":5,"args":{"Total Allocated":@}})"},
  };
  for (const auto& [field, event] : fields) {
    for (const std::string& value : values) {
      // A huge pid is kept as a label (pids are names), and ids up to 2^64 - 1 keep their bit
      // pattern (they are compared, never added); everything else must be counted.
      const bool id = field == "args.External id" || field == "args.correlation";
      const bool fits_uint64 = value == "9223372036854775808";
      tally.check(
          with_event(b, field + " = " + value, replace_all(event, "@", value), field != "pid" && !(id && fits_uint64)));
    }
  }
}

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(BrokenInputs, DeepNesting) {
  ClassTally tally("deep nesting",
                   "arrays and objects nested 100 to 1,000,000 deep in args, as events and in the header");
  const Base& b = kineto_base();
  for (std::size_t depth : {100u, 10000u, 1000000u}) {
    const std::string d = std::to_string(depth);
    // Unknown args are skipped unread, so nesting inside them costs nothing and needs no count.
    tally.check(with_event(b, "args value nested " + d,
                           R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":1,"args":{"deep":)" +
                               nested(depth) + "}}",
                           false));
    std::vector<std::string> evs = b.events;
    evs.insert(evs.begin() + 2, nested(depth));
    tally.check(whole(b, "event array element nested " + d, b.text_of(evs), true));
    std::string objects;
    for (std::size_t i = 0; i < depth; ++i) objects += "{\"a\":";
    objects += "1" + std::string(depth, '}');
    tally.check(with_event(
        b, "args object nested " + d,
        R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":1,"args":)" + objects + "}", false));
    Base deep_header = b;
    deep_header.prologue = "{\n  \"deep\": " + nested(depth) + ",\n" + b.prologue.substr(2);
    tally.check(whole(b, "header value nested " + d, deep_header.text(), false));
  }
}

TEST(BrokenInputs, LongNames) {
  ClassTally tally("megabyte-long names", "names, categories and args of 1 MiB and 16 MiB");
  const Base& b = kineto_base();
  for (std::size_t mib : {1u, 16u}) {
    const std::string big(mib << 20, 'a');
    const std::string m = std::to_string(mib) + " MiB";
    Case name = with_event(b, "kernel name of " + m,
                           R"({"ph":"X","cat":"kernel","name":")" + big +
                               R"(","pid":0,"tid":7,"ts":1300,"dur":50,"args":{"correlation":99}})",
                           false);
    // Reports abbreviate names: a long name must not flood the output.
    name.check_output = [](const std::string& md, const std::string& text) {
      EXPECT_LT(md.size(), 64u << 10) << "markdown output carries the whole long name";
      EXPECT_LT(text.size(), 64u << 10) << "text output carries the whole long name";
    };
    tally.check(name);
    tally.check(with_event(b, "category of " + m,
                           R"({"ph":"X","cat":")" + big + R"(","name":"n","pid":100,"tid":100,"ts":5,"dur":1})",
                           false));
    tally.check(
        with_event(b, "Input Dims of " + m,
                   R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":1,"args":{"Input Dims":")" +
                       big + R"("}})",
                   false));
  }
}

TEST(BrokenInputs, DuplicateKeys) {
  ClassTally tally("duplicate keys", "repeated ts, dur, name, ph and args in an event; repeated top-level keys");
  const Base& b = kineto_base();
  for (
      const char* event :
      {R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"ts":7,"dur":1})",
       R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":1,"dur":2})",
       R"({"ph":"X","cat":"cpu_op","name":"a","name":"b","pid":100,"tid":100,"ts":5,"dur":1})",
       R"({"ph":"X","ph":"i","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":1})",
       R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1,"args":{"correlation":1},"args":{"correlation":2}})"})
    tally.check(with_event(b, event, event, false));
  for (const char* key : {"deviceProperties", "distributedInfo", "baseTimeNanoseconds", "schemaVersion"}) {
    Base twice = b;
    const std::size_t at = b.prologue.find(std::string("\"") + key + "\"");
    ASSERT_NE(at, std::string::npos) << key;
    const std::size_t line_end = b.prologue.find('\n', at);
    twice.prologue = b.prologue.substr(0, line_end + 1) + "  " + b.prologue.substr(at, line_end + 1 - at) +
                     b.prologue.substr(line_end + 1);
    tally.check(whole(b, std::string("top-level ") + key + " twice", twice.text(), false));
  }
}

TEST(BrokenInputs, WrongTypes) {
  ClassTally tally("wrong JSON types", "every field the analyses read, given each JSON type it must not have");
  const Base& b = kineto_base();
  // field, event template (@ = the value), the types the field accepts.
  struct Field {
    std::string name, event, accepts;  // accepts: letters s(tring) n(umber) o(bject) a(rray) b(ool)
  };
  const std::string op = R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":1,"args":{"F":@}})";
  const std::string kernel = R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1,"args":{"F":@}})";
  const std::string copy =
      R"({"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":7,"ts":5,"dur":1,"args":{"F":@}})";
  const std::string mem =
      R"({"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":100,"tid":100,"ts":5,"args":{"F":@}})";
  const std::string coll =
      R"({"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","pid":0,"tid":7,"ts":5,"dur":1,"args":{"F":@}})";
  std::vector<Field> fields = {
      {"ph", R"({"ph":@,"cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":1})", "s"},
      {"name", R"({"ph":"X","cat":"cpu_op","name":@,"pid":100,"tid":100,"ts":5,"dur":1})", "s"},
      {"cat", R"({"ph":"X","cat":@,"name":"n","pid":100,"tid":100,"ts":5,"dur":1})", "s"},
      {"pid", R"({"ph":"X","cat":"cpu_op","name":"n","pid":@,"tid":100,"ts":5,"dur":1})", "sn"},
      {"tid", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":@,"ts":5,"dur":1})", "sn"},
      {"ts", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":@,"dur":1})", "n"},
      {"dur", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":@})", "n"},
      {"id", R"({"ph":"s","cat":"ac2g","name":"f","pid":100,"tid":100,"ts":5,"id":@})", "sn"},
      {"args", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":1,"args":@})", "o"},
  };
  for (const char* f : {"External id", "Sequence number", "Fwd thread id"})
    fields.push_back({std::string("args.") + f, replace_all(op, "\"F\"", std::string("\"") + f + "\""), "n"});
  for (const char* f : {"Input Dims", "Input type"})
    fields.push_back({std::string("args.") + f, replace_all(op, "\"F\"", std::string("\"") + f + "\""), "snoab"});
  for (const char* f : {"correlation", "registers per thread", "shared memory", "blocks per SM", "warps per SM",
                        "est. achieved occupancy %"})
    fields.push_back({std::string("args.") + f, replace_all(kernel, "\"F\"", std::string("\"") + f + "\""), "n"});
  for (const char* f : {"grid", "block"})
    fields.push_back({std::string("args.") + f, replace_all(kernel, "\"F\"", std::string("\"") + f + "\""), "a"});
  for (const char* f : {"bytes", "memory bandwidth (GB/s)"})
    fields.push_back({std::string("args.") + f, replace_all(copy, "\"F\"", std::string("\"") + f + "\""), "n"});
  for (const char* f : {"Bytes", "Total Allocated", "Total Reserved", "Addr", "Device Id", "Device Type"})
    fields.push_back({std::string("args.") + f, replace_all(mem, "\"F\"", std::string("\"") + f + "\""), "n"});
  for (const char* f : {"In msg nelems", "Out msg nelems", "Group size", "Rank", "Seq"})
    fields.push_back({std::string("args.") + f, replace_all(coll, "\"F\"", std::string("\"") + f + "\""), "n"});
  for (const char* f : {"Collective name", "dtype", "Process Group Name", "Process Group Ranks"})
    fields.push_back({std::string("args.") + f, replace_all(coll, "\"F\"", std::string("\"") + f + "\""), "snoab"});
  const std::vector<std::pair<char, std::string>> values = {
      {'s', "\"text\""}, {'n', "7"}, {'o', "{\"a\":[1]}"}, {'a', "[1,\"x\"]"}, {'b', "true"}};
  for (const Field& f : fields) {
    for (const auto& [type, value] : values) {
      if (f.accepts.find(type) != std::string::npos) continue;
      tally.check(with_event(b, f.name + " = " + value, replace_all(f.event, "@", value), true));
    }
  }
}

TEST(BrokenInputs, Durations) {
  ClassTally tally("negative and absurd times",
                   "negative, zero, century-long and overflowing durations and timestamps");
  const Base& b = kineto_base();
  const std::vector<std::tuple<std::string, std::string, bool>> cases = {
      {"dur -1", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":-1})", true},
      {"dur -1e9", R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":-1e9,"args":{"correlation":1}})",
       true},
      {"dur 0", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":0})", false},
      {"dur of 100 years", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5,"dur":3155760000000000})",
       true},
      {"dur past int64 ns", R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":9300000000000000})",
       true},
      {"ts -1", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":-1,"dur":1})", false},
      {"ts past int64 ns", R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":9300000000000000,"dur":1})",
       true},
      {"ts + dur past int64 ns",
       R"({"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":100,"ts":5000000000000000,"dur":5000000000000000})",
       true},
      {"step with negative dur",
       R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#9","pid":100,"tid":100,"ts":1900,"dur":-100})", true},
  };
  for (const auto& [label, event, counted] : cases) tally.check(with_event(b, label, event, counted));
}

TEST(BrokenInputs, TimeOutliers) {
  ClassTally tally("time outliers",
                   "one kernel, op, runtime call or memcpy moved days or years later or earlier, to 2^62 ns, or "
                   "given a duration of days: step time and top finding must equal the undamaged trace's");
  const Base& b = gpu_base();
  const std::string base_text = b.text();
  // `ts` and `dur` of the trace are microseconds.
  constexpr double kDayUs = 86400e6;
  const std::vector<std::pair<std::string, std::function<void(ordered_json&)>>> damages = {
      {"3 days later", [](ordered_json& e) { e["ts"] = e["ts"].get<double>() + 3 * kDayUs; }},
      {"5 years later", [](ordered_json& e) { e["ts"] = e["ts"].get<double>() + 5 * 365 * kDayUs; }},
      {"3 days earlier", [](ordered_json& e) { e["ts"] = e["ts"].get<double>() - 3 * kDayUs; }},
      {"5 years earlier", [](ordered_json& e) { e["ts"] = e["ts"].get<double>() - 5 * 365 * kDayUs; }},
      {"at 2^62 ns", [](ordered_json& e) { e["ts"] = "@2^62@"; }},
      {"lasting 5 days", [](ordered_json& e) { e["dur"] = 5 * kDayUs; }},
  };
  for (const char* category : {"kernel", "cpu_op", "cuda_runtime", "gpu_memcpy"}) {
    std::vector<std::size_t> of_category;
    for (std::size_t i = 0; i < b.events.size(); ++i)
      if (ordered_json::parse(b.events[i]).value("cat", "") == category) of_category.push_back(i);
    ASSERT_FALSE(of_category.empty()) << category;
    const std::size_t victim = of_category[of_category.size() / 2];
    for (const auto& [label, damage] : damages) {
      ordered_json event = ordered_json::parse(b.events[victim]);
      damage(event);
      std::vector<std::string> evs = b.events;
      evs[victim] = replace_all(event.dump(), "\"@2^62@\"", "4611686018427387.904");
      Case c = whole(b, std::string(category) + " " + label, b.text_of(evs), true, 1);
      c.same_verdict_as = base_text;
      tally.check(c);
    }
  }
}

TEST(BrokenInputs, OutOfOrder) {
  ClassTally tally("events out of order", "events shuffled or reversed: the analysis must equal the sorted trace's");
  Random rng(7);
  for (const Base* b : {&real_cpu_base(), &kineto_base(), &gpu_base()}) {
    const std::string sorted = b->text();
    for (int k = 0; k < 3; ++k) {
      std::vector<std::string> evs = b->events;
      if (k == 0)
        std::reverse(evs.begin(), evs.end());
      else
        for (std::size_t i = evs.size(); i > 1; --i) std::swap(evs[i - 1], evs[rng.below(i)]);
      Case c = whole(*b, b->name + (k == 0 ? " reversed" : " shuffled #" + std::to_string(k)), b->text_of(evs), false);
      c.same_analysis_as = sorted;
      tally.check(c);
    }
  }
}

TEST(BrokenInputs, DanglingLinks) {
  ClassTally tally("flows and correlations pointing nowhere",
                   "flow starts without ends and the reverse, kernels without launches, launches without kernels, "
                   "duplicated and zero correlation ids");
  const Base& b = kineto_base();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"flow start without end", R"({"ph":"s","cat":"ac2g","name":"ac2g","pid":100,"tid":100,"ts":20,"id":4242})"},
      {"flow end without start", R"({"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":50,"id":4343})"},
      {"flow start reusing a correlation id",
       R"({"ph":"s","cat":"ac2g","name":"ac2g","pid":100,"tid":100,"ts":20,"id":1})"},
      {"kernel whose correlation matches no launch",
       R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1400,"dur":10,"args":{"correlation":987654}})"},
      {"launch whose correlation matches no kernel",
       R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":1400,"dur":3,"args":{"correlation":876543,"External id":5}})"},
      {"second kernel with the same correlation",
       R"({"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":1400,"dur":10,"args":{"correlation":1}})"},
      {"correlation 0",
       R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1400,"dur":10,"args":{"correlation":0}})"},
      {"negative correlation",
       R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":1400,"dur":3,"args":{"correlation":-5}})"},
      {"External id pointing at no op",
       R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":1400,"dur":3,"args":{"correlation":3,"External id":123456}})"},
  };
  for (const auto& [label, event] : cases) tally.check(with_event(b, label, event, false));
}

TEST(BrokenInputs, EmptyAndMetadataOnly) {
  ClassTally tally("empty or metadata only",
                   "empty traceEvents, only metadata, no traceEvents, scalars and empty documents");
  const std::vector<std::pair<std::string, std::string>> docs = {
      {"empty file", ""},
      {"whitespace only", " \n\t \n"},
      {"empty traceEvents", R"({"traceEvents": []})"},
      {"empty bare array", "[]"},
      {"empty object", "{}"},
      {"header without traceEvents", R"({"schemaVersion": 1, "deviceProperties": []})"},
      {"only metadata",
       R"({"traceEvents": [{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"python"}},{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"main"}}]})"},
      {"only flow events",
       R"({"traceEvents": [{"ph":"s","cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":5,"id":1},{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":9,"id":1}]})"},
      {"null", "null"},
      {"a number", "42"},
      {"a string", "\"traceEvents\""},
      {"traceEvents is an object", R"({"traceEvents": {"ph":"X"}})"},
      {"traceEvents is null", R"({"traceEvents": null})"},
  };
  for (const auto& [label, text] : docs) {
    Case c;
    c.label = label;
    c.bytes = text;
    c.must_reject = true;  // nothing to analyse in any of them
    tally.check(c);
  }
}

TEST(BrokenInputs, FileSystem) {
  ClassTally tally(
      "files that cannot be read",
      "a directory, a missing file, an unreadable file, a named pipe with no writer, a symlink loop, /dev/null");
  const std::string dir = temp_path("reliability-fs");
  fs::remove_all(dir);
  fs::create_directories(dir + "/a-directory.json");
  auto add = [&](const std::string& label, const std::string& path, double bound = 0) {
    Case c;
    c.label = label;
    c.path = path;
    c.must_reject = true;
    c.bound_s = bound;
    tally.check(c);
  };
  add("directory", dir + "/a-directory.json");
  add("missing file", dir + "/missing.json");
  // Root reads any file whatever its mode; /proc/self/mem refuses a read at offset 0 for anyone.
  if (::geteuid() != 0) {
    write_file(dir + "/unreadable.json", R"({"traceEvents": []})");
    fs::permissions(dir + "/unreadable.json", fs::perms::none);
    add("unreadable file", dir + "/unreadable.json");
  } else {
    add("unreadable file", "/proc/self/mem");
  }
  ASSERT_EQ(::mkfifo((dir + "/pipe.json").c_str(), 0600), 0);
  add("named pipe with no writer", dir + "/pipe.json", 30);
  fs::create_symlink(dir + "/loop-b.json", dir + "/loop-a.json");
  fs::create_symlink(dir + "/loop-a.json", dir + "/loop-b.json");
  add("symlink loop", dir + "/loop-a.json");
  add("/dev/null", "/dev/null");
  fs::remove_all(dir);
}

TEST(BrokenInputs, DecompressionBombs) {
  ClassTally tally("decompression bombs",
                   "gzip and zstd inflating past 1 GiB at over 1000:1, after a few sound events");
  const Base& b = kineto_base();
  const std::string spaces(64u << 20, ' ');
  const std::string space_member = gzip_member(spaces);
  // 20 members of 64 MiB of spaces inside the event array: 1.25 GiB from about 1.3 MB.
  std::string head = b.prologue;
  for (const std::string& e : b.events) head += e + ",\n";
  std::string gz = gzip_member(head);
  for (int i = 0; i < 20; ++i) gz += space_member;
  gz += gzip_member("]}\n");
  Case c;
  c.label = "gzip: 1.25 GiB of whitespace in 20 members, " + std::to_string(gz.size() >> 10) + " KiB";
  c.bytes = gz;
  c.min_events = b.events.size();
  c.min_timed = b.timed_count();
  c.must_count = true;
  c.bound_s = 120;
  tally.check(c);

  std::string zs(16u << 20, '\0');  // the whole frame compresses to well under 1 MB
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setPledgedSrcSize(cctx, head.size() + spaces.size() * 20);
  ZSTD_outBuffer out{zs.data(), zs.size(), 0};
  ZSTD_inBuffer in{head.data(), head.size(), 0};
  ZSTD_compressStream2(cctx, &out, &in, ZSTD_e_continue);
  for (int i = 0; i < 20; ++i) {
    ZSTD_inBuffer chunk{spaces.data(), spaces.size(), 0};
    while (chunk.pos < chunk.size) ZSTD_compressStream2(cctx, &out, &chunk, ZSTD_e_continue);
  }
  ZSTD_inBuffer none{nullptr, 0, 0};
  while (ZSTD_compressStream2(cctx, &out, &none, ZSTD_e_end) != 0) {
  }
  ZSTD_freeCCtx(cctx);
  zs.resize(out.pos);
  c.label = "zstd: 1.25 GiB of whitespace, " + std::to_string(zs.size() >> 10) + " KiB";
  c.bytes = zs;
  tally.check(c);
}

TEST(BrokenInputs, EndlessStdin) {
  ClassTally tally("endless stdin",
                   "streams that never end: whitespace, scalars, one endless string, events past "
                   "--max-memory, events that are all skipped");
  const std::string event = R"({"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":5,"dur":1})";
  const std::string skipped = R"({"ph":"B","name":"x","pid":1,"tid":1,"ts":5})";
  struct Stream {
    std::string label, shell, args;
    bool reject;
  };
  const std::vector<Stream> streams = {
      {"whitespace", "yes ' '", "", true},
      {"scalars in the event array", "(printf '['; yes '1,')", "", true},
      {"one endless name", "(printf '{\"traceEvents\":[{\"name\":\"'; yes aaaaaaaaaaaaaaaaaaaaaaa)", "", true},
      {"events until --max-memory 64MiB", "(printf '{\"traceEvents\":['; yes " + shell_quote(event + ",") + ")",
       "--max-memory 64MiB", false},
      {"begin/end events, all skipped", "(printf '{\"traceEvents\":['; yes " + shell_quote(skipped + ",") + ")", "",
       true},
  };
  for (const Stream& s : streams) {
    Case c;
    c.label = s.label;
    c.stdin_shell = s.shell;
    c.extra_args = s.args;
    c.must_reject = s.reject;
    c.must_count = true;
    c.min_events = s.reject ? 0 : 1000;
    c.min_timed = c.min_events;
    c.bound_s = 300;
    tally.check(c);
  }
}

// The base's events plus an operator and the kernel it launches, both named `quoted` (JSON string
// text), dominating the GPU time so the name reaches the findings and the tables of every report.
std::vector<std::string> with_named_op_and_kernel(const Base& b, const std::string& quoted) {
  std::vector<std::string> evs = b.events;
  evs.push_back(R"({"ph":"X","cat":"cpu_op","name":)" + quoted +
                R"(,"pid":100,"tid":100,"ts":1400,"dur":50,"args":{"External id":77}})");
  evs.push_back(
      R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":1410,"dur":5,"args":{"External id":77,"correlation":77}})");
  evs.push_back(R"({"ph":"X","cat":"kernel","name":)" + quoted +
                R"(,"pid":0,"tid":7,"ts":1420,"dur":500,"args":{"correlation":77,"stream":7}})");
  return evs;
}

TEST(BrokenInputs, MarkupInNames) {
  ClassTally tally("markup and paths in trace text",
                   "HTML, Markdown and file paths in names: escaped in --md, never opened");
  const Base& b = kineto_base();
  const std::string dir = temp_path("reliability-paths");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::string> names = {"<script>alert(1)</script>", "a|b|c **bold** `code` [link](http://x)",
                                          "<img src=x onerror=alert(1)>", dir + "/written-if-opened.json",
                                          "../../../../" + dir + "/traversal.json"};
  for (const std::string& name : names) {
    Case c = whole(b, name, b.text_of(with_named_op_and_kernel(b, json(name).dump())), false);
    c.check_output = [name](const std::string& md, const std::string&) {
      EXPECT_EQ(md.find("<script"), std::string::npos) << "raw <script> in markdown";
      EXPECT_EQ(md.find("<img"), std::string::npos) << "raw <img> in markdown";
      if (name.rfind("<script>", 0) == 0) {  // present, as text: & < > become entities
        EXPECT_NE(md.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos) << md.substr(0, 2000);
      }
    };
    tally.check(c);
  }
  // A trace that names files in its header and args: ferret never opens or creates them.
  Base header = b;
  header.prologue = "{\n  \"traceName\": " + json(dir + "/trace-name.json").dump() +
                    ",\n  \"source\": " + json(dir + "/source.json").dump() + ",\n" + b.prologue.substr(2);
  tally.check(whole(b, "file paths in the header", header.text(), false));
  for (const char* f : {"/written-if-opened.json", "/traversal.json", "/trace-name.json", "/source.json"})
    EXPECT_FALSE(fs::exists(dir + f)) << "ferret created a file named in the trace: " << f;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// NCCL logs: `ferret nccl` reads another format (lines of text, from every rank), with promises of
// its own: no crash, no hang, output bounded by what the log holds (never by what a line claims,
// such as nranks), byte-identical --json, damage counted, and a message naming the file on exit 2.

struct NcclCase {
  std::string label;
  std::string bytes;        // the log, written to a temporary file
  std::string stdin_shell;  // or: this pipeline feeds stdin
  std::string extra_args;
  bool must_count = false;  // damage: not-understood, long or implausible lines, or a stop, must show
  double bound_s = 30;
};

class NcclTally : public CaseTally<NcclCase> {
 public:
  using CaseTally::CaseTally;

 private:
  void check_case(const NcclCase& c) override {
    const std::string tag = name_ + " / " + c.label;
    std::string target = "-";
    if (c.stdin_shell.empty()) {
      target = temp_path("nccl-case.log");
      write_file(target, c.bytes);
    }
    const std::string args = c.extra_args + " " + (target == "-" ? std::string("-") : shell_quote(target));
    std::vector<Run> runs = {run("nccl --json " + args, c.stdin_shell, c.bound_s)};
    if (c.stdin_shell.empty())
      for (const char* form : {"nccl --json ", "nccl --md ", "nccl "}) runs.push_back(run(form + args, "", c.bound_s));
    if (c.stdin_shell.empty()) std::remove(target.c_str());
    for (const Run& r : runs) {
      max_seconds_ = std::max(max_seconds_, r.seconds);
      if (r.timed_out) ADD_FAILURE() << tag << ": hung past " << c.bound_s << " s";
      if (r.signal) ADD_FAILURE() << tag << ": crashed with signal " << r.signal << ": " << r.err.substr(0, 300);
      if (r.exit_code != 0 && r.exit_code != 2 && !r.timed_out && !r.signal)
        ADD_FAILURE() << tag << ": exit code " << r.exit_code << ": " << r.err.substr(0, 300);
      // Output is bounded by what the log holds: 1 MiB plus 4 bytes per input byte at most.
      const std::size_t input = c.stdin_shell.empty() ? c.bytes.size() : 0;
      if (r.out.size() > (std::size_t{1} << 20) + 4 * input)
        ADD_FAILURE() << tag << ": " << r.out.size() << " bytes of output for " << input << " bytes of log";
    }
    const Run& first = runs.front();
    if (first.exit_code == 2) {
      const std::string shown = target == "-" ? "-" : target;
      if (first.err.find(shown) == std::string::npos)
        ADD_FAILURE() << tag << ": exit 2 without naming the input: " << first.err.substr(0, 300);
      ++outcomes_[kRejected];
      return;
    }
    if (first.exit_code != 0) return;
    const json doc = json::parse(first.out, nullptr, false);
    if (doc.is_discarded() || !doc.contains("sources") || doc["sources"].empty()) {
      ADD_FAILURE() << tag << ": nccl --json is not a valid document";
      return;
    }
    if (runs.size() > 1 && runs[1].out != first.out) ADD_FAILURE() << tag << ": two --json runs differ";
    const json& src = doc["sources"][0];
    const std::uint64_t counted = src.value("not_understood", std::uint64_t{0}) +
                                  src.value("long_lines", std::uint64_t{0}) +
                                  src.value("implausible_lines", std::uint64_t{0});
    const bool stopped = !src.value("stopped", std::string()).empty() || !src.value("damage", std::string()).empty();
    if (c.must_count && counted == 0 && !stopped) ADD_FAILURE() << tag << ": the damage is not counted";
    ++outcomes_[stopped ? kStoppedEarly : counted > 0 ? kRepaired : kLoaded];
  }
};

NcclCase nccl_case(std::string label, std::string bytes, bool must_count = false) {
  NcclCase c;
  c.label = std::move(label);
  c.bytes = std::move(bytes);
  c.must_count = must_count;
  return c;
}

std::string nccl_init_line(const std::string& host, int rank, const std::string& nranks, const std::string& comm) {
  return host + ":1:1 [0] NCCL INFO comm " + comm + " rank " + std::to_string(rank) + " nranks " + nranks +
         " cudaDev 0 busId 1a000 commId " + comm + " - Init START\n";
}

TEST(BrokenInputs, NcclLogs) {
  NcclTally tally("NCCL logs",
                  "huge and absurd nranks, thousands of communicators and hosts, megabyte lines, binary and NUL "
                  "bytes, cut and damaged compression, endless streams of junk and of valid lines");
  const std::string sound = read_file(std::string(FERRET_SOURCE_DIR) + "/tests/data/nccl/two_host_ib_gdr.log");
  tally.check(nccl_case("a sound two-host log", sound));
  std::string huge;
  for (int i = 0; i < 50; ++i) huge += nccl_init_line("h", 0, "1048576", "0x" + std::to_string(i));
  tally.check(nccl_case("nranks 1048576 on 50 lines", huge));
  std::string many;
  for (int i = 0; i < 5000; ++i) many += nccl_init_line("h", 0, "1048576", "0x" + std::to_string(i));
  tally.check(nccl_case("nranks 1048576 on 5,000 communicators", many));
  for (const char* n : {"2147483648", "9223372036854775808", "-1", "0", "abc", "1e9"})
    tally.check(nccl_case(std::string("nranks ") + n, nccl_init_line("h", 0, n, "0x1"), true));
  tally.check(nccl_case("rank past nranks", nccl_init_line("h", 99, "8", "0x1"), true));
  std::string hosts;
  for (int i = 0; i < 100000; ++i) hosts += nccl_init_line("host" + std::to_string(i), i % 8, "8", "0x1");
  tally.check(nccl_case("100,000 host names on one communicator", hosts));
  tally.check(nccl_case("one 1 MiB line", "h:1:1 [0] NCCL INFO " + std::string(1 << 20, 'x') + "\n" + sound, true));
  tally.check(nccl_case("16 MiB without a newline", sound + "h:1:1 [0] NCCL INFO " + std::string(16 << 20, 'y'), true));
  Random rnd(7);
  std::string binary(1 << 20, '\0');
  for (char& ch : binary) ch = static_cast<char>(rnd.below(256));
  tally.check(nccl_case("1 MiB of random bytes", binary));
  std::string nul = sound;
  for (std::size_t at = 40; at < nul.size(); at += 97) nul[at] = '\0';
  tally.check(nccl_case("NUL bytes inside lines", nul));
  tally.check(nccl_case("cut inside the last line", sound.substr(0, sound.size() - 17)));
  const std::string gz = gzip_bytes(sound);
  tally.check(nccl_case("gzip cut in half", gz.substr(0, gz.size() / 2), true));
  const std::string zs = zstd_bytes(sound);
  tally.check(nccl_case("zstd cut in half", zs.substr(0, zs.size() / 2), true));
  tally.check(nccl_case("empty file", ""));
  NcclCase zero{"endless zeros on stdin", "", "cat /dev/zero", "--max-bytes-without-progress 16MiB", true, 120};
  tally.check(zero);
  NcclCase valid{
      "endless valid lines on stdin", "",   "yes " + shell_quote(nccl_init_line("h", 0, "8", "0x1").substr(0, 90)),
      "--max-memory 96MiB",           true, 300};
  tally.check(valid);
}

// ---------------------------------------------------------------------------------------------
// `ferret memory` on allocator snapshots and on memory text (memory_summary() tables, out-of-memory
// messages; docs/MEMORY.md, "Reading it safely" and "Bounds and damage"): no crash, no hang, exit 0
// or 2 naming the file, output bounded by the input, byte-identical --json, damage counted in the
// notes, text and Markdown safe for a terminal.

struct MemoryCase {
  std::string label;
  std::string bytes;         // written to a temporary file
  std::string stdin_shell;   // or: this pipeline feeds stdin
  bool must_count = false;   // damage: notes (cut boxes, bad cells, bad fields, dropped records) must show
  bool must_reject = false;  // nothing is usable (or the stream must not be run): exit 2 expected
  double bound_s = 30;
  std::function<void(const std::string& tag)> after;  // a further promise, checked after the runs
};

class MemoryTally : public CaseTally<MemoryCase> {
 public:
  // section: "texts" or "snapshots", where --json lists what each case's file was read as.
  MemoryTally(std::string name, std::string what, std::string section)
      : CaseTally(std::move(name), std::move(what)), section_(std::move(section)) {}

 private:
  void check_case(const MemoryCase& c) override {
    check_runs(c);
    if (c.after) c.after(name_ + " / " + c.label);
  }

  void check_runs(const MemoryCase& c) {
    const std::string tag = name_ + " / " + c.label;
    std::string target = "-";
    if (c.stdin_shell.empty()) {
      target = temp_path("memory-case.bin");
      write_file(target, c.bytes);
    }
    const std::string arg = target == "-" ? std::string("-") : shell_quote(target);
    std::vector<Run> runs = {run("memory --json " + arg, c.stdin_shell, c.bound_s)};
    if (c.stdin_shell.empty())
      for (const char* form : {"memory --json ", "memory --md ", "memory "})
        runs.push_back(run(form + arg, "", c.bound_s));
    if (c.stdin_shell.empty()) std::remove(target.c_str());
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const Run& r = runs[i];
      max_seconds_ = std::max(max_seconds_, r.seconds);
      if (r.timed_out) ADD_FAILURE() << tag << ": hung past " << c.bound_s << " s";
      if (r.signal) ADD_FAILURE() << tag << ": crashed with signal " << r.signal << ": " << r.err.substr(0, 300);
      if (r.exit_code != 0 && r.exit_code != 2 && !r.timed_out && !r.signal)
        ADD_FAILURE() << tag << ": exit code " << r.exit_code << ": " << r.err.substr(0, 300);
      const std::size_t input = c.stdin_shell.empty() ? c.bytes.size() : 0;
      if (r.out.size() > (std::size_t{1} << 20) + 4 * input)
        ADD_FAILURE() << tag << ": " << r.out.size() << " bytes of output for " << input << " bytes of input";
      // The Markdown and text reports (runs 2 and 3) and every stderr hold no raw control byte.
      if (i >= 2 && r.exit_code == 0)
        if (const std::string hazard = terminal_hazard(r.out); !hazard.empty())
          ADD_FAILURE() << tag << ": report: " << hazard;
      if (const std::string hazard = terminal_hazard(r.err); !hazard.empty())
        ADD_FAILURE() << tag << ": stderr: " << hazard;
    }
    const Run& first = runs.front();
    if (c.must_reject && first.exit_code != 2) ADD_FAILURE() << tag << ": read, where it must be refused";
    if (first.exit_code == 2) {
      if (first.err.find(target) == std::string::npos)
        ADD_FAILURE() << tag << ": exit 2 without naming the input: " << first.err.substr(0, 300);
      ++outcomes_[kRejected];
      return;
    }
    if (first.exit_code != 0) return;
    const json doc = json::parse(first.out, nullptr, false);
    if (doc.is_discarded() || !doc.contains(section_) || doc[section_].size() != 1) {
      ADD_FAILURE() << tag << ": memory --json is not a valid document with one entry in " << section_;
      return;
    }
    if (runs.size() > 1 && runs[1].out != first.out) ADD_FAILURE() << tag << ": two --json runs differ";
    const std::size_t counted = doc[section_][0]["notes"].size();
    if (c.must_count && counted == 0) ADD_FAILURE() << tag << ": the damage is not counted";
    ++outcomes_[counted > 0 ? kRepaired : kLoaded];
  }

  std::string section_;
};

MemoryCase memory_case(std::string label, std::string bytes, bool must_count = false, bool must_reject = false) {
  MemoryCase c;
  c.label = std::move(label);
  c.bytes = std::move(bytes);
  c.must_count = must_count;
  c.must_reject = must_reject;
  return c;
}

TEST(BrokenInputs, MemoryText) {
  MemoryTally tally("Memory text",
                    "memory_summary() tables cut, with bad cells and huge numbers; out-of-memory messages with "
                    "100,000 processes; thousands of summaries; megabyte lines, binary and NUL bytes, damaged "
                    "compression, an endless stream",
                    "texts");
  const std::string dir = std::string(FERRET_SOURCE_DIR) + "/tests/data/memory/";
  const std::string summary = read_file(dir + "summary-torch2.txt");
  const std::string oom = read_file(dir + "oom-in-traceback.log");
  const std::string sound = summary + oom;
  tally.check(memory_case("a summary and a message", sound));
  tally.check(memory_case("summary cut in half", summary.substr(0, summary.size() / 2), true));
  std::string bad = summary;
  for (std::size_t at = bad.find("MiB"); at != std::string::npos; at = bad.find("MiB", at + 3)) bad[at] = 'Q';
  tally.check(memory_case("every MiB cell misspelt", bad, true));
  std::string big = summary;
  for (std::size_t at = big.find("  2048 MiB"); at != std::string::npos; at = big.find("  2048 MiB", at + 1))
    big.replace(at, 10, "99999999999999999999999 PiB");
  tally.check(memory_case("cells past int64", big));
  std::string many;
  for (int i = 0; i < 5000; ++i) many += summary;
  tally.check(memory_case("5,000 summaries", many, true));
  std::string procs =
      "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 0 bytes is "
      "free. ";
  for (int i = 0; i < 100000; ++i) procs += "Process " + std::to_string(i) + " has 1.00 GiB memory in use. ";
  procs +=
      "Of the allocated memory 1.00 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.\n";
  tally.check(memory_case("a message naming 100,000 processes", procs, true));
  tally.check(memory_case("one 1 MiB line", std::string(1 << 20, 'x') + "\n" + sound, true));
  tally.check(memory_case("16 MiB without a newline", sound + std::string(16 << 20, 'y'), true));
  Random rnd(11);
  std::string binary(1 << 20, '\0');
  for (char& ch : binary) ch = static_cast<char>(rnd.below(256));
  binary[0] = 'x';  // text, not a pickle
  tally.check(memory_case("1 MiB of random bytes", binary));
  std::string nul = sound;
  for (std::size_t at = 40; at < nul.size(); at += 97) nul[at] = '\0';
  tally.check(memory_case("NUL bytes inside lines", nul));
  const std::string gz = gzip_bytes(sound);
  tally.check(memory_case("gzip cut in half", gz.substr(0, gz.size() / 2)));
  tally.check(memory_case("empty file", ""));
  MemoryCase endless{"endless junk on stdin", "", "yes 'not a memory line'", false, false, 180, {}};
  tally.check(endless);
}

std::string p_sound_segment(int device = 0) {
  return p_segment(p_int(device), p_int(40 << 20),
                   p_list({p_block(30 << 20, "active_allocated", p_list({p_frame("train.py", "forward")})),
                           p_block(10 << 20, "inactive")}));
}

TEST(BrokenInputs, AllocatorSnapshots) {
  MemoryTally tally("Allocator snapshots",
                    "pickles cut and byte-flipped; opcodes that import or call (refused, never run); lengths, "
                    "frames and memo indexes claiming exabytes; lists nested 1,000,000 deep; a memoized list "
                    "shared 10,000 times; a 1 MiB string named 3,000 to 300,000 times by the memo (as segment "
                    "type, setting, pool id, frame file name, dict key, block state); 20,000 segments, 10,000 devices, "
                    "absurd device indexes and sizes; "
                    "every field of the wrong type; control characters in frames and settings; damaged "
                    "compression",
                    "snapshots");
  const std::string seeds = std::string(FERRET_SOURCE_DIR) + "/fuzz/seeds-pickle/";
  for (const char* name : {"snapshot-1.13.pickle", "snapshot-oom-fragmentation.pickle", "cycle.pickle",
                           "values-p2.pickle", "values-p4.pickle"})
    tally.check(memory_case(std::string(name) + " as written", read_file(seeds + name)));
  const std::string sound = read_file(seeds + "snapshot-oom-fragmentation.pickle");
  for (int i = 1; i <= 12; ++i) {
    const std::size_t at = sound.size() * i / 13;
    // A job killed while writing its snapshot: read as far as it goes, and said (or refused
    // when nothing whole is left).
    tally.check(memory_case("cut at byte " + std::to_string(at), sound.substr(0, at), true));
  }
  Random rng(20261205);
  for (int i = 0; i < 24; ++i) {
    std::string flipped = sound;
    const std::size_t flips = 1 + rng.below(4);
    for (std::size_t f = 0; f < flips; ++f)
      flipped[2 + rng.below(flipped.size() - 2)] = static_cast<char>(rng.below(256));
    tally.check(memory_case("byte flips, seed case " + std::to_string(i), flipped));
  }

  // Streams that would run code in Python: refused at their opcode, and nothing runs.
  const std::string marker = temp_path("pickle-ran-code");
  std::remove(marker.c_str());
  const auto nothing_ran = [marker](const std::string& tag) {
    if (fs::exists(marker)) ADD_FAILURE() << tag << ": the pickle's command ran";
  };
  const std::string command = p_str("touch " + marker) + "\x85";  // TUPLE1
  for (const auto& [label, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"GLOBAL posix.system then REDUCE", p_pickle("cposix\nsystem\n" + command + "R")},
           {"STACK_GLOBAL os.system then REDUCE",
            std::string("\x80\x04", 2) + p_str("os") + p_str("system") + "\x93" + command + "R."},
           {"GLOBAL builtins.eval inside a snapshot's segment list",
            p_pickle(p_dict({{"segments", "cbuiltins\neval\n" + p_str("1") + "\x85R"}}))},
           {"BUILD on a dict", p_pickle("}" + p_dict({{"a", p_int(1)}}) + "b")},
           {"a persistent id", p_pickle(p_str("x") + "Q")}}) {
    MemoryCase c = memory_case(label, bytes, false, true);
    c.after = nothing_ran;
    tally.check(c);
  }

  // Lengths and indexes far past the stream.
  for (const auto& [label, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"a string claiming 4 GiB", std::string("\x80\x02X", 3) + le_bytes(0xffffffffu, 4) + "abc."},
           {"a string claiming 2^63 bytes", std::string("\x80\x04\x8d", 3) + le_bytes(1ull << 63, 8) + "abc."},
           {"bytes claiming 2^62 bytes", std::string("\x80\x04\x8e", 3) + le_bytes(1ull << 62, 8) + "abc."},
           {"a frame claiming 2^62 bytes", std::string("\x80\x04\x95", 3) + le_bytes(1ull << 62, 8) + "}."},
           {"an integer of 2^31 bytes", std::string("\x80\x02\x8b", 3) + le_bytes(0x7fffffffu, 4) + "\x01."},
           {"a memo index of 2^32 - 1", p_pickle(p_memo_get(0xffffffffu))},
           {"a lone PROTO byte", std::string("\x80", 1)},
           {"protocol 6", std::string("\x80\x06}.", 4)},
           {"STOP on an empty stack", std::string("\x80\x02.", 3)},
           {"1,000,000 lists left on the stack", std::string("\x80\x02", 2) + std::string(1000000, ']') + "."}})
    tally.check(memory_case(label, bytes, false, true));

  // Structure: deep, shared, wide.
  const int depth = 1000000;
  const std::string deep = std::string(depth, ']') + std::string(depth - 1, 'a');  // each APPEND nests
  tally.check(memory_case("lists nested 1,000,000 deep beside the segments",
                          p_snapshot({p_sound_segment()}, p_str("junk") + deep)));
  tally.check(
      memory_case("a block's frames nested 1,000,000 deep",
                  p_snapshot({p_segment(p_int(0), p_int(1 << 20), p_list({p_block(1 << 20, "inactive", deep)}))})));
  {
    std::vector<std::string> blocks(1000, p_block(4096, "active_allocated"));
    std::string shared = p_list(blocks) + p_memo_put(0);
    std::vector<std::string> segments;
    segments.push_back(p_segment(p_int(0), p_int(1 << 30), shared));
    for (int i = 1; i < 10000; ++i) segments.push_back(p_segment(p_int(0), p_int(1 << 30), p_memo_get(0)));
    MemoryCase c = memory_case("one memoized 1,000-block list shared by 10,000 segments", p_snapshot(segments));
    c.bound_s = 60;
    tally.check(c);
  }
  // One large value the memo names many times, at 5 bytes a use: each copy is cut to what the
  // field holds and counted, strings are compared and hashed once, and the whole read keeps to
  // --max-memory (before: 3.08 GB under --max-memory 256M, a 314 MB report, 33-77 s of hashing).
  {
    const std::string big = p_str(std::string(std::size_t{1} << 20, 'x')) + p_memo_put(0);
    const auto bounded = [](const std::string& label, const std::string& bytes, bool counted = true) {
      MemoryCase c = memory_case(label, bytes, counted);
      c.bound_s = 20;
      c.after = [bytes](const std::string& tag) {
        if (test::kUnderSanitizer) return;
        const std::string path = temp_path("memo-bomb.pickle");
        write_file(path, bytes);
        const test::CommandResult r =
            test::run_shell("/usr/bin/time -f 'peak %M' {ferret} memory --max-memory 256M " + path + " >/dev/null");
        std::remove(path.c_str());
        const std::size_t at = r.err.rfind("peak ");
        const long long peak_kib = at == std::string::npos ? -1 : std::stoll(r.err.substr(at + 5));
        if (peak_kib < 0 || peak_kib > 330 * 1024)
          ADD_FAILURE() << tag << ": peak " << peak_kib << " KiB under --max-memory 256M: " << r.err.substr(0, 300);
      };
      return c;
    };
    std::vector<std::string> segments{
        p_dict({{"device", p_int(0)}, {"total_size", p_int(2 << 20)}, {"segment_type", big}, {"blocks", "]"}}) +
        p_memo_put(1)};
    for (int i = 1; i < 3000; ++i) segments.push_back(p_memo_get(1));
    tally.check(bounded("one 1 MiB segment_type shared by 3,000 segments", p_snapshot(segments)));
    std::string settings = "}(";
    settings += p_str("k0") + big;
    for (int i = 1; i < 300; ++i) settings += p_str(fmt::format("k{}", i)) + p_memo_get(0);
    settings += "u";
    tally.check(bounded("300 allocator settings sharing one 1 MiB value",
                        p_snapshot({p_sound_segment()}, p_str("allocator_settings") + settings)));
    std::vector<std::string> parts(100000, p_int(7));
    std::vector<std::string> pooled{p_dict({{"device", p_int(0)},
                                            {"total_size", p_int(2 << 20)},
                                            {"segment_pool_id", p_list(parts) + p_memo_put(1)},
                                            {"blocks", "]"}})};
    for (int i = 1; i < 3000; ++i)
      pooled.push_back(p_dict(
          {{"device", p_int(0)}, {"total_size", p_int(2 << 20)}, {"segment_pool_id", p_memo_get(1)}, {"blocks", "]"}}));
    tally.check(bounded("a 100,000-int pool id shared by 3,000 segments", p_snapshot(pooled)));
    std::vector<std::string> blocks;
    for (int i = 0; i < 20000; ++i)
      blocks.push_back(p_block(
          512, "inactive",
          p_list({p_dict({{"filename", i == 0 ? big : p_memo_get(0)}, {"line", p_int(i)}, {"name", p_str("f")}})})));
    tally.check(bounded("20,000 frames sharing one 1 MiB file name",
                        p_snapshot({p_segment(p_int(0), p_int(1 << 30), p_list(blocks))})));
    std::string keys = "}(";
    keys += big + "N";
    for (int i = 0; i < 200000; ++i) keys += p_memo_get(0) + "N";
    keys += p_str("segments") + "]u";
    tally.check(bounded("200,000 uses of one 1 MiB dict key", p_pickle(keys), false));
    std::vector<std::string> states{p_dict({{"size", p_int(512)}, {"state", big}}) + p_memo_put(1)};
    for (int i = 1; i < 300000; ++i) states.push_back(p_memo_get(1));
    tally.check(bounded("300,000 uses of a block whose state is 1 MiB",
                        p_snapshot({p_segment(p_int(0), p_int(1 << 30), p_list(states))})));
  }
  {
    std::vector<std::string> segments;
    for (int i = 0; i < 20000; ++i) segments.push_back(p_sound_segment());
    tally.check(memory_case("20,000 segments", p_snapshot(segments)));
  }
  {
    std::vector<std::string> segments;
    for (int i = 0; i < 10000; ++i) segments.push_back(p_sound_segment(i));
    tally.check(memory_case("one segment on each of 10,000 devices", p_snapshot(segments)));
  }
  for (const auto& [label, device] :
       std::vector<std::pair<std::string, std::string>>{{"device index 2^40", p_int(1ll << 40)},
                                                        {"device index -1", p_int(-1)},
                                                        {"device index 2^31 - 1", p_int(2147483647)},
                                                        {"device index a string", p_str("cuda:0")}})
    tally.check(memory_case(label, p_snapshot({p_sound_segment(), p_segment(device, p_int(1 << 20), "]")})));

  // Numbers and types the reader must not trust.
  const std::string big = p_two_to_64();  // LONG1: 2^64
  for (const auto& [label, total] :
       std::vector<std::pair<std::string, std::string>>{{"a negative segment size", p_int(-(1ll << 30))},
                                                        {"a segment size of 2^64", big},
                                                        {"a segment size of NaN", p_float(std::nan(""))},
                                                        {"a segment size of 1e308", p_float(1e308)},
                                                        {"a segment size given as text", p_str("1 GiB")},
                                                        {"a segment size of None", "N"}})
    tally.check(
        memory_case(label, p_snapshot({p_segment(p_int(0), total, p_list({p_block(1 << 20, "inactive")}))}), true));
  tally.check(memory_case(
      "blocks larger than their segment, summing past int64",
      p_snapshot({p_segment(p_int(0), p_int(1 << 20),
                            p_list({p_block(std::numeric_limits<std::int64_t>::max() - 1, "inactive"),
                                    p_block(std::numeric_limits<std::int64_t>::max() - 1, "active_allocated")}))})));
  for (const auto& [label, body] : std::vector<std::pair<std::string, std::string>>{
           {"segments an integer", p_dict({{"segments", p_int(7)}})},
           {"segments a dict", p_dict({{"segments", p_dict({{"a", p_int(1)}})}})},
           {"the root a list", p_list({p_sound_segment()})},
           {"the root None", "N"}})
    tally.check(memory_case(label, p_pickle(body)));
  for (const auto& [label, extra] : std::vector<std::pair<std::string, std::string>>{
           {"blocks a string", ""},
           {"frames an integer", ""},
           {"device_traces a list of integers", p_str("device_traces") + p_list({p_int(1), p_int(2)})},
           {"device_traces holding a string per device", p_str("device_traces") + p_list({p_str("x")})},
           {"allocator_settings a list", p_str("allocator_settings") + p_list({p_int(1)})}}) {
    std::vector<std::string> segments = {p_sound_segment()};
    if (label == "blocks a string") segments.push_back(p_segment(p_int(0), p_int(1 << 20), p_str("x")));
    if (label == "frames an integer")
      segments.push_back(p_segment(p_int(0), p_int(1 << 20), p_list({p_block(1 << 20, "inactive", p_int(5))})));
    tally.check(memory_case(label, p_snapshot(segments, extra),
                            label != "allocator_settings a list" && label != "device_traces a list of integers"));
  }

  // Text that reaches a terminal: frames, states, segment types, settings.
  const std::string evil =
      "\x1b[2J\x1b]52;c;cHduZWQ=\x07\r\n| forged | row |\xc2\x9b"
      "31m\xe2\x80\xae";
  tally.check(
      memory_case("control characters in frames, states, segment types and settings",
                  p_snapshot({p_segment(p_int(0), p_int(3 << 30),
                                        p_list({p_block(1 << 30, "active_allocated", p_list({p_frame(evil, evil)})),
                                                p_block(2 << 30, "inactive"), p_block(1 << 20, evil)}),
                                        evil)},
                             p_str("allocator_settings") + p_dict({{evil, p_str(evil)}}))));

  // Device traces: long, reversed in time, absurd out-of-memory sizes.
  {
    std::vector<std::string> events;
    for (int i = 0; i < 200000; ++i)
      events.push_back(p_dict({{"action", p_str(i % 2 ? "free_completed" : "alloc")},
                               {"addr", p_int(1 << 20)},
                               {"size", p_int(4096)},
                               {"time_us", p_int(1000000 - i)},
                               {"frames", "]"}}));
    events.push_back(p_dict({{"action", p_str("oom")},
                             {"size", p_int(std::numeric_limits<std::int64_t>::max())},
                             {"device_free", p_int(-5)}}));
    tally.check(memory_case("200,000 trace events backwards in time and an oom of 2^63 bytes",
                            p_snapshot({p_sound_segment()}, p_str("device_traces") + p_list({p_list(events)}))));
  }

  const std::string gz = gzip_bytes(sound);
  tally.check(memory_case("gzip whole", gz));
  tally.check(memory_case("gzip cut in half", gz.substr(0, gz.size() / 2), true));
}

// ---------------------------------------------------------------------------------------------
// GPU utilisation logs: `ferret smi` reads lines of text in eight layouts, with the NCCL reader's
// promises: no crash, no hang, output bounded by the log, byte-identical --json, damage counted,
// a message naming the file on exit 2.

struct SmiCase {
  std::string label, bytes;
  bool must_count = false;
  std::string args;
};

class SmiTally : public CaseTally<SmiCase> {
 public:
  using CaseTally::CaseTally;
  void check(const std::string& label, const std::string& bytes, bool must_count, const std::string& args = "") {
    CaseTally::check(SmiCase{label, bytes, must_count, args});
  }

 private:
  void check_case(const SmiCase& c) override {
    const std::string tag = name_ + " / " + c.label;
    const std::string& bytes = c.bytes;
    const std::string& args = c.args;
    const bool must_count = c.must_count;
    const std::string target = temp_path("smi-case.log");
    write_file(target, bytes);
    const std::string quoted = args + " " + shell_quote(target);
    std::vector<Run> runs;
    for (const char* form : {"smi --json ", "smi --json ", "smi --md ", "smi "})
      runs.push_back(run(form + quoted, "", 30));
    std::remove(target.c_str());
    for (const Run& r : runs) {
      max_seconds_ = std::max(max_seconds_, r.seconds);
      if (r.timed_out) ADD_FAILURE() << tag << ": hung past 30 s";
      if (r.signal) ADD_FAILURE() << tag << ": crashed with signal " << r.signal << ": " << r.err.substr(0, 300);
      if (r.exit_code != 0 && r.exit_code != 2 && !r.timed_out && !r.signal)
        ADD_FAILURE() << tag << ": exit code " << r.exit_code << ": " << r.err.substr(0, 300);
      if (r.out.size() > (std::size_t{1} << 20) + 4 * bytes.size())
        ADD_FAILURE() << tag << ": " << r.out.size() << " bytes of output for " << bytes.size() << " bytes of log";
    }
    // The text and Markdown reports (runs 2 and 3) and every stderr hold no raw control byte.
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (i >= 2 && runs[i].exit_code == 0)
        if (const std::string hazard = terminal_hazard(runs[i].out); !hazard.empty())
          ADD_FAILURE() << tag << ": report: " << hazard;
      if (const std::string hazard = terminal_hazard(runs[i].err); !hazard.empty())
        ADD_FAILURE() << tag << ": stderr: " << hazard;
    }
    const Run& first = runs.front();
    if (first.exit_code == 2) {
      if (first.err.find(target) == std::string::npos)
        ADD_FAILURE() << tag << ": exit 2 without naming the input: " << first.err.substr(0, 300);
      ++outcomes_[kRejected];
      return;
    }
    if (first.exit_code != 0) return;
    const json doc = json::parse(first.out, nullptr, false);
    if (doc.is_discarded() || !doc.contains("sources") || doc["sources"].empty()) {
      ADD_FAILURE() << tag << ": smi --json is not a valid document";
      return;
    }
    if (runs[1].out != first.out) ADD_FAILURE() << tag << ": two --json runs differ";
    const json& src = doc["sources"][0];
    const std::uint64_t counted =
        src.value("skipped_lines", std::uint64_t{0}) + src.value("ragged_rows", std::uint64_t{0}) +
        src.value("not_available_values", std::uint64_t{0}) + src.value("ignored_gpus", std::uint64_t{0});
    const bool stopped = !src.value("stopped", std::string()).empty() || !src.value("damage", std::string()).empty();
    if (must_count && counted == 0 && !stopped) ADD_FAILURE() << tag << ": the damage is not counted";
    ++outcomes_[stopped ? kStoppedEarly : counted > 0 ? kRepaired : kLoaded];
  }
};

TEST(BrokenInputs, SmiLogs) {
  SmiTally tally("GPU utilisation logs",
                 "every layout cut, ragged rows, [N/A], garbage and binary lines, megabyte lines, thousands of GPUs "
                 "and processes, control characters in names, an empty file, cut compression");
  const std::string dir = std::string(FERRET_SOURCE_DIR) + "/tests/data/smi/";
  for (const char* name :
       {"query-two-gpus.csv", "dmon-dt.txt", "pmon.txt", "dcgmi-dmon.txt", "dcgm-exporter.prom", "rocm-smi.csv",
        "amd-smi.csv", "table-535-slurm.log", "table-418-unused-gpu.log", "table-550-mig.log"}) {
    const std::string sound = read_file(dir + name);
    tally.check(std::string(name) + " as written", sound, false);
    tally.check(std::string(name) + " cut inside its last line", sound.substr(0, sound.size() - 7), false);
    tally.check(std::string(name) + " cut in half", sound.substr(0, sound.size() / 2), false);
    std::string ragged = sound;
    for (std::size_t at = ragged.find('\n', 300); at != std::string::npos && at + 1 < ragged.size();
         at = ragged.find('\n', at + 400))
      ragged.insert(at + 1, "1, 2\n");
    tally.check(std::string(name) + " with ragged rows", ragged, true);
    tally.check(std::string(name) + " with a 1 MiB line", sound + std::string(1 << 20, 'x') + "\n" + sound, true);
    std::string nul = sound;
    for (std::size_t at = 200; at < nul.size(); at += 97) nul[at] = '\0';
    tally.check(std::string(name) + " with NUL bytes inside lines", nul, false);
    const std::string gz = gzip_bytes(sound);
    tally.check(std::string(name) + " gzip cut in half", gz.substr(0, gz.size() / 2), false);
  }
  std::string gpus = "index, name, utilization.gpu [%]\n";
  for (int i = 0; i < 20000; ++i) gpus += std::to_string(i) + ", \x1b[31mGPU\x07, 50 %\n";
  tally.check("20,000 GPU indexes with escape sequences in names", gpus, true);
  std::string pmon = "# gpu pid type sm mem enc dec command\n";
  for (int i = 0; i < 50000; ++i) pmon += "0 " + std::to_string(i) + " C 5 0 - - \x1b]0;title\x07\n";
  tally.check("50,000 processes with control characters", pmon, false);
  Random rnd(11);
  std::string binary = "timestamp, utilization.gpu [%]\n";
  for (int i = 0; i < (1 << 20); ++i) binary += static_cast<char>(rnd.below(256));
  tally.check("a header then 1 MiB of random bytes", binary, true);
  tally.check("an empty file", "", false);
  tally.check("a headerless CSV", "2024/01/31 12:00:00.000, 0, 50\n", false);
  tally.check("a headerless CSV with --columns and garbage", "2024/01/31 12:00:00.000, 0, 50\nzz, yy, xx\n", true,
              "--columns timestamp,index,utilization.gpu");
}

// ---------------------------------------------------------------------------------------------
// Watched commands: `ferret watch` reads /proc while a command it does not control runs. Whatever
// the command does - fork thousands of processes, nest deep, leave a daemon behind, name itself
// with escape sequences, fail to start, die by a signal - ferret ends when the command ends, exits
// with the command's status, and writes a report that is valid JSON and safe for a terminal.

struct WatchCase {
  std::string label;
  std::string command;  // shell text after `--`
  int exit_code = 0;    // the command's status, which ferret must return
  bool runs = true;     // false: the command cannot start (ferret says so, exit 126/127)
  double bound_s = 30;
};

class WatchTally : public CaseTally<WatchCase> {
 public:
  using CaseTally::CaseTally;

 private:
  void check_case(const WatchCase& c) override {
    const std::string tag = name_ + " / " + c.label;
    const std::string report = temp_path("watch-case.report");
    std::string json_text;
    for (const char* form : {"--json", "--md", ""}) {
      std::remove(report.c_str());
      const Run r =
          run(std::string("watch --interval 50 ") + form + " --out " + shell_quote(report) + " -- " + c.command, "",
              c.bound_s);
      max_seconds_ = std::max(max_seconds_, r.seconds);
      if (r.timed_out) ADD_FAILURE() << tag << ": hung past " << c.bound_s << " s";
      if (r.signal && r.exit_code != c.exit_code)
        ADD_FAILURE() << tag << ": crashed with signal " << r.signal << ": " << r.err.substr(0, 300);
      if (!r.timed_out && r.exit_code != c.exit_code)
        ADD_FAILURE() << tag << ": exit code " << r.exit_code << ", the command's was " << c.exit_code << ": "
                      << r.err.substr(0, 300);
      if (const std::string hazard = terminal_hazard(r.err); !hazard.empty())
        ADD_FAILURE() << tag << ": stderr: " << hazard;
      if (!c.runs) continue;
      const std::string out = read_file(report);
      if (out.size() > (std::size_t{4} << 20)) ADD_FAILURE() << tag << ": a report of " << out.size() << " bytes";
      if (std::string(form) == "--json")
        json_text = out;
      else if (const std::string hazard = terminal_hazard(out); !hazard.empty())
        ADD_FAILURE() << tag << " (" << (*form ? form : "text") << "): report: " << hazard;
    }
    std::remove(report.c_str());
    if (!c.runs) {
      ++outcomes_[kRejected];
      return;
    }
    const json doc = json::parse(json_text, nullptr, false);
    if (doc.is_discarded() || doc.value("schema", "") != "ferret.watch/1") {
      ADD_FAILURE() << tag << ": watch --json is not a ferret.watch/1 document: " << json_text.substr(0, 200);
      return;
    }
    ++outcomes_[kLoaded];
  }
};

TEST(BrokenInputs, WatchedCommands) {
  WatchTally tally("Watched commands",
                   "3,000 short-lived processes, 300 alive at once, a chain 100 deep, a daemon left behind, "
                   "escape sequences in process names and in the command line, closed output, a command that "
                   "cannot start, death by signal");
  const std::string sh = "sh -c ";
  tally.check({"3,000 short-lived processes", sh + shell_quote("for i in $(seq 3000); do true & done; wait"), 0});
  tally.check({"300 sleeping children at once", sh + shell_quote("for i in $(seq 300); do sleep 1 & done; wait"), 0});
  tally.check(
      {"a process chain 100 deep",
       "bash -c " + shell_quote("f() { if [ $1 -gt 0 ]; then f $(( $1 - 1 )) & wait; else sleep 0.5; fi; }; f 100"),
       0});
  // The report follows the command's main process: a daemon it leaves behind must not hold ferret.
  tally.check(
      {"a daemon outliving the command", sh + shell_quote("setsid sleep 60 >/dev/null 2>&1 & exit 3"), 3, true, 20});
  const std::string dir = temp_path("watch-names");
  fs::create_directories(dir);
  const std::string evil_name = dir + "/\x1b]0;t\x07\x1b[2J\r\n| forged";
  fs::copy_file("/bin/sleep", evil_name, fs::copy_options::overwrite_existing);
  tally.check({"escape sequences in the process name", shell_quote(evil_name) + " 0.3", 0});
  tally.check({"escape sequences in the command line",
               sh + shell_quote("sleep 0.2; exit 0") + " " + shell_quote("\x1b[2J\x1b]52;c;eA==\x07\r\n| forged |"),
               0});
  tally.check({"stdout and stderr closed", sh + shell_quote("exec >&- 2>&-; sleep 0.2"), 0});
  tally.check({"a command that does not exist", "/nonexistent/command", 127, false});
  tally.check({"a directory as the command", shell_quote(dir), 126, false});
  tally.check({"death by SIGSEGV", sh + shell_quote("kill -SEGV $$"), 128 + 11});
  // (SIGTERM, not SIGKILL: the harness reads 137 as its own timeout's kill.)
  tally.check({"death by SIGTERM with children left", sh + shell_quote("sleep 30 & sleep 30 & kill -TERM $$"), 128 + 15,
               true, 20});
  tally.check({"a command that ends at once", "true", 0});
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Many devices, streams, threads and processes: per-device (per-stream, per-thread) work must be
// sized by what each holds, so a small trace naming thousands of them stays small and quick.

TEST(BrokenInputs, ManyDevices) {
  ClassTally tally("many devices, streams, threads and processes",
                   "one kernel on each of 10,000 devices, 20,000 streams, 50,000 threads, 10,000 processes, "
                   "10,000 device properties");
  const Base& b = kineto_base();
  auto add = [&](const std::string& label, const std::function<std::string(int)>& event, int n) {
    std::vector<std::string> evs = b.events;
    for (int i = 0; i < n; ++i) evs.push_back(event(i));
    Case c = whole(b, label, b.text_of(evs), false);
    c.bound_s = 60;
    tally.check(c);
  };
  const auto kernel_on = [](int device, int stream) {
    return R"({"ph":"X","cat":"kernel","name":"k","pid":)" + std::to_string(device) + R"(,"tid":)" +
           std::to_string(stream) + R"(,"ts":2000,"dur":5,"args":{"device":)" + std::to_string(device) +
           R"(,"stream":)" + std::to_string(stream) + "}}";
  };
  add(
      "one kernel on each of 10,000 devices", [&](int i) { return kernel_on(i, 7); }, 10000);
  add(
      "one kernel on each of 20,000 streams", [&](int i) { return kernel_on(0, 7 + i); }, 20000);
  add(
      "one op on each of 50,000 threads",
      [](int i) {
        return R"({"ph":"X","cat":"cpu_op","name":"aten::add","pid":100,"tid":)" + std::to_string(1000 + i) +
               R"(,"ts":1500,"dur":2})";
      },
      50000);
  add(
      "one op in each of 10,000 processes",
      [](int i) {
        return R"({"ph":"X","cat":"cpu_op","name":"aten::add","pid":)" + std::to_string(1000 + i) +
               R"(,"tid":1,"ts":1500,"dur":2})";
      },
      10000);
  Base props = b;
  std::string devices = "\"deviceProperties\": [";
  for (int i = 0; i < 10000; ++i)
    devices += std::string(i ? "," : "") + R"({"id":)" + std::to_string(i) +
               R"(,"name":"NVIDIA H100 80GB HBM3","totalGlobalMem":85520809984,"computeMajor":9,"numSms":132})";
  props.prologue = "{\n  " + devices + "],\n" + b.prologue.substr(2);
  Case c = whole(b, "10,000 device properties", props.text(), false);
  c.bound_s = 60;
  tally.check(c);
}

TEST(BrokenInputs, ControlCharactersInStringFields) {
  ClassTally tally("control characters in every string field",
                   "ESC sequences (erase screen, OSC 52, OSC 8), BEL, BS, CR, NUL, DEL, C1 CSI, bidi override "
                   "and a newline forging a report line, JSON-escaped in each name and header string: analyze, "
                   "--md, info and stderr show them escaped");
  const Base& b = kineto_base();
  // Each class as JSON string text (valid JSON: the trace is sound, only its text is hostile).
  const std::vector<std::pair<std::string, std::string>> classes = {
      {"ESC [2J", R"(\u001b[2J)"},
      {"OSC 52", R"(\u001b]52;c;ZXZpbA==\u0007)"},
      {"OSC 8", R"(\u001b]8;;http://evil.example/\u001b\\link\u001b]8;;\u001b\\)"},
      {"BEL and BS", R"(\u0007\b)"},
      {"CR", R"(\r)"},
      {"NUL", R"(\u0000)"},
      {"DEL", R"(\u007f)"},
      {"C1 CSI U+009B", R"(\u009b2J)"},
      {"bidi override U+202E", R"(\u202e)"},
      {"newline and a forged line", R"(\nFORGED: all good)"}};
  for (const auto& entry : classes) {
    // Not a structured binding: clang before 16 cannot capture one in a lambda.
    const std::string& class_name = entry.first;
    const std::string value = "\"x" + entry.second + "y\"";
    auto add = [&](const std::string& field, const std::string& bytes) {
      EXPECT_NE(bytes, b.text()) << field << ": the hostile text did not land";
      Case c = whole(b, class_name + " in " + field, bytes, false);
      c.must_be_terminal_safe = true;
      tally.check(c);
    };
    add("op and kernel names", b.text_of(with_named_op_and_kernel(b, value)));
    auto in_events = [&](const std::string& from) {
      std::vector<std::string> evs = b.events;
      for (std::string& e : evs) e = replace_all(e, from, value);
      return b.text_of(evs);
    };
    add("thread name", in_events(R"x("thread 100 (python)")x"));
    add("process name", in_events(R"("python3")"));
    // Header values as make_base wrote them ("key": value, compact JSON inside).
    auto in_header = [&](const std::vector<std::pair<std::string, std::string>>& replacements) {
      Base header = b;
      for (const auto& [from, to] : replacements) {
        header.prologue = replace_all(header.prologue, from, to);
        header.epilogue = replace_all(header.epilogue, from, to);
      }
      return header.text();
    };
    add("device name", in_header({{R"("NVIDIA H100 80GB HBM3")", value}}));
    add("distributedInfo backend", in_header({{R"("backend":"nccl")", R"("backend":)" + value}}));
    add("distributedInfo nccl_version", in_header({{R"("2.21.5")", value}}));
    add("version", in_header({{R"("cuda_runtime_version": 12040)", R"("cuda_runtime_version": )" + value}}));
    add("setting", in_header({{R"("record_shapes": 1)", R"("record_shapes": )" + value}}));
    add("traceName", in_header({{R"("tiny-kineto2")", value}, {R"("reliability")", value}}));
  }
}

}  // namespace broken_inputs_test
}  // namespace
}  // namespace ferret::test
