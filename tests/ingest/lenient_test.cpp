// Input beyond strict JSON that the reader accepts (or drops), each case counted under its own
// reason with where it first happened (docs/JSON.md, "What the reader accepts beyond strict JSON").
// Expected counts and byte offsets are worked out from the test's own text (find() on the
// document), never taken from ferret's output. Every case is loaded four ways, as the ingest
// fuzzer's differential oracle does (1 and 2 threads, default and 4 KB batches): the events and
// the tally must not depend on where batches are cut.
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ingest/kineto/event_parser.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace lenient_test {

std::string op(int i, const std::string& extra = "") {
  return fmt::format(R"({{"ph":"X","cat":"cpu_op","name":"op{}","pid":1,"tid":1,"ts":{},"dur":2{}}})", i, 100 + 10 * i,
                     extra);
}

std::string tally(const TraceModel& m) {
  std::string out;
  for (const auto& [reason, issue] : m.report.repairs)
    out += fmt::format("repair {} x{} at {}\n", reason, issue.count, issue.first_location);
  for (const auto& [reason, issue] : m.report.skips)
    out += fmt::format("skip {} x{} at {}\n", reason, issue.count, issue.first_location);
  for (const auto& note : m.report.notes) out += "note " + note + "\n";
  return out;
}

// Loads `json` with 1 thread and default batches, then checks that 2 threads and 4 KB batches
// give the same events and the same tally.
TraceModel load_every_way(const std::string& json) {
  LoadOptions reference_options;
  reference_options.threads = 1;
  TraceModel reference = load_trace_text(json, reference_options);
  for (unsigned threads : {1u, 2u}) {
    for (std::size_t batch : {std::size_t{4096}, std::size_t{256} << 10}) {
      LoadOptions options;
      options.threads = threads;
      options.limits.batch_bytes = batch;
      const TraceModel other = load_trace_text(json, options);
      EXPECT_EQ(other.size(), reference.size()) << threads << " threads, batch " << batch;
      EXPECT_EQ(tally(other), tally(reference)) << threads << " threads, batch " << batch;
      for (std::size_t e = 0; e < std::min(other.size(), reference.size()); ++e)
        EXPECT_EQ(other.ts_ns[e], reference.ts_ns[e]) << "event " << e;
    }
  }
  return reference;
}

const Issue* repair(const TraceModel& m, const std::string& reason) {
  auto it = m.report.repairs.find(reason);
  return it == m.report.repairs.end() ? nullptr : &it->second;
}

std::string at(std::size_t byte, std::size_t event) { return fmt::format("byte {} (event #{})", byte, event); }

TEST(Lenient, MissingCommaBetweenEventsIsAcceptedAndCounted) {
  // Events 1 and 3 follow their predecessor with no comma; event 2 has one.
  const std::string text = R"({"traceEvents":[)" + op(0) + " " + op(1) + "," + op(2) + "\n" + op(3) + "]}";
  const TraceModel m = load_every_way(text);
  ASSERT_EQ(m.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(m.ts_ns[static_cast<std::size_t>(i)], (100 + 10 * i) * 1000);
  const Issue* issue = repair(m, kMissingCommaReason);
  ASSERT_NE(issue, nullptr) << tally(m);
  EXPECT_EQ(issue->count, 2u);
  EXPECT_EQ(issue->first_location, at(text.find(op(1)), 1));
  EXPECT_EQ(m.report.skip_count(), 0u) << tally(m);
}

TEST(Lenient, MissingCommaBetweenFieldsIsAcceptedAndCounted) {
  std::string broken = op(1);
  broken.replace(broken.find(R"(,"cat")"), 1, " ");  // "ph":"X" "cat":...
  const std::string text = R"({"traceEvents":[)" + op(0) + "," + broken + "," + op(2) + "]}";
  const TraceModel m = load_every_way(text);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.kind[1], EventKind::kCpuOp);  // the category after the missing comma was read
  EXPECT_EQ(m.name_of(1), "op1");
  const Issue* issue = repair(m, kMissingFieldCommaReason);
  ASSERT_NE(issue, nullptr) << tally(m);
  EXPECT_EQ(issue->count, 1u);
  EXPECT_EQ(issue->first_location, at(text.find(broken), 1));
  EXPECT_EQ(m.report.skip_count(), 0u) << tally(m);
}

TEST(Lenient, CommentsBetweenAndInsideEventsAreSkippedAndCounted) {
  // Four comments: a line comment between events holding a quote and a brace (which must not
  // open a string or an element), a block comment inside an event holding "}" and a quote, a
  // line comment inside args, and a 6 KB block comment between events, longer than a 4 KB batch.
  const std::string first = R"(// it's {not an event"
)";
  const std::string inside = R"(/* "}" */)";
  std::string e1 = op(1);
  e1.insert(e1.find(R"("name")"), inside);
  const std::string e2 = op(2, ",\"args\":{// why\n\"External id\":7}");
  const std::string big = "/*" + std::string(6000, '*') + " x */";
  const std::string text = R"({"traceEvents":[)" + op(0) + ",\n" + first + e1 + "," + e2 + "," + big + op(3) + "]}";
  const TraceModel m = load_every_way(text);
  ASSERT_EQ(m.size(), 4u) << tally(m);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(m.name_of(static_cast<EventIndex>(i)), fmt::format("op{}", i));
  EXPECT_EQ(m.external_id[2], 7);
  const Issue* issue = repair(m, kCommentReason);
  ASSERT_NE(issue, nullptr) << tally(m);
  EXPECT_EQ(issue->count, 4u);
  EXPECT_EQ(issue->first_location, fmt::format("byte {}", text.find("// it's")));
  EXPECT_EQ(m.report.skip_count(), 0u) << tally(m);
  EXPECT_EQ(m.report.repair_count(), 4u) << tally(m);
}

