// The analyses of one trace give the same document on one thread and on two (AnalysisOptions::
// concurrent): the example traces and every corpus trace, JSON compared byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "report/trace/analyze_report.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace concurrent_analysis_test {

namespace fs = std::filesystem;

std::string document(const TraceModel& model, bool concurrent) {
  AnalysisOptions options;
  options.concurrent = concurrent;
  options.concurrent_min_events = 0;  // every trace takes the two-thread path
  const TraceAnalysis a = analyze_trace(model, options);
  return analyze_json(a, diagnose(a)).dump();
}

std::vector<std::string> traces() {
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(std::string(FERRET_SOURCE_DIR) + "/examples/traces"))
    paths.push_back(e.path().string());
  const std::string corpus = std::string(FERRET_SHARED_DIR) + "/corpus";
  if (fs::is_directory(corpus))
    for (const auto& e : fs::directory_iterator(corpus))
      if (e.is_regular_file() && e.path().string().find(".json") != std::string::npos)
        paths.push_back(e.path().string());
  return paths;
}

TEST(ConcurrentAnalysis, OneThreadAndTwoGiveTheSameDocument) {
  const std::vector<std::string> paths = traces();
  ASSERT_FALSE(paths.empty());
  if (paths.size() < 10) std::fprintf(stderr, "NOTE: ../shared/corpus absent: example traces only\n");
  for (const std::string& path : paths) {
    const TraceModel model = load_trace(path);
    EXPECT_EQ(document(model, false), document(model, true)) << path;
  }
}

}  // namespace concurrent_analysis_test
}  // namespace
}  // namespace ferret
