// Every input the fuzzers (make fuzz) ever crashed on stays here as a regression test: each must
// load (or be refused with an InputError) and go through the whole analysis without a crash.
#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "report/trace/analyze_report.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace fuzz_regression_test {

TEST(FuzzRegression, EveryCrashInputIsHandled) {
  const std::filesystem::path dir = std::filesystem::path(FERRET_SOURCE_DIR) / "tests/data/fuzz";
  int inputs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string bytes = test::read_file(entry.path().string());
    for (unsigned threads : {1u, 2u}) {
      LoadOptions options;
      options.threads = threads;
      options.limits.batch_bytes = 4096;  // as the fuzz harness: many refills
      try {
        const TraceModel model = load_trace_text(bytes, options);
        const TraceAnalysis analysis = analyze_trace(model, {});
        (void)analyze_markdown(analysis, diagnose(analysis));
      } catch (const InputError&) {
      }
    }
    ++inputs;
  }
  EXPECT_GE(inputs, 1);
}

}  // namespace fuzz_regression_test
}  // namespace
}  // namespace ferret
