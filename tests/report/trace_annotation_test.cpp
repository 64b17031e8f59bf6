// ferret annotate's two halves: the streaming splice (byte-exact copy, the events put at the end
// of traceEvents, truncated documents closed) and the events themselves, read back by a second,
// simpler reader (nlohmann) and by ferret's own loader.
#include "report/trace/trace_annotation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include <nlohmann/json.hpp>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "gen/scenarios.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace trace_annotation_test {

using nlohmann::json;

struct Spliced {
  std::string out;
  SpliceResult result;
};

Spliced splice(const std::string& doc, const std::vector<std::string>& events, std::size_t chunk = 1 << 20) {
  static int n = 0;
  const std::string path = test::temp_path("splice-" + std::to_string(n++) + ".json");
  test::DribbleSource source(doc, chunk);
  Spliced s;
  {
    OutputFile out(path, OutputCompression::kNone);
    s.result = splice_trace(source, "in.json", events, out);
    out.close();
  }
  s.out = test::read_file(path);
  std::remove(path.c_str());
  return s;
}

const std::vector<std::string> kTwo = {R"({"e":1})", R"({"e":2})"};

TEST(SpliceTrace, PutsTheEventsAtTheEndOfTraceEventsAndCopiesEveryOtherByte) {
  const std::string head = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0}],
  "traceEvents": [
  {"ph": "X", "name": "a, [b] {c}", "ts": 1, "dur": 2},
  {"ph": "i", "name": "q\"]}", "ts": 5, "args": {"traceEvents": [1, 2]}}
  )";
  const std::string tail = R"(],
  "traceName": "x", "baseTimeNanoseconds": 17}
)";
  const Spliced s = splice(head + tail, kTwo);
  EXPECT_EQ(s.out, head + R"(,{"e":1},{"e":2})" + tail);
  EXPECT_TRUE(s.result.events_array_found);
  EXPECT_TRUE(s.result.repair.empty());
  EXPECT_EQ(s.result.bytes_copied, (head + tail).size());
}

TEST(SpliceTrace, EmptyArraysBareArraysAndMissingKeys) {
  EXPECT_EQ(splice(R"({"traceEvents":[]})", kTwo).out, R"({"traceEvents":[{"e":1},{"e":2}]})");
  EXPECT_EQ(splice("[{\"ph\":\"X\"}]\n", kTwo).out, "[{\"ph\":\"X\"},{\"e\":1},{\"e\":2}]\n");
  EXPECT_EQ(splice("[ ]", kTwo).out, R"([ {"e":1},{"e":2}])");
  EXPECT_EQ(splice(R"({"a":1})", kTwo).out, R"({"a":1,"traceEvents":[{"e":1},{"e":2}]})");
  EXPECT_EQ(splice("{}", kTwo).out, R"({"traceEvents":[{"e":1},{"e":2}]})");
  // A UTF-8 byte order mark and what follows the root are left out (strict JSON), and said.
  const Spliced bom = splice("\xEF\xBB\xBF{\"traceEvents\":[1]} junk{}\n", kTwo);
  EXPECT_EQ(bom.out, "{\"traceEvents\":[1,{\"e\":1},{\"e\":2}]} \n");
  EXPECT_NE(bom.result.repair.find("in.json: written as strict JSON: the byte order mark left out, 6 bytes after the "
                                   "document left out"),
            std::string::npos)
      << bom.result.repair;
  // Only the first traceEvents array of the root gets them; a nested key of that name is data.
  EXPECT_EQ(splice(R"({"m":{"traceEvents":[]},"traceEvents":[1],"traceEvents":[2]})", kTwo).out,
            R"({"m":{"traceEvents":[]},"traceEvents":[1,{"e":1},{"e":2}],"traceEvents":[2]})");
  // A key written with escapes is the key it decodes to (before: a second key, hiding the events).
  EXPECT_EQ(splice(R"({"trace\u0045vents":[1]})", kTwo).out, R"({"trace\u0045vents":[1,{"e":1},{"e":2}]})");
  EXPECT_EQ(splice(R"({"\u0074raceEvents":[1]})", kTwo, 1).out, R"({"\u0074raceEvents":[1,{"e":1},{"e":2}]})");
  // One decoding to a control character or past ASCII is no name ferret looks for.
  EXPECT_EQ(splice(R"({"traceEvents\u0000":[1]})", kTwo).out,
            R"({"traceEvents\u0000":[1],"traceEvents":[{"e":1},{"e":2}]})");
}

