// The page's size bound: whatever the number of steps, the document it carries keeps at most 500
// entries per array (counted in "<key>_left_out"), compact. The browser tests (test_html_browser.py)
// check what the page draws.
#include "report/trace/html_report.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace html_report_test {

using nlohmann::ordered_json;

ordered_json carried(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"ferret-data\">";
  const std::size_t begin = page.find(open);
  EXPECT_NE(begin, std::string::npos);
  const std::size_t end = page.find("</script>", begin);
  return ordered_json::parse(page.substr(begin + open.size(), end - begin - open.size()));
}

// A trace of 5,000 steps of one kernel each: --json lists every step; the page keeps 500 of them.
TEST(HtmlPage, LongStepListsAreTrimmedAndThePageStaysSmall) {
  std::vector<std::string> events;
  for (int i = 0; i < 5000; ++i) {
    const double t = i * 100.0;
    events.push_back(test::span("user_annotation", "ProfilerStep#" + std::to_string(i), 1, 1, t, 100));
    events.push_back(test::span("cpu_op", "aten::mm", 1, 1, t + 1, 20));
    events.push_back(
        test::span("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 5, 5, "\"correlation\": " + std::to_string(i + 1)));
    events.push_back(test::span("kernel", "sgemm", 0, 7, t + 12, 60,
                                "\"device\": 0, \"stream\": 7, \"correlation\": " + std::to_string(i + 1)));
  }
  const std::string path = test::temp_path("html-5000-steps.json");
  test::write_file(path, test::trace(events));
  const test::CommandResult json = test::run_ferret("analyze --json '" + path + "'");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const ordered_json full = ordered_json::parse(json.out);
  ASSERT_EQ(full["traces"][0]["steps"]["list"].size(), 5000u);

  const std::string page_path = test::temp_path("html-5000-steps.html");
  const test::CommandResult html = test::run_ferret("analyze --html '" + page_path + "' '" + path + "'");
  ASSERT_EQ(html.exit_code, 0) << html.err;
  const std::string page = test::read_file(page_path);
  const ordered_json doc = carried(page);
  const ordered_json& steps = doc["traces"][0]["steps"];
  ASSERT_EQ(steps["list"].size(), 500u);
  EXPECT_EQ(steps["list_left_out"], 4500);
  EXPECT_EQ(steps["count"], 5000);
  // What is kept is the document's own first entries, unchanged.
  for (std::size_t i = 0; i < 500; ++i) EXPECT_EQ(steps["list"][i], full["traces"][0]["steps"]["list"][i]);
  // No array anywhere in the page's document is longer than the limit.
  std::vector<const ordered_json*> todo = {&doc};
  while (!todo.empty()) {
    const ordered_json* n = todo.back();
    todo.pop_back();
    if (n->is_array()) {
      EXPECT_LE(n->size(), 500u);
    }
    if (n->is_structured())
      for (const auto& child : *n) todo.push_back(&child);
  }
  // The full --json document is over 2 MB of text; the page, far under.
  EXPECT_GT(json.out.size(), std::size_t{2} << 20);
  EXPECT_LT(page.size(), std::size_t{1} << 20);
}

TEST(HtmlPage, TheCarriedDocumentIsTheJsonDocumentCompact) {
  const std::string doc = R"({"schema": "ferret.analysis/1", "traces": [{"source": "a</script>&b", "n": [1, 2]}]})";
  const std::string page = html_page(doc, "t");
  EXPECT_EQ(carried(page), ordered_json::parse(doc));
  EXPECT_NE(
      page.find(R"({"schema":"ferret.analysis/1","traces":[{"source":"a\u003c/script\u003e\u0026b","n":[1,2]}]})"),
      std::string::npos);
}

}  // namespace html_report_test
}  // namespace
}  // namespace ferret
