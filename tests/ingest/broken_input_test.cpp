// Broken input: every case must load without crashing, keep what can be kept, and count what was
// repaired or skipped with the byte offset / event index where it first happened.
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ingest/byte_source.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace broken_input_test {

// A trace assembled from event texts, remembering where each event starts ('{') and ends (one past
// '}') in the document: the independent reference for truncation tests.
struct BuiltTrace {
  std::string text;
  std::vector<std::size_t> begin, end;
};

BuiltTrace build(const std::vector<std::string>& events,
                 const std::string& head = R"({"schemaVersion": 1, "traceEvents": [)"
                                           "\n",
                 const std::string& tail =
                     "\n"
                     R"(], "traceName": "x.pt.trace.json"})") {
  BuiltTrace t;
  t.text = head;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i) t.text += ",\n  ";
    t.begin.push_back(t.text.size());
    t.text += events[i];
    t.end.push_back(t.text.size());
  }
  t.text += tail;
  return t;
}

std::string op(int i, const std::string& extra = "") {
  return fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "op{}", "pid": 1, "tid": 1, "ts": {}.5, "dur": 2{}}})", i,
                     100 + 10 * i, extra);
}

const Issue* find_issue(const std::map<std::string, Issue>& issues, const std::string& part) {
  for (const auto& [reason, issue] : issues)
    if (reason.find(part) != std::string::npos) return &issue;
  return nullptr;
}

std::string where(const BuiltTrace& t, std::size_t k) { return fmt::format("byte {} (event #{})", t.begin[k], k); }

// Events with awkward bytes for a boundary scanner: braces, brackets and quotes inside strings,
// escapes, nested args, unicode escapes.
std::vector<std::string> tricky_events() {
  return {
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 100, "dur": 500})",
      R"({"ph": "X", "cat": "cpu_op", "name": "a{b}[c]", "pid": 1, "tid": 1, "ts": 110, "dur": 20, "args": {"Input Dims": [[1, 2], []], "External id": 1}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "quote\"}{\"inside", "pid": 1, "tid": 1, "ts": 140, "dur": 5})",
      R"({"ph": "X", "cat": "cpu_op", "name": "back\\slash\\", "pid": 1, "tid": 1, "ts": 150, "dur": 5})",
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 160, "dur": 5, "args": {"correlation": 9}})",
      R"({"ph": "X", "cat": "kernel", "name": "k\u00e9rnel", "pid": 0, "tid": 7, "ts": 170, "dur": 50, "args": {"correlation": 9, "grid": [1, 1, 1]}})",
      R"({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 171, "args": {"Bytes": 64, "Addr": 1}})",
      R"({"ph": "s", "id": 9, "pid": 1, "tid": 1, "ts": 160, "cat": "ac2g", "name": "ac2g"})",
      R"({"ph": "f", "id": 9, "pid": 0, "tid": 7, "ts": 170, "cat": "ac2g", "name": "ac2g", "bp": "e"})",
      R"J({"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "thread 1 (python)"}})J",
      R"({"ph": "X", "cat": "cpu_op", "name": "last", "pid": 1, "tid": 1, "ts": 700.25, "dur": 1.125})",
  };
}

// --- Unusable input ---------------------------------------------------------------------------

TEST(BrokenInput, EmptyFileIsAnInputErrorNamingTheFile) {
  const std::string path = test::temp_path("empty.json");
  test::write_file(path, "");
  try {
    load_trace(path);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  EXPECT_THROW(load_trace_text(""), InputError);
  EXPECT_THROW(load_trace_text(" \n\t "), InputError);
}

TEST(BrokenInput, NotJsonNamesByteZero) {
  try {
    load_trace_text("hello");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("byte 0"), std::string::npos) << e.what();
  }
  // After leading whitespace the offending byte is at 3.
  try {
    load_trace_text("   x");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("byte 3"), std::string::npos) << e.what();
  }
}

