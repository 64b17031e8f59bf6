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

}  // namespace text_test
}  // namespace
}  // namespace ferret
