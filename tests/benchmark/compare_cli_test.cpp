// `ferret history` and `ferret compare` on a database seeded here with HistoryStore::record.
//
// The runs (times in seconds; uniform draws from a fixed-seed std::mt19937_64, whose output the
// C++ standard fixes, mapped to [lo, hi) by our own formula so they are the same everywhere):
//   #1 main   A: 200 draws, uniform on [9.6 ms, 10.4 ms]  (IQR/median ~ 0.4/10 = 4%: not noisy)
//   #2 main   C: 200 independent draws from A's distribution (another seed)
//   #3 main   B: A with every sample multiplied by 1.2, a planted +20% shift. The type-7 median is
//             linear, so median(B) = 1.2 median(A) and the relative change is 0.2 up to rounding.
//             B's range [11.52, 12.48] ms lies wholly above A's and C's: every pair is ordered, so
//             the Mann-Whitney z is about (200*200/2 - 0.5) / sqrt(200*200*401/12) = 17.3.
//   #4 pr|x*y 3 samples 9, 10, 11 ms, batch 8: median 10 ms, throughput 8 / 0.010 = 800 items/s,
//             p90 (type 7: h = 0.9 * 2 = 1.8) = 10 + 0.8 * 1 = 10.8 ms. Few samples.
//   #5 noisy  11 samples 5, 6, ..., 15 ms: median 10, q1 7.5, q3 12.5 (h = 2.5 and 7.5), IQR/median
//             = 5/10 = 50% > 10%: noisy.
// A and C differ only in git_commit (ignored); B has OMP_NUM_THREADS 8 where A has 4.
// A against C is a comparison under the null hypothesis: "not significant" is the expected
// outcome (a 95% event for any seed; the seeds are 1 and 2, not chosen to make it pass).
#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "benchmark/history_store.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace compare_cli_test {

using nlohmann::json;
using test::run_ferret;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::vector<double> uniform_samples(std::uint64_t seed, std::size_t n, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53);
  return out;
}

RunRecord make_run(const std::string& label, std::vector<double> samples, const std::string& commit,
                   const std::string& omp_threads) {
  RunRecord r;
  r.label = label;
  r.subject = "/models/resnet50.pt";
  r.samples = std::move(samples);
  r.batch_size = 8;
  r.settings = {{"device", "cpu"}, {"threads", "4"}};
  r.environment.fields = {{"cpu_model", "Test CPU"}, {"git_commit", commit}, {"OMP_NUM_THREADS", omp_threads}};
  return r;
}

class CompareCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new std::string(test::temp_path("compare-cli") + "/history.db");
    std::system(("rm -rf '" + test::temp_path("compare-cli") + "'").c_str());
    HistoryStore store = HistoryStore::open(*db_);
    const std::vector<double> a = uniform_samples(1, 200, 0.0096, 0.0104);
    std::vector<double> b = a;
    for (double& x : b) x *= 1.2;
    store.record(make_run("main", a, "c1", "4"));
    store.record(make_run("main", uniform_samples(2, 200, 0.0096, 0.0104), "c2", "4"));
    store.record(make_run("main", b, "c3", "8"));
    store.record(make_run("pr|x*y", {0.009, 0.010, 0.011}, "c4", "4"));
    std::vector<double> noisy;
    for (int ms = 5; ms <= 15; ++ms) noisy.push_back(ms * 1e-3);
    store.record(make_run("noisy", noisy, "c5", "4"));
  }
  static void TearDownTestSuite() {
    std::system(("rm -rf '" + test::temp_path("compare-cli") + "'").c_str());
    delete db_;
  }
  static std::string db() { return " --db '" + *db_ + "'"; }
  static std::string* db_;
};
std::string* CompareCli::db_ = nullptr;

// Every line fits 80 columns (counting UTF-8 characters, not bytes: "α" is one column).
void expect_fits(const std::string& text, std::size_t width) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::size_t columns = 0;
    for (unsigned char c : line) columns += (c & 0xC0) != 0x80;
    EXPECT_LE(columns, width) << line;
  }
}

