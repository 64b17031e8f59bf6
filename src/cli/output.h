// Where text reports and messages leave ferret. Each passes through base/terminal_text.h on the
// way out: names were escaped where the renderers embedded them; this is the last line of
// defence for any control byte that reached a report some other way.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ferret::cli {

// A text or Markdown report to stdout: its own line breaks and tabs stay, and Style's colours
// when stdout is a terminal; any other control byte is escaped.
void print_report(std::string_view report);

// "ferret: <message>" and a line break on stderr, the message escaped whole: a message is one
// line, and the file names, options and trace text it quotes may hold ESC or '\n'.
void print_error(std::string_view message);

// The one way usage errors are printed, for every sub-command and CLI11's own parse errors
// (options that exclude each other, a malformed value, an unknown option): "ferret: <message>".
void print_usage_error(std::string_view message);
// print_usage_error(message), then exit status 2 (throws ExitCode{2}).
[[noreturn]] void usage_error(std::string_view message);

// --html FILE: writes the page to FILE (base/safe_file.h: whole or not at all, never one of
// `inputs`), or to stdout for "-"; a file that cannot be written is an error naming it (exit 2).
void write_html(const std::string& path, const std::string& page, const std::vector<std::string>& inputs);
// A usage error (exit 2) when `output` is the same file as one of `inputs` (after links): checked
// before any work, so a mistyped command costs nothing; SafeFile checks again as it writes.
void refuse_output_over_input(std::string_view option, const std::string& output,
                              const std::vector<std::string>& inputs);
// The page's title: the inputs, as given.
std::string html_title(const std::vector<std::string>& inputs);

}  // namespace ferret::cli
