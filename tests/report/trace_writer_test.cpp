#include "base/trace_writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "ingest/byte_source.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace trace_writer_test {

std::string micros(std::int64_t ns) {
  std::string s;
  append_micros(s, ns);
  return s;
}

std::string ratio(std::uint64_t n, std::uint64_t d, int decimals) {
  std::string s;
  append_ratio(s, n, d, decimals);
  return s;
}

std::string read_all(const std::string& path) {
  OpenedSource opened = open_byte_source(path);
  std::string text;
  char buffer[1 << 16];
  for (std::size_t n; (n = opened.source->read(buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  return text;
}

TEST(AppendMicros, EpochNanosecondsAreExact) {
  // 19 significant digits: a double would print ...582.9880371 (see ingest/decimal_test.cpp).
  EXPECT_EQ(micros(1712195495505582988LL), "1712195495505582.988");
  EXPECT_EQ(micros(0), "0.000");
  EXPECT_EQ(micros(5), "0.005");
  EXPECT_EQ(micros(4928), "4.928");
  EXPECT_EQ(micros(-1500), "-1.500");
  EXPECT_EQ(micros(INT64_MAX), "9223372036854775.807");
  EXPECT_EQ(micros(INT64_MIN), "-9223372036854775.808");
}

TEST(AppendRatio, RoundsHalfUpWithFixedDecimals) {
  EXPECT_EQ(ratio(1, 3, 6), "0.333333");
  EXPECT_EQ(ratio(2, 3, 6), "0.666667");
  EXPECT_EQ(ratio(5, 2, 0), "3");
  EXPECT_EQ(ratio(10, 4, 2), "2.50");
  // 38535168 bytes in 3211264 ns = 12 bytes/ns = 12 GB/s.
  EXPECT_EQ(ratio(38535168, 3211264, 6), "12.000000");
  // Kernel-time sums times 10^6 overflow 64 bits without the 128-bit intermediate.
  EXPECT_EQ(ratio(30000000000000ULL, 60000000000000ULL, 6), "0.500000");
}

TEST(AppendJsonString, EscapesQuotesBackslashesAndControls) {
  std::string s;
  append_json_string(s, "a\"b\\c\nd");
  EXPECT_EQ(s, "\"a\\\"b\\\\c\\u000ad\"");
}

TEST(OutputCompressionFor, SuffixAndFlags) {
  EXPECT_EQ(output_compression_for("a.json.gz", false, false), OutputCompression::kGzip);
  EXPECT_EQ(output_compression_for("a.json", false, false), OutputCompression::kNone);
  EXPECT_EQ(output_compression_for("a.json", true, false), OutputCompression::kGzip);
  EXPECT_EQ(output_compression_for("a.json.gz", false, true), OutputCompression::kNone);
}

TEST(OutputFile, GzipRoundTripsThroughTheLoadersDecompressor) {
  // Several MB of varied text crosses the 1 MiB buffer and the compressor's block boundaries.
  std::string text;
  for (int i = 0; i < 200000; ++i) text += "{\"ts\": " + std::to_string(i * 7919LL % 1000003) + "},\n";
  for (const bool gzip : {true, false}) {
    const std::string path = test::temp_path(gzip ? "rt.json.gz" : "rt.json");
    OutputFile out(path, gzip ? OutputCompression::kGzip : OutputCompression::kNone);
    out.write(text.substr(0, 1000));
    out.write(text.substr(1000, 3 << 20));  // one write larger than the buffer
    out.write(text.substr(1000 + (3 << 20)));
    out.close();
    EXPECT_EQ(out.bytes_in(), text.size());
    const std::string file = test::read_file(path);
    EXPECT_EQ(out.bytes_out(), file.size());
    if (gzip) {
      ASSERT_GE(file.size(), 2u);
      EXPECT_EQ(static_cast<unsigned char>(file[0]), 0x1f);
      EXPECT_EQ(static_cast<unsigned char>(file[1]), 0x8b);
      EXPECT_LT(file.size(), text.size() / 3);
    }
    EXPECT_EQ(read_all(path), text);
    std::remove(path.c_str());
  }
}

TEST(OutputFile, UnwritablePathThrows) {
  EXPECT_THROW(OutputFile("/nonexistent-dir/x.json", OutputCompression::kNone), std::runtime_error);
}

TEST(TraceWriter, KeysBeforeAndAfterTheEventArrayKeepTheirOrder) {
  const std::string path = test::temp_path("writer.json");
  {
    OutputFile out(path, OutputCompression::kNone);
    TraceWriter w(out);
    w.header("schemaVersion", "1");
    w.event("{\"ph\": \"X\", \"ts\": 1.000, \"dur\": 2.000}");
    w.event("{\"ph\": \"i\", \"ts\": 2.000}");
    w.header("traceName", "\"x\"");
    w.finish();
    EXPECT_EQ(w.events(), 2u);
    out.close();
  }
  const auto doc = nlohmann::ordered_json::parse(test::read_file(path));
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"schemaVersion", "traceEvents", "traceName"}));
  EXPECT_EQ(doc["traceEvents"].size(), 2u);
  std::remove(path.c_str());
}

TEST(TraceWriter, EmptyAndBareArrayDocumentsAreValidJson) {
  const std::string path = test::temp_path("empty.json");
  {
    OutputFile out(path, OutputCompression::kNone);
    TraceWriter w(out);
    w.finish();
    out.close();
  }
  EXPECT_EQ(nlohmann::json::parse(test::read_file(path)), nlohmann::json::parse("{\"traceEvents\": []}"));
  {
    OutputFile out(path, OutputCompression::kNone);
    TraceWriter w(out, /*bare_array=*/true);
    w.event("{\"ph\": \"X\"}");
    w.finish();
    EXPECT_THROW(w.header("k", "1"), std::logic_error);
    out.close();
  }
  EXPECT_EQ(nlohmann::json::parse(test::read_file(path)), nlohmann::json::parse("[{\"ph\": \"X\"}]"));
  // An output left without close() (an error cut the writing short) is not written at all: the
  // file before it stays whole (base/safe_file.h).
  {
    OutputFile out(path, OutputCompression::kNone);
    TraceWriter w(out);
    w.event("{\"ph\": \"X\"}");
  }
  EXPECT_EQ(nlohmann::json::parse(test::read_file(path)), nlohmann::json::parse("[{\"ph\": \"X\"}]"));
  std::remove(path.c_str());
}

}  // namespace trace_writer_test
}  // namespace
}  // namespace ferret