TEST(SpliceTrace, TruncatedDocumentsLoseOnlyTheUnfinishedEventAndAreClosed) {
  Spliced s = splice(R"({"traceEvents":[{"a":1},{"b":[2,3]},{"c":"trunc)", kTwo);
  EXPECT_EQ(s.out, R"({"traceEvents":[{"a":1},{"b":[2,3]},{"e":1},{"e":2}]})");
  EXPECT_NE(s.result.repair.find("truncated"), std::string::npos) << s.result.repair;
  EXPECT_NE(s.result.repair.find("the last 12 bytes"), std::string::npos) << s.result.repair;
  EXPECT_EQ(splice(R"({"traceEvents":[{"a":)", kTwo).out, R"({"traceEvents":[{"e":1},{"e":2}]})");
  EXPECT_EQ(splice(R"({"deviceProperties":[{"id":0},{"id")", kTwo).out,
            R"({"deviceProperties":[{"id":0}],"traceEvents":[{"e":1},{"e":2}]})");
  EXPECT_EQ(splice(R"([{"a":1},{"b)", kTwo).out, R"([{"a":1},{"e":1},{"e":2}])");
  EXPECT_EQ(splice(R"({"x":1,"traceEv)", kTwo).out, R"({"x":1,"traceEvents":[{"e":1},{"e":2}]})");
}

// The loader reads // and /* */ comments between tokens as whitespace. The copy is strict JSON:
// a block comment becomes a space, a line comment goes to its line break, and a bracket inside
// one is never taken for the end of traceEvents.
TEST(SpliceTrace, CommentsAreLeftOutAndTheirBracketsIgnored) {
  const Spliced s = splice("{\"traceEvents\":[1 /* ] } */, 2 // ]}\n]}", kTwo);
  EXPECT_EQ(s.out, "{\"traceEvents\":[1  , 2 \n,{\"e\":1},{\"e\":2}]}");
  EXPECT_NE(s.result.repair.find("2 x comment left out"), std::string::npos) << s.result.repair;
  EXPECT_EQ(splice("// a header ]\n/* { */[1]", kTwo).out, "\n [1,{\"e\":1},{\"e\":2}]");
  // A comment's star-slash split across chunks, and a star run before it.
  EXPECT_EQ(splice("{\"traceEvents\":[/** ] **/]}", kTwo, 1).out, "{\"traceEvents\":[ {\"e\":1},{\"e\":2}]}");
  // A comment alone in the array is not an element: no comma before ferret's events.
  EXPECT_EQ(splice("[/* x */]", kTwo).out, "[ {\"e\":1},{\"e\":2}]");
  // Truncated inside a comment: cut at the last element a comma completed (the '2' is unfinished).
  EXPECT_EQ(splice("{\"traceEvents\":[1,2 /* ]", kTwo).out, "{\"traceEvents\":[1,{\"e\":1},{\"e\":2}]}");
}

// What else the loader tolerates is written strictly, so that the copy is JSON any tool reads
// (before, 7 of 15 such copies were invalid JSON with exit 0): NaN and +-Infinity as null, a
// trailing comma left out, a single-quoted string double-quoted, a second document left out.
// Each read by a strict parser; chunks of one byte as of a megabyte.
TEST(SpliceTrace, WhatTheLoaderToleratesIsWrittenAsStrictJson) {
  struct Case {
    std::string in, out, note;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"traceEvents":[{"dur":NaN,"ts":-Infinity,"v":[Infinity,1e5,-2]}]})",
            R"({"traceEvents":[{"dur":null,"ts":null,"v":[null,1e5,-2]},{"e":1},{"e":2}]})",
            "3 x NaN or Infinity written as null"},
           {R"({"traceEvents":[{"a":[1,2,],},],})", R"({"traceEvents":[{"a":[1,2]},{"e":1},{"e":2}]})",
            "4 x trailing comma left out"},
           {"{\"traceEvents\":[{'name':'it\\'s \"q\"'}]}", R"({"traceEvents":[{"name":"it's \"q\""},{"e":1},{"e":2}]})",
            "2 x single-quoted string double-quoted"},
           {R"({"traceEvents":[1]}{"traceEvents":[2]})", R"({"traceEvents":[1,{"e":1},{"e":2}]})",
            "19 bytes after the document left out"},
           {R"({"traceEvents":[{"name":"NaN, // not /* a comment */ 'x',]"}]})",
            R"({"traceEvents":[{"name":"NaN, // not /* a comment */ 'x',]"},{"e":1},{"e":2}]})", ""},
       }) {
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{1} << 20}) {
      const Spliced s = splice(c.in, kTwo, chunk);
      EXPECT_EQ(s.out, c.out) << c.in << " in chunks of " << chunk;
      EXPECT_FALSE(json::parse(s.out, nullptr, false).is_discarded()) << s.out;
      if (c.note.empty())
        EXPECT_TRUE(s.result.repair.empty()) << s.result.repair;
      else
        EXPECT_NE(s.result.repair.find(c.note), std::string::npos) << c.in << ": " << s.result.repair;
    }
  }
}