TEST(Lenient, CommentsAroundRootKeysAreSkippedAndCounted) {
  const std::string text =
      "// exported by hand\n{\"schemaVersion\": /* v */ 3, // next\n\"traceEvents\":[" + op(0) + "]} /* end */\n";
  const TraceModel m = load_every_way(text);
  ASSERT_EQ(m.size(), 1u) << tally(m);
  EXPECT_EQ(m.info.schema_version, 3);
  const Issue* issue = repair(m, kCommentReason);
  ASSERT_NE(issue, nullptr) << tally(m);
  EXPECT_EQ(issue->count, 4u);
  EXPECT_EQ(issue->first_location, "byte 0");
  EXPECT_TRUE(m.report.notes.empty()) << tally(m);  // the trailing comment is not "data after the end"
}

TEST(Lenient, NonStandardNumbersAreReadByTheirDigitsAndCounted) {
  // ts in microseconds: 01 -> 1 us, 1. -> 1 us, .5 -> 0.5 us, +1 -> 1 us, -01 -> -1 us.
  const std::vector<std::pair<std::string, std::int64_t>> cases = {
      {"01", 1000}, {"1.", 1000}, {".5", 500}, {"+1", 1000}, {"-01", -1000}};
  std::string text = R"({"traceEvents":[)" + op(0);
  for (const auto& [number, ns] : cases)
    text += fmt::format(R"(,{{"ph":"i","name":"n{}","pid":1,"tid":1,"ts":{}}})", number, number);
  text += "]}";
  const TraceModel m = load_every_way(text);
  ASSERT_EQ(m.size(), 1 + cases.size()) << tally(m);
  for (std::size_t k = 0; k < cases.size(); ++k) EXPECT_EQ(m.ts_ns[1 + k], cases[k].second) << cases[k].first;
  const Issue* issue = repair(m, kLenientNumberReason);
  ASSERT_NE(issue, nullptr) << tally(m);
  EXPECT_EQ(issue->count, cases.size());
  EXPECT_EQ(issue->first_location, at(text.find(R"({"ph":"i")"), 1));
  EXPECT_EQ(m.report.skip_count(), 0u) << tally(m);
}