TEST(BrokenInput, DirectoryIsAnInputError) {
  const std::string dir = test::temp_path("a-directory");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  try {
    load_trace(dir);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(dir), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("directory"), std::string::npos) << e.what();
  }
  ::rmdir(dir.c_str());
}

TEST(BrokenInput, MissingFileIsAnInputError) {
  const std::string path = test::temp_path("does-not-exist.json");
  try {
    load_trace(path);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// --- Truncation -------------------------------------------------------------------------------

// Cuts a valid trace at every `step`-th byte. For each cut: every event whose closing brace lies
// before the cut is kept, in order; the trace is reported truncated; when the cut falls inside an
// event, truncated_at_byte is that event's '{' and the cut event is counted as skipped.
void sweep_truncations(const BuiltTrace& t, std::size_t step, const LoadOptions& options) {
  const TraceModel full = load_trace_text(t.text, options);
  ASSERT_EQ(full.size(), t.begin.size());
  ASSERT_FALSE(full.report.truncated);
  for (std::size_t cut = 0; cut < t.text.size(); cut += step) {
    SCOPED_TRACE(fmt::format("cut at byte {} of {}", cut, t.text.size()));
    if (cut == 0) {
      EXPECT_THROW(load_trace_text("", options), InputError);
      continue;
    }
    TraceModel m;
    ASSERT_NO_THROW(m = load_trace_text(t.text.substr(0, cut), options));
    std::size_t complete = 0;
    while (complete < t.end.size() && t.end[complete] <= cut) ++complete;
    ASSERT_EQ(m.size(), complete);
    for (std::size_t i = 0; i < complete; ++i) {
      ASSERT_EQ(m.name_of(static_cast<EventIndex>(i)), full.name_of(static_cast<EventIndex>(i)));
      ASSERT_EQ(m.ts_ns[i], full.ts_ns[i]);
    }
    EXPECT_TRUE(m.report.truncated);
    const bool inside_event = complete < t.begin.size() && t.begin[complete] <= cut;
    const std::size_t expected_at = inside_event ? t.begin[complete] : cut;
    EXPECT_EQ(m.report.truncated_at_byte, expected_at);
    bool note_names_offset = false;
    for (const auto& n : m.report.notes)
      note_names_offset |= n.find(fmt::format("byte {}", expected_at)) != std::string::npos;
    EXPECT_TRUE(note_names_offset);
    const Issue* cut_event = find_issue(m.report.skips, "truncation");
    if (inside_event && t.begin[complete] < cut) {
      ASSERT_NE(cut_event, nullptr);
      EXPECT_EQ(cut_event->count, 1u);
      EXPECT_EQ(cut_event->first_location, fmt::format("byte {}", t.begin[complete]));
    } else {
      EXPECT_EQ(cut_event, nullptr);
    }
  }
}

TEST(BrokenInputTruncation, EveryCutKeepsEveryCompleteEvent) {
  const BuiltTrace t = build(tricky_events());
  sweep_truncations(t, 7, LoadOptions{});
}

TEST(BrokenInputTruncation, EveryByteSingleThreaded) {
  const BuiltTrace t = build(tricky_events());
  LoadOptions one;
  one.threads = 1;
  sweep_truncations(t, 1, one);
}

TEST(BrokenInputTruncation, ManySmallBatches) {
  // Small batches put batch boundaries between (and around) the cut points.
  std::vector<std::string> events;
  for (int i = 0; i < 60; ++i) events.push_back(op(i, R"(, "args": {"External id": 5, "note": "}}]]"})"));
  const BuiltTrace t = build(events);
  LoadOptions small;
  small.threads = 2;
  small.limits.batch_bytes = 256;
  sweep_truncations(t, 13, small);
}