TEST(SpliceTrace, NotJsonIsAnErrorNamingTheByte) {
  try {
    splice("  hello", kTwo);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("in.json: not a JSON trace: byte 2 is 'h'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(splice("", kTwo), InputError);
  EXPECT_THROW(splice(" \n", kTwo), InputError);
}

// Random documents, whole and cut anywhere, in chunks of every size: the output always parses, and
// its events are the original's complete events followed by the added ones.
TEST(SpliceTrace, RandomDocumentsCutAnywhereStayValidJson) {
  std::mt19937_64 rng(7);
  auto random_string = [&] {
    static const std::string alphabet = "ab,:[]{}\" \\";
    std::string s;
    for (std::size_t k = 0, n = rng() % 6; k < n; ++k) {
      const char c = alphabet[rng() % alphabet.size()];
      if (c == '"' || c == '\\') s += '\\';
      s += c;
    }
    return s;
  };
  for (int round = 0; round < 200; ++round) {
    const bool bare = rng() % 4 == 0;
    std::vector<std::string> events;
    for (std::size_t k = 0, n = rng() % 6; k < n; ++k)
      events.push_back(R"({"ph":"X","name":")" + random_string() + R"(","args":{"v":[1,{"w":")" + random_string() +
                       R"("}]}})");
    std::string doc = bare ? "[" : R"({"schemaVersion":1,"deviceProperties":[{"id":0}],"traceEvents":[)";
    for (std::size_t k = 0; k < events.size(); ++k) doc += (k ? ",\n" : "\n") + events[k];
    doc += bare ? "]" : R"(],"traceName":")" + random_string() + R"("})";
    const std::size_t cut = round % 2 == 0 ? doc.size() : rng() % (doc.size() + 1);
    const std::string input = doc.substr(0, cut);
    const std::size_t chunk = 1 + rng() % 17;
    if (input.find_first_not_of(" \n") == std::string::npos) continue;
    const Spliced s = splice(input, kTwo, chunk);
    json parsed;
    ASSERT_NO_THROW(parsed = json::parse(s.out)) << "round " << round << " cut " << cut << "\n" << s.out;
    const json& list = bare ? parsed : parsed.at("traceEvents");
    ASSERT_TRUE(list.is_array());
    ASSERT_GE(list.size(), 2u);
    EXPECT_EQ(list[list.size() - 2], json::parse(kTwo[0]));
    EXPECT_EQ(list[list.size() - 1], json::parse(kTwo[1]));
    const std::size_t kept = list.size() - 2;
    ASSERT_LE(kept, events.size());
    for (std::size_t k = 0; k < kept; ++k) EXPECT_EQ(list[k], json::parse(events[k])) << "round " << round;
    if (cut == doc.size()) {
      EXPECT_EQ(kept, events.size());
      EXPECT_TRUE(s.result.repair.empty());
      // The same splice in one chunk gives the same bytes.
      EXPECT_EQ(splice(input, kTwo).out, s.out);
    }
  }
}