TEST(Lenient, NonStandardNumbersInIdsAndArgsAreCounted) {
  const std::string e1 = R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":07,"ts":10,"dur":1,)"
                         R"("args":{"correlation":012,"External id":+5}})";
  const std::string text = R"({"traceEvents":[)" + op(0) + "," + e1 + "]}";
  const TraceModel m = load_every_way(text);
  ASSERT_EQ(m.size(), 2u) << tally(m);
  EXPECT_EQ(m.tid[1], 7);
  EXPECT_EQ(m.correlation[1], 12);
  EXPECT_EQ(m.external_id[1], 5);
  const Issue* issue = repair(m, kLenientNumberReason);
  ASSERT_NE(issue, nullptr) << tally(m);
  EXPECT_EQ(issue->count, 1u);  // one event repaired
  EXPECT_EQ(issue->first_location, at(text.find(e1), 1));
}

TEST(Lenient, NanCorrelationIdIsDroppedAndTheEventKept) {
  const std::string e1 = R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":1,)"
                         R"("args":{"correlation":-Infinity,"External id":NaN,"grid":[1,1,1]}})";
  const std::string e2 = R"({"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":20,"dur":1,)"
                         R"("args":{"correlation":nan}})";
  const std::string e3 = R"({"ph":"C","name":"c","pid":0,"tid":7,"ts":30,"args":{"value":NaN}})";
  const std::string text = R"({"traceEvents":[)" + op(0) + "," + e1 + "," + e2 + "," + e3 + "]}";
  const TraceModel m = load_every_way(text);
  ASSERT_EQ(m.size(), 4u) << tally(m);
  EXPECT_EQ(m.kind[1], EventKind::kKernel);
  EXPECT_EQ(m.correlation[1], kNoId);
  EXPECT_EQ(m.external_id[1], kNoId);
  EXPECT_EQ(m.correlation[2], kNoId);
  const Issue* ids = repair(m, kNanIdReason);
  ASSERT_NE(ids, nullptr) << tally(m);
  EXPECT_EQ(ids->count, 2u);  // events 1 and 2
  EXPECT_EQ(ids->first_location, at(text.find(e1), 1));
  const Issue* values = repair(m, kNanValueReason);
  ASSERT_NE(values, nullptr) << tally(m);
  EXPECT_EQ(values->count, 1u);
  EXPECT_EQ(values->first_location, at(text.find(e3), 3));
  EXPECT_EQ(m.report.skip_count(), 0u) << tally(m);
}

TEST(Lenient, RepeatedTraceEventsArraysAreMergedAndCounted) {
  const std::string text = R"({"traceEvents":[)" + op(0) + "],\"traceName\":\"t\",\"traceEvents\":[" + op(1) + "," +
                           op(2) + "],\"traceEvents\":[" + op(3) + "]}";
  const TraceModel m = load_every_way(text);
  ASSERT_EQ(m.size(), 4u) << tally(m);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(m.name_of(static_cast<EventIndex>(i)), fmt::format("op{}", i));
  const Issue* issue = repair(m, kMergedArraysReason);
  ASSERT_NE(issue, nullptr) << tally(m);
  EXPECT_EQ(issue->count, 3u);  // events of the second and third arrays
  EXPECT_EQ(issue->first_location, fmt::format("byte {}", text.find("\"traceEvents\"", 2)));
  ASSERT_EQ(m.report.notes.size(), 1u) << tally(m);
  EXPECT_NE(m.report.notes[0].find("3 \"traceEvents\" arrays"), std::string::npos) << m.report.notes[0];
}