TEST(BrokenInputTruncation, BareArrayCut) {
  std::vector<std::string> events;
  for (int i = 0; i < 5; ++i)
    events.push_back(fmt::format(
        R"({{"name": "f{}", "ph": "X", "ts": {}, "dur": 3, "tid": 1, "pid": "CPU functions", "args": {{}}}})", i,
        10 * i));
  const BuiltTrace t = build(events, "[", "]");
  sweep_truncations(t, 3, LoadOptions{});
}

// --- Bytes that are not valid JSON text inside an event ------------------------------------------

TEST(BrokenInputBytes, InvalidUtf8InANameIsRepaired) {
  std::vector<std::string> events = {op(0), op(1),
                                     R"({"ph": "X", "cat": "cpu_op", "name": "bad)"
                                     "\xff\xfe"
                                     R"(name", "pid": 1, "tid": 1, "ts": 50, "dur": 1})",
                                     op(3)};
  const BuiltTrace t = build(events);
  const TraceModel m = load_trace_text(t.text);
  ASSERT_EQ(m.size(), 4u);  // kept
  EXPECT_EQ(m.name_of(2), "bad??name");
  EXPECT_EQ(m.name_of(3), "op3");
  const Issue* issue = find_issue(m.report.repairs, "UTF-8");
  ASSERT_NE(issue, nullptr);
  EXPECT_EQ(issue->count, 1u);
  EXPECT_EQ(issue->first_location, where(t, 2));
  EXPECT_EQ(m.report.skip_count(), 0u);
}

TEST(BrokenInputBytes, TruncatedUtf8SequenceIsRepaired) {
  // \xe2\x82 starts a 3-byte sequence that the closing quote cuts short.
  const BuiltTrace t = build({op(0), R"({"ph": "X", "cat": "cpu_op", "name": "euro)"
                                     "\xe2\x82"
                                     R"(", "pid": 1, "tid": 1, "ts": 50, "dur": 1})"});
  const TraceModel m = load_trace_text(t.text);
  ASSERT_EQ(m.size(), 2u);
  const Issue* issue = find_issue(m.report.repairs, "UTF-8");
  ASSERT_NE(issue, nullptr);
  EXPECT_EQ(issue->first_location, where(t, 1));
}

TEST(BrokenInputBytes, RawControlCharacterInANameIsRepaired) {
  const BuiltTrace t = build({op(0),
                              R"({"ph": "X", "cat": "cpu_op", "name": "ctl)"
                              "\x01"
                              R"(char", "pid": 1, "tid": 1, "ts": 50, "dur": 1})",
                              op(2)});
  const TraceModel m = load_trace_text(t.text);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.name_of(1), "ctl char");
  const Issue* issue = find_issue(m.report.repairs, "control");
  ASSERT_NE(issue, nullptr) << "the raw \\x01 was accepted without a repair being counted";
  EXPECT_EQ(issue->count, 1u);
  EXPECT_EQ(issue->first_location, where(t, 1));
}

TEST(BrokenInputBytes, RawNewlineInANameIsRepaired) {
  const BuiltTrace t = build({op(0),
                              R"({"ph": "X", "cat": "cpu_op", "name": "line one)"
                              "\n"
                              R"(line two", "pid": 1, "tid": 1, "ts": 50, "dur": 1})",
                              op(2)});
  const TraceModel m = load_trace_text(t.text);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.name_of(1), "line one line two");
  const Issue* issue = find_issue(m.report.repairs, "control");
  ASSERT_NE(issue, nullptr) << "the raw newline was accepted without a repair being counted";
  EXPECT_EQ(issue->count, 1u);
  EXPECT_EQ(issue->first_location, where(t, 1));
}

TEST(BrokenInputBytes, MalformedEventIsSkippedAndTheRestKept) {
  // An unquoted word where a value belongs cannot be repaired: that event is skipped, others kept.
  const BuiltTrace t =
      build({op(0), R"({"ph": "X", "cat": "cpu_op", "name": oops, "pid": 1, "tid": 1, "ts": 50, "dur": 1})", op(2)});
  const TraceModel m = load_trace_text(t.text);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.name_of(0), "op0");
  EXPECT_EQ(m.name_of(1), "op2");
  const Issue* issue = find_issue(m.report.skips, "malformed");
  ASSERT_NE(issue, nullptr);
  EXPECT_EQ(issue->count, 1u);
  EXPECT_EQ(issue->first_location, where(t, 1));
}

