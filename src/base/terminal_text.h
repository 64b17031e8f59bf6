// Text from outside ferret (names in a trace or log, file names, labels) made safe for a terminal
// and for line-oriented output: a trace must not be able to clear the screen, set the window
// title, plant OSC 8 links or OSC 52 clipboard writes, or forge a report line with '\n'.
#pragma once

#include <string>
#include <string_view>

namespace ferret {

// What may pass raw. The defaults escape everything below: right for one untrusted string.
struct TerminalTextRules {
  // '\n' and '\t' pass: for a whole report at its stdout sink, where ferret wrote them.
  bool keep_line_breaks = false;
  // The SGR sequences report/format.h's Style writes (ESC [ 0, 1, 2, 31, 32, 33 or 36 m) pass:
  // for text ferret has coloured. Nothing else starting with ESC does, so a name can at worst
  // make text bold or coloured, never hide it, move the cursor or talk to the terminal.
  bool keep_colour = false;
};

// Control characters and bytes a terminal may act on become visible escapes:
//   C0 controls (0x00-0x1f): "\n", "\r", "\t" by name, the others "\x1b" style; DEL: "\x7f";
//   C1 controls encoded in UTF-8 (U+0080-U+009F): "\u009b" style;
//   bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069; "Trojan source"
//   reordering of a line): "\u202e" style;
//   any byte that does not start a valid UTF-8 sequence (a lone 0x9b is CSI to 8-bit terminals):
//   "\x9b" style.
// Everything else, valid multi-byte UTF-8 included, is kept. A backslash is kept as is: the
// output is for reading, not for parsing back, and "C:\x1b" stays readable; the raw byte that a
// "\x1b" stands for can never appear in the result. One scan; text needing no escape is copied.
std::string terminal_safe(std::string_view text, TerminalTextRules rules = {});

}  // namespace ferret