TEST(Lenient, UnknownPhasesAreKeptAsOtherAndCounted) {
  const std::string z = R"({"ph":"Z","name":"z","pid":1,"tid":1,"ts":1})";
  const std::string zz = R"({"ph":"zz","name":"zz","pid":1,"tid":1,"ts":2})";
  const std::string empty = R"({"ph":"","name":"e","pid":1,"tid":1,"ts":3})";
  // "Xy" is not 'X': before, only its first character was looked at.
  const std::string xy = R"({"ph":"Xy","cat":"cpu_op","name":"xy","pid":1,"tid":1,"ts":4,"dur":1})";
  const std::string text = R"({"traceEvents":[)" + op(0) + "," + z + "," + zz + "," + empty + "," + xy + "]}";
  const TraceModel m = load_every_way(text);
  ASSERT_EQ(m.size(), 5u) << tally(m);
  EXPECT_EQ(m.kind[0], EventKind::kCpuOp);
  for (EventIndex e = 1; e < 5; ++e) EXPECT_EQ(m.kind[e], EventKind::kOther) << e;
  const Issue* one = repair(m, R"(unknown "ph" 'Z': event kept as kind other (no analysis reads it))");
  ASSERT_NE(one, nullptr) << tally(m);
  EXPECT_EQ(one->count, 1u);
  EXPECT_EQ(one->first_location, at(text.find(z), 1));
  EXPECT_EQ(m.report.repair_count(), 4u) << tally(m);
  const Issue* other = nullptr;
  for (const auto& [reason, issue] : m.report.repairs)
    if (reason.find("several characters") != std::string::npos) other = &issue;
  ASSERT_NE(other, nullptr) << tally(m);
  EXPECT_EQ(other->count, 3u);
  EXPECT_EQ(other->first_location, at(text.find(zz), 2));
}

// Many comments and missing commas at random places, so that some straddle the 4 KB batch
// boundaries: the counts must equal what was inserted, whatever the batch size.
TEST(Lenient, RandomCommentsAndMissingCommasAreAllCounted) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    std::mt19937_64 rng(seed);
    std::string text = R"({"traceEvents":[)";
    std::uint64_t comments = 0, missing = 0;
    const int events = 1500;
    for (int i = 0; i < events; ++i) {
      if (i > 0) {
        const unsigned gap = rng() % 5;
        if (gap == 1) {
          ++missing;
          text += "\n";
        } else {
          text += ",";
        }
        if (gap >= 3) {
          ++comments;
          text += gap == 3 ? "/* a \"quoted\" {brace} " + std::string(rng() % 300, '*') + "*/" : "// x\n";
        }
      }
      std::string event = op(i, fmt::format(R"(,"args":{{"pad":"{}"}})", std::string(rng() % 200, 'p')));
      if (rng() % 7 == 0) {
        ++comments;
        event.insert(1, "/* in */");
      }
      text += event;
    }
    text += "]}";
    const TraceModel m = load_every_way(text);
    ASSERT_EQ(m.size(), static_cast<std::size_t>(events)) << "seed " << seed;
    const Issue* c = repair(m, kCommentReason);
    const Issue* g = repair(m, kMissingCommaReason);
    ASSERT_NE(c, nullptr);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(c->count, comments) << "seed " << seed;
    EXPECT_EQ(g->count, missing) << "seed " << seed;
    EXPECT_EQ(m.report.skip_count(), 0u) << tally(m);
  }
}

TEST(Lenient, CleanTraceHasNoLeniencyCounted) {
  // Slashes inside strings ("a/b", "//", "/*") are text, not comments.
  const std::string e1 = R"({"ph":"X","cat":"cpu_op","name":"a/b // c /* d */","pid":1,"tid":1,"ts":0.5,"dur":0})";
  const TraceModel m = load_every_way(R"({"traceEvents":[)" + op(0) + "," + e1 + "]}");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.name_of(1), "a/b // c /* d */");
  EXPECT_EQ(tally(m), "");
}

}  // namespace lenient_test
}  // namespace
}  // namespace ferret