// --- Missing and mistyped fields -------------------------------------------------------------

TEST(BrokenInputFields, MissingTsSkipsTheEventWithItsLocation) {
  const BuiltTrace t =
      build({op(0), op(1), R"({"ph": "X", "cat": "cpu_op", "name": "no_ts", "pid": 1, "tid": 1, "dur": 1})", op(3)});
  const TraceModel m = load_trace_text(t.text);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.name_of(2), "op3");
  const Issue* issue = find_issue(m.report.skips, "without \"ts\"");
  ASSERT_NE(issue, nullptr);
  EXPECT_EQ(issue->count, 1u);
  EXPECT_EQ(issue->first_location, where(t, 2));
}

TEST(BrokenInputFields, NonNumericTsSkipsTheEvent) {
  const BuiltTrace t =
      build({op(0), R"({"ph": "X", "cat": "cpu_op", "name": "bad_ts", "pid": 1, "tid": 1, "ts": "abc", "dur": 1})"});
  const TraceModel m = load_trace_text(t.text);
  ASSERT_EQ(m.size(), 1u);
  const Issue* issue = find_issue(m.report.skips, "\"ts\"");
  ASSERT_NE(issue, nullptr);
  EXPECT_EQ(issue->first_location, where(t, 1));
}

TEST(BrokenInputFields, NonNumericDurIsRepairedToZero) {
  const BuiltTrace t =
      build({op(0), R"({"ph": "X", "cat": "cpu_op", "name": "bad_dur", "pid": 1, "tid": 1, "ts": 50, "dur": "abc"})"});
  const TraceModel m = load_trace_text(t.text);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.dur_ns[1], 0);
  const Issue* issue = find_issue(m.report.repairs, "\"dur\"");
  ASSERT_NE(issue, nullptr);
  EXPECT_EQ(issue->count, 1u);
  EXPECT_EQ(issue->first_location, where(t, 1));
}

TEST(BrokenInputFields, NegativeDurIsRepairedToZero) {
  const BuiltTrace t =
      build({op(0), R"({"ph": "X", "cat": "cpu_op", "name": "neg", "pid": 1, "tid": 1, "ts": 50, "dur": -0.001})"});
  const TraceModel m = load_trace_text(t.text);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.dur_ns[1], 0);
  const Issue* issue = find_issue(m.report.repairs, "negative");
  ASSERT_NE(issue, nullptr);
  EXPECT_EQ(issue->count, 1u);
  EXPECT_EQ(issue->first_location, where(t, 1));
}

TEST(BrokenInputFields, AbsurdDurationIsRepairedToZero) {
  // 7.45e15 us = 236 years: a broken clock.
  const BuiltTrace t = build(
      {op(0),
       R"({"ph": "X", "cat": "cpu_op", "name": "forever", "pid": 1, "tid": 1, "ts": 50, "dur": 7450000000000000})"});
  const TraceModel m = load_trace_text(t.text);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.dur_ns[1], 0);
  EXPECT_NE(find_issue(m.report.repairs, "absurd"), nullptr);
}

TEST(BrokenInputFields, MissingDurIsRepairedToZero) {
  const BuiltTrace t = build({R"({"ph": "X", "cat": "cpu_op", "name": "nodur", "pid": 1, "tid": 1, "ts": 50})"});
  const TraceModel m = load_trace_text(t.text);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.dur_ns[0], 0);
  const Issue* issue = find_issue(m.report.repairs, "without \"dur\"");
  ASSERT_NE(issue, nullptr);
  EXPECT_EQ(issue->first_location, where(t, 0));
}