// --- the events, on a generated trace whose causes are known ----------------------------------

struct Annotated {
  std::string original_path, annotated_path;
  json original, annotated;
};

Annotated annotate_scenario(const std::string& scenario) {
  Annotated r;
  r.original_path = test::temp_path("annotate-" + scenario + ".json");
  r.annotated_path = test::temp_path("annotate-" + scenario + ".out.json");
  ScenarioOptions gen;
  gen.name = scenario;
  gen.output = r.original_path;
  gen.steps = 6;
  write_scenario(gen);
  AnalysisOptions options;
  options.series_buckets = kAnnotationSeriesBuckets;
  options.queue_series = true;
  AnnotationEvents added;
  {
    const TraceModel model = load_trace(r.original_path);
    const TraceAnalysis a = analyze_trace(model, options);
    added = annotation_events(model, a, diagnose(a));
  }
  OpenedSource in = open_byte_source(r.original_path);
  OutputFile out(r.annotated_path, OutputCompression::kNone);
  splice_trace(*in.source, r.original_path, added.events, out);
  out.close();
  r.original = json::parse(test::read_file(r.original_path));
  r.annotated = json::parse(test::read_file(r.annotated_path));
  return r;
}

std::vector<json> ferret_events(const json& doc, bool ours) {
  std::vector<json> out;
  for (const json& e : doc.at("traceEvents"))
    if ((e.value("cat", "") == kAnnotationCategory) == ours) out.push_back(e);
  return out;
}

double us(const json& v) { return v.is_string() ? std::stod(v.get<std::string>()) : v.get<double>(); }

TEST(AnnotationEvents, OriginalEventsStayAndFerretReadsTheTraceAsBefore) {
  const Annotated r = annotate_scenario("input-bound");
  EXPECT_EQ(ferret_events(r.annotated, false),
            std::vector<json>(r.original.at("traceEvents").begin(), r.original.at("traceEvents").end()));
  EXPECT_GT(ferret_events(r.annotated, true).size(), 10u);
  // Read back by ferret: the same model, and the annotations counted as left out.
  const TraceModel before = load_trace(r.original_path);
  const TraceModel after = load_trace(r.annotated_path);
  EXPECT_EQ(after.size(), before.size());
  const auto skipped = after.report.skips.find(kAnnotationReason);
  ASSERT_NE(skipped, after.report.skips.end());
  EXPECT_EQ(skipped->second.count, ferret_events(r.annotated, true).size());
  const Diagnosis d0 = diagnose(analyze_trace(before, {}));
  const Diagnosis d1 = diagnose(analyze_trace(after, {}));
  EXPECT_EQ(d1.verdict.headline, d0.verdict.headline);
  ASSERT_EQ(d1.findings.size(), d0.findings.size());
  for (std::size_t i = 0; i < d0.findings.size(); ++i) EXPECT_EQ(d1.findings[i].title, d0.findings[i].title);
}

