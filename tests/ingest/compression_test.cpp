// Compression is told by magic bytes, never by the file name: plain, gzip (one or several
// members) and zstd (one or several frames) load to the same model.
#include <zlib.h>
#include <zstd.h>

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
namespace compression_test {

using test::gzip_bytes;
using test::zstd_bytes;

// A Kineto-2 style trace of n CPU ops with distinct names and ns-resolution timestamps.
std::string make_trace(int n) {
  std::string s = R"({"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000, "traceEvents": [)";
  for (int i = 0; i < n; ++i) {
    if (i) s += ",\n";
    s += fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "aten::op_{}", "pid": 7, "tid": {}, "ts": {}.{:03d}, "dur": 1.5, "args": {{"External id": {}}}}})",
        i, 7 + i % 3, 1000 + 10 * i, i % 1000, i);
  }
  s += R"(], "traceName": "t"})";
  return s;
}

// Writes a gzip file through zlib's own file API (gzopen/gzwrite), independent of gzip_bytes.
void write_gz_file(const std::string& path, const std::string& plain) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, plain.data(), static_cast<unsigned>(plain.size())), static_cast<int>(plain.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

void expect_same_events(const TraceModel& got, const TraceModel& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    ASSERT_EQ(got.name_of(e), want.name_of(e)) << what << " event " << i;
    ASSERT_EQ(got.ts_ns[e], want.ts_ns[e]) << what << " event " << i;
    ASSERT_EQ(got.dur_ns[e], want.dur_ns[e]) << what << " event " << i;
    ASSERT_EQ(got.tid[e], want.tid[e]) << what << " event " << i;
  }
  EXPECT_EQ(got.info.base_time_ns, want.info.base_time_ns) << what;
  EXPECT_EQ(got.info.trace_name, want.info.trace_name) << what;
  EXPECT_EQ(got.report.repair_count(), 0u) << what;
  EXPECT_EQ(got.report.skip_count(), 0u) << what;
  EXPECT_TRUE(got.report.notes.empty()) << what << ": " << (got.report.notes.empty() ? "" : got.report.notes[0]);
  EXPECT_FALSE(got.report.truncated) << what;
}

class CompressionFiles : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto& p : files_) std::remove(p.c_str());
  }
  std::string file(const std::string& name, const std::string& bytes) {
    const std::string p = test::temp_path(name);
    test::write_file(p, bytes);
    files_.push_back(p);
    return p;
  }
  std::vector<std::string> files_;
};

TEST_F(CompressionFiles, SameTraceLoadsIdenticallyWhateverTheCompressionAndName) {
  const std::string plain = make_trace(3000);
  const TraceModel want = load_trace_text(plain);
  ASSERT_EQ(want.size(), 3000u);
  EXPECT_EQ(want.ts_ns[2999], 1000LL * 1000 + 10 * 2999 * 1000 + 999);  // 30990.999 us

  struct Case {
    std::string name, bytes, compression;
  };
  const std::string gz = gzip_bytes(plain), zst = zstd_bytes(plain);
  const std::vector<Case> cases = {
      {"plain.json", plain, "none"},
      {"gzip.json.gz", gz, "gzip"},
      {"zstd.json.zst", zst, "zstd"},
      {"gzip-named-plain.json", gz, "gzip"},  // misleading names
      {"plain-named-gzip.json.gz", plain, "none"},
      {"zstd-named-gzip.json.gz", zst, "zstd"},
      {"gzip-no-extension", gz, "gzip"},
      // A zstd stream that opens with a skippable frame (magic 0x184D2A53, 5 bytes of payload).
      {"skippable-then-zstd.json.zst", std::string("\x53\x2a\x4d\x18\x05\x00\x00\x00hello", 13) + zst, "zstd"},
  };
  for (const Case& c : cases) {
    const std::string path = file(c.name, c.bytes);
    TraceModel got;
    ASSERT_NO_THROW(got = load_trace(path)) << c.name;
    expect_same_events(got, want, c.name);
    EXPECT_EQ(got.info.compression, c.compression) << c.name;
    EXPECT_EQ(got.info.json_bytes, plain.size()) << c.name;
    EXPECT_EQ(got.info.compressed_bytes, c.bytes.size()) << c.name;
  }
}