// A field of the wrong JSON type must neither crash nor pass silently: the event is kept (or
// skipped) and the repair (or skip) is counted.
void expect_kept_and_counted(const std::string& event, const std::string& what) {
  const BuiltTrace t = build({op(0), event, op(2)});
  TraceModel m;
  ASSERT_NO_THROW(m = load_trace_text(t.text)) << what;
  EXPECT_EQ(m.size() + m.report.skip_count(), 3u) << what;
  EXPECT_EQ(m.name_of(0), "op0") << what;
  EXPECT_EQ(m.name_of(static_cast<EventIndex>(m.size() - 1)), "op2") << what;
  EXPECT_EQ(m.report.repair_count() + m.report.skip_count(), 1u)
      << what << ": a mistyped field must be counted as a repair or a skip";
  std::string first;
  for (const auto& [r, i] : m.report.repairs) first = i.first_location;
  for (const auto& [r, i] : m.report.skips) first = i.first_location;
  EXPECT_EQ(first, where(t, 1)) << what;
}

TEST(BrokenInputFields, PidAsObject) {
  expect_kept_and_counted(R"({"ph": "X", "cat": "cpu_op", "name": "x", "pid": {}, "tid": 1, "ts": 50, "dur": 1})",
                          "\"pid\": {}");
}

TEST(BrokenInputFields, ArgsAsArray) {
  expect_kept_and_counted(
      R"({"ph": "X", "cat": "cpu_op", "name": "x", "pid": 1, "tid": 1, "ts": 50, "dur": 1, "args": [1, 2]})",
      "\"args\": [1,2]");
}

TEST(BrokenInputFields, GridAsString) {
  expect_kept_and_counted(
      R"({"ph": "X", "cat": "kernel", "name": "x", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"grid": "x"}})",
      "\"grid\": \"x\"");
}

TEST(BrokenInputFields, DurAsString) {
  expect_kept_and_counted(R"({"ph": "X", "cat": "cpu_op", "name": "x", "pid": 1, "tid": 1, "ts": 50, "dur": "abc"})",
                          "\"dur\": \"abc\"");
}

TEST(BrokenInputFields, PhAsNumber) {
  expect_kept_and_counted(R"({"ph": 5, "cat": "cpu_op", "name": "x", "pid": 1, "tid": 1, "ts": 50, "dur": 1})",
                          "\"ph\": 5");
}

TEST(BrokenInputFields, MistypedFieldsTogetherDoNotCrash) {
  const BuiltTrace t =
      build({op(0),
             R"({"ph": "X", "cat": 3, "name": ["n"], "pid": {"a": [1, {"b": 2}]}, "tid": null, "ts": 60, "dur": true,
                                  "args": {"correlation": {}, "External id": [1], "grid": {"x": 1}, "block": [1, "a", null, 4],
                                           "bytes": "many", "Bytes": {}, "Collective name": 5}})",
             op(2)});
  TraceModel m;
  ASSERT_NO_THROW(m = load_trace_text(t.text));
  EXPECT_EQ(m.size() + m.report.skip_count(), 3u);
  EXPECT_GE(m.report.repair_count() + m.report.skip_count(), 1u);
}

// --- Structure outside the events ----------------------------------------------------------------

TEST(BrokenInputStructure, BeginEndEventsAreSkippedAndCounted) {
  const BuiltTrace t = build({op(0), R"({"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": 1})",
                              R"({"ph": "E", "pid": 1, "tid": 1, "ts": 2})"});
  const TraceModel m = load_trace_text(t.text);
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.report.skip_count(), 2u);
}

TEST(BrokenInputStructure, NonObjectArrayElementsAreSkippedAndCounted) {
  const TraceModel m = load_trace_text(R"({"traceEvents": [[1, 2], )" + op(0) + R"(, [3]]})");
  EXPECT_EQ(m.size(), 1u);
  const Issue* issue = find_issue(m.report.skips, "not objects");
  ASSERT_NE(issue, nullptr);
  EXPECT_EQ(issue->count, 2u);
}

