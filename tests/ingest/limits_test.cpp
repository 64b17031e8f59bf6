// Resource bounds: a decompression bomb stops at the inflation limit, a model that outgrows
// --max-memory stops loading, an oversized event or a stream without progress stops reading; in
// every case what was read is kept and the stop is reported.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "ingest/byte_source.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace limits_test {

std::string event(int i) {
  std::string text = "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"pid\":1,\"tid\":1,\"ts\":";
  text += std::to_string(i * 10);
  text += ",\"dur\":5}";
  return text;
}

TEST(InflationLimit, BombStopsAndKeepsTheEventsBefore) {
  // Two real events, then 64 MB of whitespace: deflate packs it about 1000:1.
  std::string plain = "{\"traceEvents\":[" + event(0) + "," + event(1) + ",";
  plain += std::string(64u << 20, ' ');
  plain += event(2) + "]}";
  const std::string packed = test::gzip_bytes(plain, 9);
  ASSERT_LT(packed.size(), plain.size() / 500);
  InflationLimits limits;
  limits.max_ratio = 100;
  limits.min_bytes = 1 << 20;
  auto source = guard_inflation(make_gzip_source(make_memory_source(packed), "bomb.gz"), "bomb.gz", limits);
  const TraceModel model = load_trace_from(*source, "bomb.gz", "gzip");
  EXPECT_EQ(model.size(), 2u);  // the events before the stop
  EXPECT_TRUE(model.report.truncated);
  bool reported = false;
  for (const auto& [reason, issue] : model.report.repairs)
    reported |= issue.first_location.find("ratio") != std::string::npos;
  EXPECT_TRUE(reported) << "the stop must be reported with its ratio";
}

TEST(InflationLimit, OrdinaryCompressionPassesUntouched) {
  std::string plain = "{\"traceEvents\":[";
  for (int i = 0; i < 2000; ++i) plain += std::string(i ? "," : "") + event(i);
  plain += "]}";
  auto source = guard_inflation(make_gzip_source(make_memory_source(test::gzip_bytes(plain, 9)), "ok.gz"), "ok.gz", {});
  const TraceModel model = load_trace_from(*source, "ok.gz", "gzip");
  EXPECT_EQ(model.size(), 2000u);
  EXPECT_FALSE(model.report.truncated);
}

TEST(MemoryLimit, StopsLoadingWithANoteAndKeepsWhatWasRead) {
  std::string plain = "{\"traceEvents\":[";
  for (int i = 0; i < 200000; ++i) plain += std::string(i ? "," : "") + event(i);
  plain += "]}";
  for (unsigned threads : {1u, 2u}) {
    LoadOptions options;
    options.threads = threads;
    options.max_memory_bytes = 2u << 20;  // far below what 200k events need
    options.limits.batch_bytes = 64 << 10;
    const TraceModel model = load_trace_text(plain, options);
    EXPECT_GT(model.size(), 0u);
    EXPECT_LT(model.size(), 200000u);
    EXPECT_TRUE(model.report.truncated);
    bool noted = false;
    for (const std::string& note : model.report.notes) noted |= note.find("memory limit") != std::string::npos;
    EXPECT_TRUE(noted);
  }
}

bool has_note(const TraceModel& model, const std::string& text) {
  for (const std::string& note : model.report.notes)
    if (note.find(text) != std::string::npos) return true;
  return false;
}

TEST(ProgressLimit, EndlessWhitespaceAfterEventsStopsAndKeepsThem) {
  std::string plain = "{\"traceEvents\":[";
  for (int i = 0; i < 100; ++i) plain += std::string(i ? "," : "") + event(i);
  plain += ',';
  plain.append(3u << 20, ' ');  // no closing bracket: the stream just goes on
  LoadOptions options;
  options.limits.max_bytes_without_progress = 1u << 20;
  const TraceModel model = load_trace_text(plain, options);
  EXPECT_EQ(model.size(), 100u);
  EXPECT_TRUE(model.report.truncated);
  EXPECT_TRUE(has_note(model, "no complete event or top-level value in the last"));
}

TEST(ProgressLimit, WhitespaceOnlyIsAnInputError) {
  LoadOptions options;
  options.limits.max_bytes_without_progress = 1u << 20;
  EXPECT_THROW(load_trace_text(std::string(3u << 20, '\n'), options), InputError);
}

TEST(ProgressLimit, EventsThatAreAllSkippedStopLoading) {
  std::string plain = std::string("{\"traceEvents\":[") + event(0);
  for (int i = 0; i < 50000; ++i) plain += ",{\"ph\":\"B\",\"name\":\"x\",\"pid\":1,\"tid\":1,\"ts\":1}";
  plain += "]}";
  LoadOptions options;
  options.limits.batch_bytes = 64 << 10;
  options.limits.max_bytes_without_progress = 1u << 20;  // the B events span about 2.2 MB
  const TraceModel model = load_trace_text(plain, options);
  EXPECT_EQ(model.size(), 1u);
  EXPECT_TRUE(model.report.truncated);
  EXPECT_TRUE(has_note(model, "held none that could be kept"));
}

TEST(EventSizeLimit, OversizedEventStopsReadingAndKeepsTheEventsBefore) {
  std::string plain = std::string("{\"traceEvents\":[") + event(0) + "," + event(1) + ",{\"name\":\"";
  plain.append(2u << 20, 'a');
  plain += "\",\"ph\":\"X\",\"ts\":1,\"dur\":1}," + event(2) + "]}";
  LoadOptions options;
  options.limits.max_event_bytes = 1u << 20;
  const TraceModel model = load_trace_text(plain, options);
  EXPECT_EQ(model.size(), 2u);
  EXPECT_TRUE(model.report.truncated);
  EXPECT_TRUE(has_note(model, "is larger than 1048576 bytes"));
}

TEST(MemoryLimit, DefaultIsThreeQuartersOfRam) {
  const std::uint64_t limit = default_max_memory_bytes();
  EXPECT_GT(limit, 256u << 20);
}

}  // namespace limits_test
}  // namespace
}  // namespace ferret