// The busy counter against the kernels themselves: its time integral is the union of GPU activity
// computed here from the trace's own events.
TEST(AnnotationEvents, BusyCounterIntegratesToTheGpuBusyTimeAndStepsMatchTheTrace) {
  const Annotated r = annotate_scenario("launch-bound");
  std::vector<std::pair<double, double>> busy;  // GPU 0 kernels, memcpys, memsets (us)
  std::vector<std::pair<double, double>> steps;
  for (const json& e : ferret_events(r.annotated, false)) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    if ((cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") && e.value("pid", -1) == 0)
      busy.push_back({us(e.at("ts")), us(e.at("ts")) + us(e.at("dur"))});
    if (e.value("name", "").rfind("ProfilerStep#", 0) == 0) steps.push_back({us(e.at("ts")), us(e.at("dur"))});
  }
  ASSERT_FALSE(busy.empty());
  std::sort(busy.begin(), busy.end());
  double union_us = 0, start = busy[0].first, end = busy[0].second;
  for (const auto& [s, e] : busy) {
    if (s > end) {
      union_us += end - start;
      start = s;
    }
    end = std::max(end, e);
  }
  union_us += end - start;

  std::vector<std::pair<double, double>> samples;  // (ts, %)
  std::vector<json> step_spans;
  for (const json& e : ferret_events(r.annotated, true)) {
    if (e.value("ph", "") == "C" && e.value("name", "") == "GPU 0 busy")
      samples.push_back({us(e.at("ts")), e.at("args").at("%").get<double>()});
    if (e.value("ph", "") == "X" && e.value("tid", -1) == 1) step_spans.push_back(e);
  }
  ASSERT_GE(samples.size(), 2u);
  EXPECT_EQ(samples.back().second, 0.0);  // the track ends
  double integral = 0;
  for (std::size_t k = 0; k + 1 < samples.size(); ++k)
    integral += samples[k].second / 100.0 * (samples[k + 1].first - samples[k].first);
  // Each bucket's share is rounded to 0.001%, and each sample time to the nanosecond.
  EXPECT_NEAR(integral, union_us, union_us * 1e-4 + 1.0);

  // One span per ProfilerStep of the trace, at its time, named with its breakdown.
  ASSERT_EQ(step_spans.size(), steps.size());
  std::sort(steps.begin(), steps.end());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    EXPECT_DOUBLE_EQ(us(step_spans[k].at("ts")), steps[k].first);
    EXPECT_DOUBLE_EQ(us(step_spans[k].at("dur")), steps[k].second);
    EXPECT_NE(step_spans[k].at("name").get<std::string>().find("Kernel"), std::string::npos);
    EXPECT_NEAR(step_spans[k].at("args").at("step ms").get<double>(), steps[k].second / 1000.0, 1e-3);
  }
}

// input-bound is marked on the DataLoader calls themselves, found here by name in the trace.
TEST(AnnotationEvents, FindingsAreMarkedWhereTheirCauseHappens) {
  const Annotated r = annotate_scenario("input-bound");
  std::vector<std::pair<double, double>> calls;
  for (const json& e : ferret_events(r.annotated, false))
    if (e.value("ph", "") == "X" && e.value("name", "").rfind("enumerate(DataLoader)", 0) == 0)
      calls.push_back({us(e.at("ts")), us(e.at("dur"))});
  ASSERT_FALSE(calls.empty());
  std::sort(calls.begin(), calls.end());
  std::vector<std::pair<double, double>> marks;
  std::string thread;
  for (const json& e : ferret_events(r.annotated, true)) {
    const std::string name = e.value("name", "");
    if (e.value("ph", "") == "X" && name.rfind("input-bound: Input-bound", 0) == 0) {
      marks.push_back({us(e.at("ts")), us(e.at("dur"))});
      EXPECT_EQ(e.at("args").at("id"), "input-bound");
      EXPECT_FALSE(e.at("args").at("fix").get<std::string>().empty());
    }
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name" &&
        e.at("args").at("name").get<std::string>().find("input-bound") != std::string::npos)
      thread = e.at("args").at("name");
  }
  EXPECT_EQ(thread.rfind("#1 input-bound", 0), 0u) << thread;
  ASSERT_EQ(marks.size(), std::min<std::size_t>(calls.size(), kOccurrencesKept));
  std::sort(marks.begin(), marks.end());
  if (calls.size() <= kOccurrencesKept) {
    EXPECT_EQ(marks, calls);
  }
}

}  // namespace trace_annotation_test
}  // namespace
}  // namespace ferret