TEST_F(CompareCli, PlantedSlowdownIsSignificantWithinItsInterval) {
  const auto r = run_ferret("compare main~2 main --json" + db());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "ferret.compare/1");
  EXPECT_EQ(j["a"]["id"], 1);
  EXPECT_EQ(j["b"]["id"], 3);
  EXPECT_EQ(j["a"]["n"], 200);
  const double change = j["change"]["relative"].get<double>();
  EXPECT_NEAR(change, 0.2, 1e-12);  // the planted shift
  EXPECT_LE(j["change"]["ci_low"].get<double>(), change);
  EXPECT_GE(j["change"]["ci_high"].get<double>(), change);
  EXPECT_LE(j["change"]["ci_low"].get<double>(), 0.2);
  EXPECT_GE(j["change"]["ci_high"].get<double>(), 0.2);
  EXPECT_EQ(j["change"]["confidence"], 0.95);
  // The Hodges-Lehmann shift: differences of U(11.52, 12.48) and U(9.6, 10.4) centre on 2 ms.
  EXPECT_NEAR(j["change"]["relative_hl_shift"].get<double>(), 0.2, 0.01);
  EXPECT_TRUE(j["significant"].get<bool>());
  EXPECT_EQ(j["direction"], "slower");
  EXPECT_LT(j["mann_whitney"]["p_value"].get<double>(), 1e-50);  // z ~ 17.3 (header)
  EXPECT_EQ(j["mann_whitney"]["u_a"], 0.0);                      // no a above any b
  EXPECT_EQ(j["mann_whitney"]["method"], "normal");              // n > 20
  EXPECT_TRUE(j["gate"].is_null());
  ASSERT_EQ(j["environment_differences"].size(), 1u);
  EXPECT_EQ(j["environment_differences"][0], "OMP_NUM_THREADS: 4 -> 8");
  EXPECT_TRUE(contains(j["verdict"].get<std::string>(), "B is 20.0% slower (95% CI ")) << j["verdict"];
}

TEST_F(CompareCli, TextVerdictAndEnvironmentWarning) {
  const auto r = run_ferret("compare main~2 main" + db());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Verdict: B is 20.0% slower (95% CI ")) << r.out;
  EXPECT_TRUE(contains(r.out, "significant at α=0.05")) << r.out;
  EXPECT_TRUE(contains(r.out, "environments differ")) << r.out;
  EXPECT_TRUE(contains(r.out, "OMP_NUM_THREADS: 4 -> 8")) << r.out;
  EXPECT_FALSE(contains(r.out, "git_commit")) << r.out;  // the commit never counts as a difference
  expect_fits(r.out, 80);
  // --width 60: the two run columns narrow, the verdict wraps.
  const auto narrow = run_ferret("compare main~2 main --width 60" + db());
  ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
  expect_fits(narrow.out, 60);
  EXPECT_TRUE(contains(test::unwrapped(narrow.out), "Verdict: B is 20.0% slower (95% CI ")) << narrow.out;
}

TEST_F(CompareCli, GateFailsOnlyBeyondTheAllowedSlowdown) {
  // The change is 20% (planted): beyond 5 and 19, within 21 and 30.
  EXPECT_EQ(run_ferret("compare main~2 main --fail-if-slower 5" + db()).exit_code, 1);
  EXPECT_EQ(run_ferret("compare main~2 main --fail-if-slower 19" + db()).exit_code, 1);
  EXPECT_EQ(run_ferret("compare main~2 main --fail-if-slower 21" + db()).exit_code, 0);
  EXPECT_EQ(run_ferret("compare main~2 main --fail-if-slower 30" + db()).exit_code, 0);
  // B -> A is a significant speed-up: never a failure.
  EXPECT_EQ(run_ferret("compare main main~2 --fail-if-slower 0" + db()).exit_code, 0);
  const auto r = run_ferret("compare '#1' '#3' --fail-if-slower 5 --json" + db());
  EXPECT_EQ(r.exit_code, 1);
  const json j = json::parse(r.out);
  EXPECT_EQ(j["gate"]["fail_if_slower_pct"], 5.0);
  EXPECT_TRUE(j["gate"]["failed"].get<bool>());
  const auto text = run_ferret("compare 1 3 --fail-if-slower 5" + db());
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_TRUE(contains(text.out, "FAILED")) << text.out;
}

TEST_F(CompareCli, SameDistributionIsNotSignificant) {
  const auto r = run_ferret("compare main~2 main~1 --fail-if-slower 1 --json" + db());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["b"]["id"], 2);
  EXPECT_FALSE(j["significant"].get<bool>());
  EXPECT_EQ(j["direction"], "same");
  EXPECT_GE(j["mann_whitney"]["p_value"].get<double>(), 0.05);
  EXPECT_TRUE(j["environment_differences"].empty());  // only the commit differs
  EXPECT_FALSE(j["gate"]["failed"].get<bool>());
  const auto text = run_ferret("compare main~2 main~1" + db());
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_TRUE(contains(text.out, "Verdict: no significant difference")) << text.out;
  EXPECT_FALSE(contains(text.out, "Warnings")) << text.out;
}

