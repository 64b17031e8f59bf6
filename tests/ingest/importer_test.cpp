// The importer seam: load_trace sniffs the input's first bytes and hands it to the surest
// importer. A test-only format (a CSV of spans) shows that a new format is one registration, that
// what every format shares (relations) runs after it, and that input no importer accepts gets an
// error naming the file and what each importer expects. Expected values are worked out by hand.
#include "ingest/importer.h"

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "gen/scenarios.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace importer_test {

constexpr const char* kCsvMagic = "ferret-spans-csv\n";

// name,ts_us,dur_us,pid,tid per line after the magic line; every span a CPU op.
void load_span_csv(ByteSource& source, const std::string&, const LoadOptions&, ModelBuilder& builder) {
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = source.read(buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  std::istringstream lines(text.substr(std::string_view(kCsvMagic).size()));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string name, ts, dur, pid, tid;
    std::getline(fields, name, ',');
    std::getline(fields, ts, ',');
    std::getline(fields, dur, ',');
    std::getline(fields, pid, ',');
    std::getline(fields, tid, ',');
    builder.append({EventKind::kCpuOp, 'X', "cpu_op", name, std::atoll(ts.c_str()) * 1000,
                    std::atoll(dur.c_str()) * 1000, std::atoi(pid.c_str()), std::atoi(tid.c_str()), kNoId, kNoId});
  }
  builder.info().trace_name = "spans from CSV";
}

// Registers the CSV importer for one test.
class SpanCsvImporter : public ::testing::Test {
 protected:
  void SetUp() override {
    register_importer({"span-csv", [](std::string_view head) { return head.starts_with(kCsvMagic) ? 100 : 0; },
                       "a first line \"ferret-spans-csv\"", load_span_csv});
  }
  void TearDown() override { unregister_importer("span-csv"); }
};

// An outer span 0..100 us and a span inside it 10..30 us, on one thread; a third on another.
constexpr const char* kCsv =
    "ferret-spans-csv\n"
    "outer,0,100,1,1\n"
    "inner,10,20,1,1\n"
    "other,5,5,1,2\n";

TEST_F(SpanCsvImporter, LoadTracePicksItBySniffAndBuildsRelations) {
  const std::string path = test::temp_path("spans.csv");
  test::write_file(path, kCsv);
  const TraceModel m = load_trace(path);
  EXPECT_EQ(m.check_invariants(), "");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.info.source, path);
  EXPECT_EQ(m.info.compression, "none");
  EXPECT_EQ(m.info.trace_name, "spans from CSV");
  EXPECT_EQ(m.name_of(1), "inner");
  EXPECT_EQ(m.ts_ns[1], 10000);
  EXPECT_EQ(m.end_ns(1), 30000);
  // Shared after every importer: CPU spans only is a CPU-only trace, and nesting is built.
  EXPECT_EQ(m.info.platform, Platform::kCpuOnly);
  ASSERT_TRUE(m.relations.built);
  EXPECT_EQ(m.relations.parent[1], 0u);        // inner inside outer
  EXPECT_EQ(m.relations.parent[2], kNoEvent);  // other thread
}

TEST_F(SpanCsvImporter, SniffsTheDecompressedBytes) {
  const std::string path = test::temp_path("spans.csv.gz");
  test::write_file(path, test::gzip_bytes(kCsv));
  const TraceModel m = load_trace(path);
  EXPECT_EQ(m.info.compression, "gzip");
  EXPECT_EQ(m.size(), 3u);
}

TEST_F(SpanCsvImporter, JsonStillGoesToTheKinetoImporter) {
  const TraceModel m = load_trace_text(test::trace({test::span("cpu_op", "aten::mm", 1, 1, 0, 10)}));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.name_of(0), "aten::mm");
}

TEST_F(SpanCsvImporter, InputNoImporterAcceptsIsAnErrorNamingTheFile) {
  const std::string path = test::temp_path("program.bin");
  test::write_file(path, std::string("\x7f"
                                     "ELF\x02\x01\x01",
                                     7));
  try {
    load_trace(path);
    FAIL() << "an ELF header loaded as a trace";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(path + ": byte 0: not a trace", 0), 0u) << message;
    EXPECT_NE(message.find("7f 45 4c 46 02 01 01"), std::string::npos) << message;  // "\x7fELF" in hex
    EXPECT_NE(message.find("kineto-json ("), std::string::npos) << message;
    EXPECT_NE(message.find("span-csv (a first line \"ferret-spans-csv\")"), std::string::npos) << message;
  }
}

TEST(Importer, TheSurestImporterWinsAndTiesGoToTheFirst) {
  register_importer({"json-guess", [](std::string_view head) { return head.starts_with("{") ? 50 : 0; }, "{",
                     [](ByteSource&, const std::string&, const LoadOptions&, ModelBuilder&) {}});
  // kineto-json answers 100 for a document naming "traceEvents" in its head, 50 for other JSON.
  EXPECT_EQ(pick_importer(R"({"traceEvents": [])", "t").name, "kineto-json");
  EXPECT_EQ(pick_importer(R"({"other": 1})", "t").name, "kineto-json");
  register_importer({"json-guess", [](std::string_view head) { return head.starts_with("{") ? 51 : 0; }, "{",
                     [](ByteSource&, const std::string&, const LoadOptions&, ModelBuilder&) {}});
  EXPECT_EQ(pick_importer(R"({"other": 1})", "t").name, "json-guess");  // replaced by name, now surer
  unregister_importer("json-guess");
  EXPECT_EQ(importers().size(), 1u);
}

TEST(Importer, KinetoSniff) {
  const Importer kineto = kineto_json_importer();
  EXPECT_EQ(kineto.sniff("\xEF\xBB\xBF  \n{\"schemaVersion\": 1, \"traceEvents\": ["), 100);
  EXPECT_EQ(kineto.sniff("[{\"ph\": \"X\"}"), 50);  // legacy autograd array
  EXPECT_EQ(kineto.sniff("// comment\n{"), 10);
  EXPECT_EQ(kineto.sniff(""), 1);  // its own message for an empty input
  EXPECT_EQ(kineto.sniff("GIF89a"), 0);
}

// Every generated scenario, loaded in small batches on two threads (many merges, labels and
// side rows across batch boundaries), gives a model with no broken invariant.
TEST(Importer, KinetoImporterBuildsConsistentModels) {
  LoadOptions options;
  options.threads = 2;
  options.limits.batch_bytes = 16 << 10;
  for (const std::string& scenario : scenario_names()) {
    const std::string path = test::temp_path("invariants-" + scenario + ".json");
    write_scenario({scenario, path, OutputCompression::kNone, 3, 1});
    const TraceModel m = load_trace(path, options);
    EXPECT_GT(m.size(), 100u) << scenario;
    EXPECT_EQ(m.check_invariants(), "") << scenario;
    std::filesystem::remove(path);
  }
  const TraceModel tiny = load_trace(std::string(FERRET_SOURCE_DIR) + "/tests/data/tiny-kineto2.json", options);
  EXPECT_EQ(tiny.check_invariants(), "");
}

}  // namespace importer_test
}  // namespace
}  // namespace ferret
