// The event-boundary scanner finds events 64 bytes at a time; escapes, quotes and brackets inside
// strings must be handled at every alignment and across every read boundary.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ingest/byte_source.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace scanner_test {

// JSON string bodies (as written in the file) and their text after unescaping, by hand.
struct Body {
  const char* json;
  const char* text;
};
const Body kBodies[] = {
    {R"(a\"b)", "a\"b"},         {R"(\\)", "\\"},
    {R"(x\\\"})", "x\\\"}"},     {R"(\\\\)", "\\\\"},
    {R"({[\"]})", "{[\"]}"},     {R"(\u0041\u00e9)", "A\xc3\xa9"},
    {R"(end\\)", "end\\"},  // an escaped backslash right before the closing quote
    {R"(}}]]{{[[)", "}}]]{{[["}, {R"(\/\b\f\n\r\t)", "/\b\f\n\r\t"},
};

struct Expected {
  std::string text;
  std::vector<std::string> names;
};

// Every body after every padding length 0..130, so each escape lands at every position of a
// 64-byte block (and straddles block ends). The padding also goes into an arg before the name.
Expected alignment_trace() {
  Expected e;
  e.text = R"({"traceEvents": [)";
  int i = 0;
  for (int pad = 0; pad <= 130; ++pad) {
    for (const Body& b : kBodies) {
      if (i) e.text += ",";
      e.text += fmt::format(
          R"({{"ph": "X", "cat": "cpu_op", "args": {{"p": "{}"}}, "name": "{}{}", "pid": 1, "tid": 1, "ts": {}, "dur": 1}})",
          std::string(static_cast<std::size_t>(pad % 7), 'q'), std::string(static_cast<std::size_t>(pad), 'p'), b.json,
          i);
      e.names.push_back(std::string(static_cast<std::size_t>(pad), 'p') + b.text);
      ++i;
    }
  }
  e.text += "]}";
  return e;
}

void expect_names(const TraceModel& m, const Expected& e) {
  ASSERT_EQ(m.size(), e.names.size());
  for (std::size_t i = 0; i < e.names.size(); ++i)
    ASSERT_EQ(m.name_of(static_cast<EventIndex>(i)), e.names[i]) << "event " << i;
  EXPECT_EQ(m.report.repair_count(), 0u);
  EXPECT_EQ(m.report.skip_count(), 0u);
  EXPECT_FALSE(m.report.truncated);
}

TEST(Scanner, EscapesAtEveryBlockAlignment) {
  const Expected e = alignment_trace();
  expect_names(load_trace_text(e.text), e);
}

TEST(Scanner, EscapesAtEveryAlignmentWithTinyBatches) {
  const Expected e = alignment_trace();
  LoadOptions o;
  o.threads = 2;
  o.limits.batch_bytes = 300;
  expect_names(load_trace_text(e.text, o), e);
}

TEST(Scanner, ReadBoundariesAnywhere) {
  const Expected e = alignment_trace();
  for (std::size_t chunk : {1u, 2u, 3u, 7u, 63u, 64u, 65u, 4093u}) {
    SCOPED_TRACE(fmt::format("chunk {}", chunk));
    test::DribbleSource source(e.text, chunk);
    LoadOptions o;
    o.threads = 1;
    const TraceModel m = load_trace_from(source, "dribble", "none", o);
    expect_names(m, e);
    EXPECT_EQ(m.info.json_bytes, e.text.size());
  }
}

TEST(Scanner, HeaderKeysBeforeAndAfterTheEvents) {
  // Header values with braces, brackets and escaped quotes in strings; traceEvents in the middle.
  const TraceModel m = load_trace_text(R"({
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "GPU \"zero\" {x}", "numSms": 80}],
    "weird key \" with [brackets]": {"a": ["]", "}"]},
    "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}],
    "distributedInfo": {"backend": "nccl", "rank": 2, "world_size": 4},
    "traceName": "t]}"
  })");
  EXPECT_EQ(m.size(), 1u);
  ASSERT_EQ(m.info.devices.size(), 1u);
  EXPECT_EQ(m.info.devices[0].name, "GPU \"zero\" {x}");
  EXPECT_EQ(m.info.distributed.rank, 2);
  EXPECT_EQ(m.info.trace_name, "t]}");
  EXPECT_EQ(m.info.other_keys.size(), 1u);
  EXPECT_TRUE(m.report.notes.empty());
}

TEST(Scanner, OversizedHeaderValueIsSkippedAndCounted) {
  LoadOptions o;
  o.limits.max_header_value_bytes = 64;
  const TraceModel m = load_trace_text(
      R"({"deviceProperties": [{"id": 0, "name": ")" + std::string(200, 'n') +
          R"("}], "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})",
      o);
  EXPECT_EQ(m.size(), 1u);
  EXPECT_TRUE(m.info.devices.empty());
  ASSERT_EQ(m.report.skips.size(), 1u);
  EXPECT_NE(m.report.skips.begin()->second.first_location.find("deviceProperties"), std::string::npos);
}

TEST(Scanner, EmptyAndWhitespaceOnlyEventArrays) {
  EXPECT_EQ(load_trace_text(R"({"traceEvents": []})").size(), 0u);
  EXPECT_EQ(load_trace_text(" \n[ \n ]\n ").size(), 0u);
  const TraceModel m = load_trace_text("[]");
  EXPECT_EQ(m.info.generation, FormatGeneration::kLegacyAutograd);
  EXPECT_FALSE(m.report.truncated);
}

// Root keys keep their escapes verbatim: a key that spells ESC and BEL as \u escapes stays that
// text (no raw control character can reach the terminal through it), and is not mangled into
// "evilu001b..." by dropping the backslashes.
TEST(Scanner, EscapedRootKeysAreKeptVerbatim) {
  const TraceModel m = load_trace_text(
      R"({"evil\u001b]0;x\u0007_version": "1", "traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})");
  ASSERT_EQ(m.size(), 1u);
  ASSERT_EQ(m.info.versions.count("evil\\u001b]0;x\\u0007_version"), 1u);
  for (const auto& [key, value] : m.info.versions)
    EXPECT_EQ(std::count_if(key.begin(), key.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }), 0)
        << key;
}

}  // namespace scanner_test
}  // namespace
}  // namespace ferret