TEST_F(CompareCli, WarnsAboutNoiseAndFewSamples) {
  const auto r = run_ferret("compare 'pr|x*y' noisy" + db());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "A has only 3 samples")) << r.out;
  EXPECT_TRUE(contains(r.out, "B is noisy: IQR/median is 50.0%")) << r.out;  // 5 ms / 10 ms (header)
  expect_fits(r.out, 80);
  const json j = json::parse(run_ferret("compare 'pr|x*y' noisy --json" + db()).out);
  EXPECT_NEAR(j["a"]["median"].get<double>(), 0.010, 1e-15);
  EXPECT_NEAR(j["a"]["p90"].get<double>(), 0.0108, 1e-15);
  EXPECT_NEAR(j["a"]["throughput"].get<double>(), 800.0, 1e-9);
  EXPECT_NEAR(j["b"]["relative_iqr"].get<double>(), 0.5, 1e-12);
  EXPECT_TRUE(j["b"]["noisy"].get<bool>());
  EXPECT_EQ(j["warnings"].size(), 2u);
}

TEST_F(CompareCli, MarkdownEscapesLabels) {
  const auto r = run_ferret("compare 'pr|x*y' main --md" + db());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "pr\\|x\\*y")) << r.out;
  EXPECT_FALSE(contains(r.out, "pr|x*y")) << r.out;
  EXPECT_TRUE(contains(r.out, "| median |")) << r.out;
}

TEST_F(CompareCli, BadReferencesAndDatabasesExitTwoNamingThem) {
  auto r = run_ferret("compare main nope" + db());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "\"nope\"")) << r.err;
  EXPECT_TRUE(contains(r.err, *db_)) << r.err;
  EXPECT_TRUE(contains(r.err, "main")) << r.err;  // the labels it does hold
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(run_ferret("compare main~9 main" + db()).exit_code, 2);
  EXPECT_EQ(run_ferret("compare '#99' main --fail-if-slower 5" + db()).exit_code, 2);

  const std::string missing = test::temp_path("no-such-dir") + "/history.db";
  r = run_ferret("compare 1 2 --db '" + missing + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, missing)) << r.err;
  struct stat st {};
  EXPECT_NE(::stat(missing.c_str(), &st), 0);  // reading commands create nothing

  const std::string broken = test::temp_path("broken.db");
  test::write_file(broken, std::string(4096, 'x'));
  r = run_ferret("compare 1 2 --db '" + broken + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, broken)) << r.err;
  r = run_ferret("history --db '" + broken + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, broken)) << r.err;
  std::remove(broken.c_str());

  EXPECT_EQ(run_ferret("compare 1 2 --json --md" + db()).exit_code, 2);
  EXPECT_EQ(run_ferret("compare 1" + db()).exit_code, 2);
  EXPECT_EQ(run_ferret("compare 1 2 --fail-if-slower abc" + db()).exit_code, 2);
}

TEST_F(CompareCli, HistoryListsNewestFirstWithTrend) {
  const auto r = run_ferret("history" + db());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::size_t run5 = r.out.find("   #5 "), run1 = r.out.find("   #1 ");
  ASSERT_NE(run5, std::string::npos) << r.out;
  ASSERT_NE(run1, std::string::npos) << r.out;
  EXPECT_LT(run5, run1);
  EXPECT_TRUE(contains(r.out, "10.00 ms 10.80 ms    800.0")) << r.out;  // #4: median, p90, items/s
  EXPECT_TRUE(contains(r.out, "noisy: IQR/median above 10%")) << r.out;
  EXPECT_TRUE(contains(r.out, "#3 ")) << r.out;
  EXPECT_TRUE(contains(r.out, "step)")) << r.out;
  expect_fits(r.out, 80);

  const json j = json::parse(run_ferret("history --json" + db()).out);
  EXPECT_EQ(j["schema"], "ferret.history/1");
  std::vector<int> ids;
  for (const json& run : j["runs"]) ids.push_back(run["id"].get<int>());
  EXPECT_EQ(ids, (std::vector<int>{5, 4, 3, 2, 1}));
  EXPECT_NEAR(j["runs"][1]["throughput"].get<double>(), 800.0, 1e-9);
  EXPECT_TRUE(j["runs"][0]["noisy"].get<bool>());
  EXPECT_FALSE(j["runs"][4]["noisy"].get<bool>());
  const json* main_trend = nullptr;
  for (const json& t : j["trends"])
    if (t["label"] == "main") main_trend = &t;
  ASSERT_NE(main_trend, nullptr);
  const json& points = (*main_trend)["points"];
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0]["id"], 1);  // oldest first
  EXPECT_FALSE(points[0]["step"].get<bool>());
  EXPECT_FALSE(points[1]["step"].get<bool>());                         // C after A: same distribution
  EXPECT_TRUE(points[2]["step"].get<bool>());                          // B after C: the planted +20%
  EXPECT_NEAR(points[2]["relative_change"].get<double>(), 0.2, 0.03);  // against C, not A: near 20%
}

