#include "cli/output.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "base/terminal_text.h"
#include "cli/commands.h"
#include "report/format.h"

namespace ferret::cli {

void print_report(std::string_view report) {
  std::cout << terminal_safe(report, {.keep_line_breaks = true, .keep_colour = style_for_fd(STDOUT_FILENO).enabled});
}

void print_error(std::string_view message) {
  const std::string line = "ferret: " + terminal_safe(message) + "\n";
  std::fputs(line.c_str(), stderr);
}

void print_usage_error(std::string_view message) { print_error(message); }

void usage_error(std::string_view message) {
  print_usage_error(message);
  throw ExitCode{2};
}

}  // namespace ferret::cli