TEST(BrokenInputStructure, ScalarArrayElementsAreSkippedAndCounted) {
  // Numbers, strings, null and true in the event array are not events: 4 elements left out, and
  // leaving them out must be counted like the non-object arrays above.
  const TraceModel m = load_trace_text(R"({"traceEvents": [5, )" + op(0) + R"(, "text", null, true]})");
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.report.skip_count(), 4u);
}

TEST(BrokenInputStructure, AnEventReadsTheSameWhateverElseItsBatchHolds) {
  // Found by ingest_fuzzer (1 vs 2 threads, small vs default batches): a malformed event followed
  // by a stray '}' was read as sound when its batch parsed whole, and skipped when a bad byte
  // elsewhere in the batch made every event be read alone. It is skipped either way.
  const std::string bad = R"({"ph": "X", "name": "bad", "pid": 0, "tid": 7, "ts": 1, "dur": 5, "args{ ":"device": 0})";
  const std::string text = R"({"traceEvents": [)" + bad + "}, " + op(0) + "]}";
  const std::string text_with_bad_byte = R"({"traceEvents": [)" + bad + "}, " + op(0) + ", " +
                                         R"({"ph": "X", "name": "x)" + "\xff" +
                                         R"(", "pid": 1, "tid": 1, "ts": 9, "dur": 1})" + "]}";
  for (const std::string* t : {&text, &text_with_bad_byte})
    for (const std::size_t batch : {std::size_t{64}, ScanLimits{}.batch_bytes}) {
      LoadOptions options;
      options.limits.batch_bytes = batch;
      const TraceModel m = load_trace_text(*t, options);
      ASSERT_GE(m.size(), 1u);
      EXPECT_EQ(m.name_of(0), "op0") << batch;
      const Issue* issue = find_issue(m.report.skips, "malformed");
      ASSERT_NE(issue, nullptr) << batch;
      EXPECT_EQ(issue->count, 1u);
      EXPECT_NE(find_issue(m.report.skips, "stray '}'"), nullptr);
    }
}

TEST(BrokenInputStructure, NoTraceEventsIsANote) {
  const TraceModel m = load_trace_text(R"({"schemaVersion": 1})");
  EXPECT_EQ(m.size(), 0u);
  ASSERT_EQ(m.report.notes.size(), 1u);
  EXPECT_NE(m.report.notes[0].find("traceEvents"), std::string::npos);
}

TEST(BrokenInputStructure, DataAfterTheDocumentIsANote) {
  const BuiltTrace t = build({op(0)});
  const TraceModel m = load_trace_text(t.text + "\n garbage");
  EXPECT_EQ(m.size(), 1u);
  ASSERT_EQ(m.report.notes.size(), 1u);
  EXPECT_NE(m.report.notes[0].find(fmt::format("byte {}", t.text.size() + 2)), std::string::npos) << m.report.notes[0];
}

TEST(BrokenInputStructure, DuplicateTraceEventsKeysBothLoad) {
  const TraceModel m = load_trace_text(R"({"traceEvents": [)" + op(0) + R"(], "traceEvents": [)" + op(1) + "]}");
  EXPECT_EQ(m.size(), 2u);
}

// --- Damaged compression -----------------------------------------------------------------------

// The independent reference for damaged gzip: zlib's own inflate, stopped at its first error or at
// the end of input. Returns what it produced before that and zlib's message for the error.
struct Inflated {
  std::string out;
  std::string error;  // "" when the stream ended cleanly
};

Inflated zlib_inflate(const std::string& gz) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  Inflated r;
  char buf[4096];
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    const int rc = inflate(&z, Z_NO_FLUSH);
    r.out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_OK) continue;
    if (rc != Z_STREAM_END) r.error = z.msg ? z.msg : "ends early";
    break;
  }
  inflateEnd(&z);
  return r;
}

