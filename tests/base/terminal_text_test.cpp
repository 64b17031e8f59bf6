// terminal_safe / terminal_safe_output: every class of byte a terminal acts on becomes a visible
// escape; text a terminal only displays passes unchanged. Expected strings are written by hand.
#include "base/terminal_text.h"

#include <gtest/gtest.h>

namespace ferret {
namespace {
namespace terminal_text_test {

TEST(TerminalSafe, C0ControlsBecomeVisibleEscapes) {
  EXPECT_EQ(terminal_safe("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(terminal_safe("bell\x07"), "bell\\x07");
  EXPECT_EQ(terminal_safe("back\bspace"), "back\\x08space");
  EXPECT_EQ(terminal_safe(std::string_view("nul\0end", 7)), "nul\\x00end");
  EXPECT_EQ(terminal_safe("\x1f"), "\\x1f");
  // Line breaks from untrusted text must not start a new report line.
  EXPECT_EQ(terminal_safe("op\nVerdict: all good"), "op\\nVerdict: all good");
  EXPECT_EQ(terminal_safe("a\rb\tc"), "a\\rb\\tc");
}

TEST(TerminalSafe, DelBecomesEscape) { EXPECT_EQ(terminal_safe("x\x7fy"), "x\\x7fy"); }

TEST(TerminalSafe, OscSequencesAreDefused) {
  // OSC 52 (clipboard write) and OSC 8 (hyperlink): only ESC and BEL are acted on.
  EXPECT_EQ(terminal_safe("\x1b]52;c;aGk=\x07"), "\\x1b]52;c;aGk=\\x07");
  EXPECT_EQ(terminal_safe("\x1b]8;;http://e.x\x1b\\link\x1b]8;;\x1b\\"),
            "\\x1b]8;;http://e.x\\x1b\\link\\x1b]8;;\\x1b\\");
}

TEST(TerminalSafe, C1ControlsInUtf8BecomeCodePointEscapes) {
  EXPECT_EQ(terminal_safe("a\xc2\x9b"
                          "2Jb"),
            "a\\u009b2Jb");  // CSI
  EXPECT_EQ(terminal_safe("\xc2\x80\xc2\x9f"), "\\u0080\\u009f");
  // U+00A0 (no-break space) is the first printable code point after C1: kept.
  EXPECT_EQ(terminal_safe("\xc2\xa0"), "\xc2\xa0");
}

TEST(TerminalSafe, InvalidUtf8BytesBecomeByteEscapes) {
  EXPECT_EQ(terminal_safe("host\x9b"
                          "2J"),
            "host\\x9b2J");                                              // lone 8-bit CSI
  EXPECT_EQ(terminal_safe("\xc3"), "\\xc3");                             // cut short
  EXPECT_EQ(terminal_safe("\xc3(x"), "\\xc3(x");                         // bad continuation
  EXPECT_EQ(terminal_safe("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // surrogate D800
  EXPECT_EQ(terminal_safe("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // beyond U+10FFFF
  EXPECT_EQ(terminal_safe("\xff"), "\\xff");
}

TEST(TerminalSafe, BidiControlsBecomeCodePointEscapes) {
  EXPECT_EQ(terminal_safe("a\xe2\x80\xae"
                          "b"),
            "a\\u202eb");  // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(terminal_safe("\xe2\x80\xaa"), "\\u202a");
  EXPECT_EQ(terminal_safe("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");
  // Neighbours outside the ranges stay: U+2029 PARAGRAPH SEPARATOR, U+206A.
  EXPECT_EQ(terminal_safe("\xe2\x80\xa9\xe2\x81\xaa"), "\xe2\x80\xa9\xe2\x81\xaa");
}

TEST(TerminalSafe, PrintableUtf8PassesUnchanged) {
  EXPECT_EQ(terminal_safe("caf\xc3\xa9"), "caf\xc3\xa9");                            // é
  EXPECT_EQ(terminal_safe("\xe4\xb8\xad\xe6\x96\x87"), "\xe4\xb8\xad\xe6\x96\x87");  // 中文
  EXPECT_EQ(terminal_safe("\xf0\x9f\x94\xa5 hot"), "\xf0\x9f\x94\xa5 hot");          // emoji
  EXPECT_EQ(terminal_safe("aten::mm"), "aten::mm");
  EXPECT_EQ(terminal_safe(""), "");
}

TEST(TerminalSafe, BackslashStaysAsIs) { EXPECT_EQ(terminal_safe("C:\\x1b\\n"), "C:\\x1b\\n"); }

constexpr TerminalTextRules kReport{.keep_line_breaks = true};
constexpr TerminalTextRules kColouredReport{.keep_line_breaks = true, .keep_colour = true};

TEST(TerminalSafeReport, KeepsLineBreaksAndTabsButEscapesTheRest) {
  EXPECT_EQ(terminal_safe("line 1\n\tline 2\n", kReport), "line 1\n\tline 2\n");
  EXPECT_EQ(terminal_safe("a\rb\x1b[2J\xc2\x9b\x7f\n", kReport), "a\\rb\\x1b[2J\\u009b\\x7f\n");
}

TEST(TerminalSafeReport, KeepsStyleColoursOnlyWhenAsked) {
  const std::string bold = "\x1b[1mhead\x1b[0m \x1b[31mred\x1b[0m\n";
  EXPECT_EQ(terminal_safe(bold, kColouredReport), bold);
  EXPECT_EQ(terminal_safe(bold, kReport), "\\x1b[1mhead\\x1b[0m \\x1b[31mred\\x1b[0m\n");
  // Colour on still escapes every other sequence: erase screen, conceal (SGR 8), OSC title, a
  // cut-off CSI.
  EXPECT_EQ(terminal_safe("\x1b[2J\x1b[8m\x1b]0;t\x07\x1b[", kColouredReport), "\\x1b[2J\\x1b[8m\\x1b]0;t\\x07\\x1b[");
  // Keeping colour does not keep line breaks: wrapped sentences are escaped whole.
  EXPECT_EQ(terminal_safe("\x1b[1mop\nVerdict\x1b[0m", {.keep_colour = true}), "\x1b[1mop\\nVerdict\x1b[0m");
}

}  // namespace terminal_text_test
}  // namespace
}  // namespace ferret
