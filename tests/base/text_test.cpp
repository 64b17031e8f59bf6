// base/text: the string helpers every stage shares.
#include "base/text.h"

#include <gtest/gtest.h>

namespace ferret {
namespace {
namespace text_test {

TEST(Trim, DropsAsciiWhitespaceAtBothEndsOnly) {
  EXPECT_EQ(trim(" \t\r\n\v\fa b\t \n"), "a b");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim("\xc2\xa0x"), "\xc2\xa0x");  // U+00A0 is not ASCII whitespace: kept
}

TEST(Contains, FindsAPartAnywhere) {
  EXPECT_TRUE(contains("cudaStreamSynchronize", "Stream"));
  EXPECT_TRUE(contains("abc", ""));
  EXPECT_FALSE(contains("abc", "abcd"));
  EXPECT_FALSE(contains("", "a"));
}

TEST(FitWidth, CutsWithDotsNeverInsideAUtf8Sequence) {
  EXPECT_EQ(fit_width("short", 10), "short");
  EXPECT_EQ(fit_width("abcdefghij", 8), "abcde...");
  // "ab" + U+00E9 (2 bytes) + "cdef": a cut at byte 3 would split the é, so it falls back to byte 2.
  EXPECT_EQ(fit_width("ab\xc3\xa9"
                      "cdefgh",
                      6),
            "ab...");
  EXPECT_EQ(fit_width("abcdef", 2), "ab");
}

// The string state every raw-JSON scanner shares: quotes and what they hold are in a string; an
// escaped quote does not end it; an escaped backslash does not escape the quote after it.
TEST(JsonStringState, QuotesEscapesAndWhatLiesOutside) {
  const std::string text = R"(["a\"]", "b\\", c])";
  std::string inside;
  JsonStringState s;
  for (const char c : text) inside += s.feed(c) ? 'S' : '.';
  EXPECT_EQ(inside, ".SSSSSS..SSSSS....");
  EXPECT_EQ(json_nesting_depth(R"({"a":"[[[[", "b":[{"c":"]]]"}]})", 10), 3u);
  EXPECT_EQ(json_nesting_depth(std::string(100, '['), 10), 11u);  // counting stops past the limit
}

}  // namespace text_test
}  // namespace
}  // namespace ferret
