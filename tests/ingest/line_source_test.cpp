// The shared line source of the text readers (ingest/line_source.h): lines split across chunks at
// every boundary give the lines a plain split gives, with their end offsets; a line over the limit
// arrives as its first limit + 1 bytes, cut; a read that fails after the first byte is damage, not
// an error. Expected values are worked out by hand or by splitting the whole text at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "ingest/line_source.h"

namespace ferret {
namespace {
namespace line_source_test {

struct Line {
  std::string text;
  bool cut;
  std::uint64_t end;
  bool operator==(const Line&) const = default;
};

// `text` fed in chunks of `chunk` bytes.
std::vector<Line> split_in_chunks(const std::string& text, std::size_t chunk, std::size_t max_line) {
  LineSplitter splitter(max_line);
  std::vector<Line> lines;
  auto on_line = [&](std::string_view l, bool cut, std::uint64_t end) {
    lines.push_back({std::string(l), cut, end});
    return true;
  };
  for (std::size_t at = 0; at < text.size(); at += chunk)
    EXPECT_TRUE(splitter.split(std::string_view(text).substr(at, chunk), at, on_line));
  splitter.finish(text.size(), on_line);
  return lines;
}

TEST(LineSource, EveryChunkSizeGivesTheSameLinesAndOffsets) {
  const std::string text = "alpha\nbe\n\ngamma delta\nlast";
  // By hand: ends just past each '\n' (6, 9, 10, 22), and the unterminated last line at 26.
  const std::vector<Line> expected = {
      {"alpha", false, 6}, {"be", false, 9}, {"", false, 10}, {"gamma delta", false, 22}, {"last", false, 26}};
  for (std::size_t chunk = 1; chunk <= text.size(); ++chunk)
    EXPECT_EQ(split_in_chunks(text, chunk, 100), expected) << "chunk " << chunk;
}

TEST(LineSource, ALongLineIsCutToTheLimitPlusOneByteWhenCarried) {
  // Limit 4: "abcdefgh" carried across chunks of 3 keeps "abcde" (4 + 1) and is cut; within one
  // chunk it arrives whole, not cut (the reader measures it).
  EXPECT_EQ(split_in_chunks("abcdefgh\nxy\n", 3, 4), (std::vector<Line>{{"abcde", true, 9}, {"xy", false, 12}}));
  EXPECT_EQ(split_in_chunks("abcdefgh\nxy\n", 100, 4), (std::vector<Line>{{"abcdefgh", false, 9}, {"xy", false, 12}}));
  // Without a final newline, the carried rest is the last line, cut.
  EXPECT_EQ(split_in_chunks("ok\n0123456789", 2, 4), (std::vector<Line>{{"ok", false, 3}, {"01234", true, 13}}));
}

TEST(LineSource, AReaderThatStopsEndsTheSplitAndDropsTheRest) {
  LineSplitter splitter(100);
  int fed = 0;
  EXPECT_FALSE(splitter.split("a\nb\nc", 0, [&](std::string_view, bool, std::uint64_t) { return ++fed < 2; }));
  EXPECT_EQ(fed, 2);
  splitter.drop_partial();
  splitter.finish(5, [&](std::string_view, bool, std::uint64_t) {
    ADD_FAILURE() << "a dropped line reached the reader";
    return true;
  });
}

// A source that fails on its second read.
class FailingSource : public ByteSource {
 public:
  explicit FailingSource(int fail_at) : fail_at_(fail_at) {}
  std::size_t read(char* dst, std::size_t capacity) override {
    if (++reads_ == fail_at_) throw InputError("disk said no");
    if (reads_ > 2) return 0;
    const std::size_t n = std::min<std::size_t>(capacity, 3);
    std::fill(dst, dst + n, 'x');
    return n;
  }
  std::uint64_t consumed() const override { return 0; }

 private:
  int fail_at_;
  int reads_ = 0;
};

TEST(LineSource, AFailedReadAfterTheFirstByteIsDamageBeforeItAnError) {
  FailingSource later(2);
  std::uint64_t seen = 0;
  const ReadEnd end = read_chunks(later, [&](std::string_view chunk, std::uint64_t offset) {
    EXPECT_EQ(offset, seen);
    seen += chunk.size();
    return true;
  });
  EXPECT_EQ(end.bytes, 3u);
  EXPECT_EQ(end.damage, "disk said no");
  FailingSource first(1);
  EXPECT_THROW(read_chunks(first, [](std::string_view, std::uint64_t) { return true; }), InputError);
  // A whole source: its chunks in order, and its own damage (none for memory).
  std::unique_ptr<ByteSource> memory = make_memory_source("12345");
  std::string all;
  const ReadEnd whole = read_chunks(*memory, [&](std::string_view chunk, std::uint64_t) {
    all += chunk;
    return true;
  });
  EXPECT_EQ(all, "12345");
  EXPECT_EQ(whole.bytes, 5u);
  EXPECT_EQ(whole.damage, "");
}

}  // namespace line_source_test
}  // namespace
}  // namespace ferret
