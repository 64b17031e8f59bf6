#include "cli/output.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "base/safe_file.h"
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

void write_html(const std::string& path, const std::string& page, const std::vector<std::string>& inputs) {
  if (path == "-") {
    std::cout << page;
    std::cout.flush();
    return;
  }
  try {
    write_file_safely(path, page, inputs);
  } catch (const std::runtime_error& e) {
    print_error(std::string("--html ") + e.what());
    throw ExitCode{2};
  }
}

void refuse_output_over_input(std::string_view option, const std::string& output,
                              const std::vector<std::string>& inputs) {
  try {
    refuse_if_an_input(output, inputs);
  } catch (const std::runtime_error& e) {
    usage_error(std::string(option) + " " + e.what());
  }
}

std::string html_title(const std::vector<std::string>& inputs) {
  std::string title = "ferret: ";
  for (std::size_t i = 0; i < inputs.size() && i < 4; ++i) title += (i ? ", " : "") + inputs[i];
  if (inputs.size() > 4) title += ", ...";
  return terminal_safe(title);
}

}  // namespace ferret::cli