TEST_F(CompressionFiles, GzipWrittenByZlibFileApi) {
  const std::string plain = make_trace(500);
  const std::string path = test::temp_path("gzwrite.json");
  files_.push_back(path);
  write_gz_file(path, plain);
  const TraceModel got = load_trace(path);
  expect_same_events(got, load_trace_text(plain), "gzwrite");
  EXPECT_EQ(got.info.compression, "gzip");
}

TEST_F(CompressionFiles, GzipWrittenByTheGzipTool) {
  const std::string plain = make_trace(500);
  const std::string src = file("tool.json", plain);
  const std::string gz = test::temp_path("tool.json.gz");
  files_.push_back(gz);
  ASSERT_EQ(std::system(("gzip -c " + src + " > " + gz).c_str()), 0);
  expect_same_events(load_trace(gz), load_trace_text(plain), "gzip tool");
}

TEST_F(CompressionFiles, ConcatenatedGzipMembersLoadFully) {
  // `gzip -c a b > c` makes one file of two members; the split falls in the middle of an event.
  const std::string plain = make_trace(2000);
  const std::size_t third = plain.size() / 3;
  const std::string two = gzip_bytes(plain.substr(0, third * 2 + 5)) + gzip_bytes(plain.substr(third * 2 + 5));
  const std::string three =
      gzip_bytes(plain.substr(0, third)) + gzip_bytes(plain.substr(third, third)) + gzip_bytes(plain.substr(2 * third));
  const TraceModel want = load_trace_text(plain);
  expect_same_events(load_trace(file("two-members.json.gz", two)), want, "two members");
  expect_same_events(load_trace(file("three-members.json.gz", three)), want, "three members");
}

TEST_F(CompressionFiles, ConcatenatedZstdFramesLoadFully) {
  const std::string plain = make_trace(1000);
  const std::size_t half = plain.size() / 2 + 3;
  const std::string two = zstd_bytes(plain.substr(0, half)) + zstd_bytes(plain.substr(half));
  expect_same_events(load_trace(file("two-frames.json.zst", two)), load_trace_text(plain), "two zstd frames");
}

TEST(CompressionSources, DecompressorsOverMemory) {
  const std::string plain = make_trace(200);
  auto gz = make_gzip_source(make_memory_source(gzip_bytes(plain)), "mem.gz");
  std::string got;
  char buf[777];  // odd size: many short reads
  while (std::size_t n = gz->read(buf, sizeof buf)) got.append(buf, n);
  EXPECT_EQ(got, plain);
  EXPECT_EQ(gz->damage(), "");

  auto zs = make_zstd_source(make_memory_source(zstd_bytes(plain)), "mem.zst");
  got.clear();
  while (std::size_t n = zs->read(buf, sizeof buf)) got.append(buf, n);
  EXPECT_EQ(got, plain);
  EXPECT_EQ(zs->damage(), "");
}

TEST(CompressionSources, LoadFromAnOpenedSource) {
  const std::string plain = make_trace(100);
  auto src = make_gzip_source(make_memory_source(gzip_bytes(plain)), "mem.gz");
  const TraceModel m = load_trace_from(*src, "mem.gz", "gzip");
  EXPECT_EQ(m.size(), 100u);
  EXPECT_EQ(m.info.source, "mem.gz");
  EXPECT_EQ(m.info.compression, "gzip");
}

TEST(CompressionSources, Utf8ByteOrderMarkIsSkipped) {
  const TraceModel m = load_trace_text("\xEF\xBB\xBF" + make_trace(3));
  EXPECT_EQ(m.size(), 3u);
}

// Regression: the magic-byte peek of a file shorter than the magic once handed its bytes out
// twice ("[]" read as "[][]": a note about data after the document).
TEST(Compression, FileShorterThanTheMagicIsReadOnce) {
  const std::string path = test::temp_path("two-bytes.json");
  test::write_file(path, "[]");
  const TraceModel model = load_trace(path);
  EXPECT_EQ(model.info.json_bytes, 2u);
  EXPECT_TRUE(model.report.notes.empty()) << model.report.notes.front();
  std::remove(path.c_str());
}

}  // namespace compression_test
}  // namespace
}  // namespace ferret
