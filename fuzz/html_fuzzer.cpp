// libFuzzer harness: the JSON entry points the Python binding exposes to any text a Python caller
// passes (ferret.report(doc, "html") -> _ferret.html_page; analyze(dataloaders=...) ->
// parse_dataloader_settings). Must never crash (a 40,000-deep list overflowed the stack) or hang;
// refused text is an InputError, which Python sees as ValueError. Seeds: fuzz/seeds-html.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/analysis_options.h"
#include "base/input_error.h"
#include "report/trace/html_report.h"

namespace {

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Oracle: the document and title never open or close an element of the page.
  static const std::string bare = ferret::html_page("{}", "");
  static const std::size_t tags = count(bare, "<");
  try {
    const std::string page = ferret::html_page(text, text.substr(0, 64));
    if (count(page, "<") != tags) __builtin_trap();
  } catch (const ferret::InputError&) {
  }
  try {
    (void)ferret::parse_dataloader_settings(text, "fuzz");
  } catch (const ferret::InputError&) {
  }
  return 0;
}