TEST_F(CompareCli, HistoryFiltersLimitsAndEscapes) {
  json j = json::parse(run_ferret("history --label main --json" + db()).out);
  EXPECT_EQ(j["runs"].size(), 3u);
  EXPECT_EQ(j["label"], "main");
  j = json::parse(run_ferret("history --limit 2 --json" + db()).out);
  EXPECT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][1]["id"], 4);
  const auto md = run_ferret("history --md" + db());
  EXPECT_EQ(md.exit_code, 0) << md.err;
  EXPECT_TRUE(contains(md.out, "pr\\|x\\*y")) << md.out;
  EXPECT_FALSE(contains(md.out, "pr|x*y")) << md.out;
  const auto none = run_ferret("history --label nothing-here" + db());
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_TRUE(contains(none.out, "No runs")) << none.out;
}

TEST_F(CompareCli, HistoryOfAMissingDatabaseNamesIt) {
  const std::string missing = test::temp_path("absent") + "/history.db";
  const auto r = run_ferret("history --db '" + missing + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, missing)) << r.err;
}

TEST(HistoryCli, EmptyFileIsRefusedAndLeftEmpty) {
  const std::string dir = test::temp_path("history-empty");
  std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "' && : > '" + dir + "/history.db'").c_str());
  const std::string path = dir + "/history.db";
  for (const char* command : {"history", "compare 1 2"}) {
    const auto r = run_ferret(std::string(command) + " --db '" + path + "'");
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_TRUE(contains(r.err, path + " is empty, not a ferret history database")) << r.err;
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 0) << command << " wrote into the empty file";
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}

// Runs the statement on the database with SQLite itself, as a hand edit or another tool would.
void corrupt(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

TEST(HistoryCli, MalformedRowsAreSkippedAndNamed) {
  // Four runs of samples 1, 2, 3 ms (median 2 ms). Run #2's settings become garbage, run #3's
  // batch_size text, and one sample of run #4 text: #2 and #3 are skipped and named, #4 keeps its
  // two numeric samples (1 and 3 ms: median 2 ms), #1 is intact.
  const std::string dir = test::temp_path("history-malformed");
  std::system(("rm -rf '" + dir + "'").c_str());
  const std::string path = dir + "/history.db";
  {
    HistoryStore store = HistoryStore::open(path);
    for (int i = 0; i < 4; ++i) store.record(make_run("main", {0.001, 0.002, 0.003}, "c", "4"));
  }
  corrupt(path,
          "UPDATE runs SET settings = '{not json' WHERE id = 2;"
          "UPDATE runs SET batch_size = 'eight' WHERE id = 3;"
          "UPDATE samples SET value = 'fast' WHERE run_id = 4 AND idx = 1;");
  const auto r = run_ferret("history --json --db '" + path + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "run #2 has a malformed settings column (not a JSON object): skipped")) << r.err;
  EXPECT_TRUE(contains(r.err, "run #3 has text in its batch_size column, not a number: skipped")) << r.err;
  EXPECT_TRUE(contains(r.err, "run #4 sample 1 is text, not a number: skipped")) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["runs"].size(), 2u) << r.out;
  EXPECT_EQ(doc["runs"][0]["id"], 4);
  EXPECT_EQ(doc["runs"][0]["n"], 2);
  EXPECT_DOUBLE_EQ(doc["runs"][0]["median"].get<double>(), 0.002);
  EXPECT_EQ(doc["runs"][1]["id"], 1);
  EXPECT_EQ(doc["runs"][1]["n"], 3);
  // compare cannot use a malformed run, and says which; the sound ones still compare.
  const auto bad = run_ferret("compare 1 3 --db '" + path + "'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "run #3 has text in its batch_size column")) << bad.err;
  const auto good = run_ferret("compare 1 4 --json --db '" + path + "'");
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_TRUE(contains(good.err, "run #4 sample 1 is text")) << good.err;
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace compare_cli_test
}  // namespace
}  // namespace ferret