std::string zlib_inflate_prefix(const std::string& gz) { return zlib_inflate(gz).out; }

// Events with varied text so the deflate stream has many blocks and real Huffman codes.
BuiltTrace varied_trace(int n) {
  std::vector<std::string> events;
  std::uint32_t x = 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    events.push_back(fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "aten::op_{}_{:x}", "pid": 1, "tid": {}, "ts": {}.{:03d}, "dur": {}.{:03d}, "args": {{"External id": {}, "Input Dims": [[{}, {}]]}}}})",
        i, x, 1 + (x >> 28), 1000 + 7 * i, (x >> 8) % 1000, (x >> 12) % 50, (x >> 4) % 1000, i, (x >> 3) % 4096,
        (x >> 13) % 512));
  }
  return build(events);
}

std::size_t common_prefix(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// Loads a damaged gzip and checks: no crash; every event that ends before the first byte where the
// decompressed text differs from the original (found with zlib) is kept, unchanged; the damage
// is reported as a repair naming the file, and in a note.
void expect_damage_reported(const BuiltTrace& t, const std::string& gz, const std::string& name) {
  const std::size_t intact = common_prefix(zlib_inflate_prefix(gz), t.text);
  ASSERT_LT(intact, t.text.size());
  std::size_t complete = 0;
  while (complete < t.end.size() && t.end[complete] <= intact) ++complete;
  ASSERT_GT(complete, 100u);

  const std::string path = test::temp_path(name);
  test::write_file(path, gz);
  TraceModel m;
  ASSERT_NO_THROW(m = load_trace(path));
  std::remove(path.c_str());
  ASSERT_GE(m.size(), complete);
  const TraceModel reference = load_trace_text(t.text);
  for (std::size_t i = 0; i < complete; ++i) {
    ASSERT_EQ(m.name_of(static_cast<EventIndex>(i)), reference.name_of(static_cast<EventIndex>(i))) << i;
    ASSERT_EQ(m.ts_ns[i], reference.ts_ns[i]) << i;
  }
  const Issue* issue = find_issue(m.report.repairs, "damaged compressed stream");
  ASSERT_NE(issue, nullptr) << "the damage went unreported";
  EXPECT_NE(issue->first_location.find(path), std::string::npos) << issue->first_location;
  bool noted = false;
  for (const auto& n : m.report.notes) noted |= n.find("gzip") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(BrokenInputCompression, CorruptGzipFoundByTheDecoderMidStream) {
  // Flip one byte at a time from the middle on until zlib stops with a decoding error (not just
  // a bad checksum at the end): the stream is unreadable from there.
  const BuiltTrace t = varied_trace(3000);
  const std::string gz = test::gzip_bytes(t.text);
  ASSERT_GT(gz.size(), 20000u);
  std::string damaged;
  for (std::size_t at = gz.size() / 2; at < gz.size() / 2 + 2000 && damaged.empty(); ++at) {
    std::string candidate = gz;
    candidate[at] = static_cast<char>(candidate[at] ^ 0xFF);
    const Inflated z = zlib_inflate(candidate);
    if (!z.error.empty() && z.error != "incorrect data check" && z.out.size() < t.text.size() * 3 / 4)
      damaged = candidate;
  }
  ASSERT_FALSE(damaged.empty()) << "no flip position gave a decoding error";
  expect_damage_reported(t, damaged, "corrupt-mid.json.gz");
}

TEST(BrokenInputCompression, CorruptGzipFoundOnlyByTheChecksum) {
  // 16 bytes flipped in the middle still decode (to garbage); only the CRC-32 at the end of the
  // member tells (zlib: "incorrect data check"). The garbage happens to close the JSON document
  // early, so the checksum is only seen if the loader reads the stream to its end.
  const BuiltTrace t = varied_trace(3000);
  std::string gz = test::gzip_bytes(t.text);
  for (std::size_t i = gz.size() / 2; i < gz.size() / 2 + 16; ++i) gz[i] = static_cast<char>(gz[i] ^ 0xA5);
  ASSERT_EQ(zlib_inflate(gz).error, "incorrect data check");
  expect_damage_reported(t, gz, "corrupt-crc.json.gz");
}

TEST(BrokenInputCompression, ChecksumErrorInAWellFormedDocumentIsReported) {
  // The last 8 bytes of a gzip member are CRC-32 and size. A wrong CRC on an intact document is
  // still damage worth telling (the bytes cannot be trusted).
  const BuiltTrace t = varied_trace(200);
  std::string gz = test::gzip_bytes(t.text);
  gz[gz.size() - 8] = static_cast<char>(gz[gz.size() - 8] ^ 0x01);
  ASSERT_EQ(zlib_inflate(gz).error, "incorrect data check");
  const std::string path = test::temp_path("bad-crc.json.gz");
  test::write_file(path, gz);
  const TraceModel m = load_trace(path);
  std::remove(path.c_str());
  EXPECT_EQ(m.size(), 200u);
  EXPECT_NE(find_issue(m.report.repairs, "damaged compressed stream"), nullptr);
}

TEST(BrokenInputCompression, GzipCutInHalfKeepsTheEventsBeforeTheCut) {
  const BuiltTrace t = varied_trace(3000);
  const std::string gz = test::gzip_bytes(t.text);
  const std::string half = gz.substr(0, gz.size() / 2);
  const std::string prefix = zlib_inflate_prefix(half);
  ASSERT_EQ(common_prefix(prefix, t.text), prefix.size());
  std::size_t complete = 0;
  while (complete < t.end.size() && t.end[complete] <= prefix.size()) ++complete;
  ASSERT_GT(complete, 100u);

  const std::string path = test::temp_path("half.json.gz");
  test::write_file(path, half);
  TraceModel m;
  ASSERT_NO_THROW(m = load_trace(path));
  std::remove(path.c_str());
  EXPECT_EQ(m.size(), complete);
  EXPECT_TRUE(m.report.truncated);
  EXPECT_EQ(m.report.truncated_at_byte, t.begin[complete]);
  const Issue* issue = find_issue(m.report.repairs, "damaged compressed stream");
  ASSERT_NE(issue, nullptr);
  EXPECT_NE(issue->first_location.find("ends early"), std::string::npos) << issue->first_location;
}

TEST(BrokenInputCompression, ZstdCutInHalfKeepsTheEventsBeforeTheCut) {
  const BuiltTrace t = varied_trace(2000);
  const std::string path = test::temp_path("half.json");
  const std::string zpath = path + ".zst";
  test::write_file(path, t.text);
  ASSERT_EQ(std::system(("zstd -q -f " + path + " -o " + zpath).c_str()), 0);
  std::string z = test::read_file(zpath);
  test::write_file(zpath, z.substr(0, z.size() / 2));
  TraceModel m;
  ASSERT_NO_THROW(m = load_trace(zpath));
  std::remove(path.c_str());
  std::remove(zpath.c_str());
  EXPECT_GT(m.size(), 100u);
  EXPECT_LT(m.size(), 2000u);
  EXPECT_TRUE(m.report.truncated);
  const Issue* issue = find_issue(m.report.repairs, "damaged compressed stream");
  ASSERT_NE(issue, nullptr);
  EXPECT_NE(issue->first_location.find("zstd"), std::string::npos) << issue->first_location;
}

TEST(BrokenInputCompression, GzipHeaderOnly) {
  // Ten bytes of gzip header and nothing else: nothing to read, said as an input error or an empty
  // damaged trace, never a crash.
  const std::string gz = test::gzip_bytes("{}").substr(0, 10);
  const std::string path = test::temp_path("header-only.json.gz");
  test::write_file(path, gz);
  try {
    const TraceModel m = load_trace(path);
    EXPECT_EQ(m.size(), 0u);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

}  // namespace broken_input_test
}  // namespace
}  // namespace ferret
