// The baseline store: every field and every sample survives a round trip; references find the
// right run; several writers (sequential handles, concurrent processes) lose nothing; files that
// are not ferret's history, or from a newer ferret, are refused with their path in the message.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "benchmark/history_store.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace history_store_test {

// Every directory fresh_dir made, removed after the last test.
std::vector<std::string>& made_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
struct RemoveMadeDirs : ::testing::Environment {
  void TearDown() override {
    for (const std::string& dir : made_dirs()) std::system(("rm -rf '" + dir + "'").c_str());
  }
};
const ::testing::Environment* const kRemoveMadeDirs = ::testing::AddGlobalTestEnvironment(new RemoveMadeDirs);

// A fresh, empty directory for one test.
std::string fresh_dir(const std::string& name) {
  const std::string dir = test::temp_path(name);
  made_dirs().push_back(dir);
  std::system(("rm -rf '" + dir + "'").c_str());
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

RunRecord small_run(const std::string& label, std::vector<double> samples = {0.010, 0.011, 0.012}) {
  RunRecord r;
  r.label = label;
  r.subject = "model.pt";
  r.samples = std::move(samples);
  return r;
}

// Runs sqlite statements on a file directly, as another program would.
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

TEST(HistoryStore, RoundTripsEveryFieldAndTenThousandSamples) {
  const std::string path = fresh_dir("roundtrip") + "/history.db";
  RunRecord run;
  run.label = "main \"quoted\" ünïcode";
  run.created_at = "2026-12-02T15:40:00Z";
  run.kind = "bench";
  run.subject = "/models/resnet50.pt";
  run.unit = "s";
  run.warmup = 37;
  run.batch_size = 32;
  run.settings = {{"device", "cuda:0"}, {"threads", "8"}, {"inputs", "[1,3,224,224]"}, {"empty", ""}};
  run.metrics = {{"peak_rss_bytes", 123456789.0}, {"cuda_peak_allocated_bytes", 1.5e9}, {"unknown", stats::kNaN}};
  run.environment.fields = {{"cpu_model", "AMD EPYC 7763"}, {"OMP_NUM_THREADS", "4"}, {"LD_PRELOAD", ""}};
  // 10,000 samples whose bits must survive, with a subnormal, a whole number (SQLite stores it as an
  // integer), a huge value, NaN and infinity. (Negative zero reads back as +0: SQLite's REAL.)
  for (int i = 0; i < 10000; ++i) run.samples.push_back(0.01 + i * 1e-7 + 1.0 / (3.0 + i));
  run.samples[1] = std::numeric_limits<double>::denorm_min();
  run.samples[2] = 2.0;
  run.samples[3] = 1e300;
  run.samples[4] = stats::kNaN;  // stored as NULL, read back as NaN
  run.samples[5] = std::numeric_limits<double>::infinity();

  std::int64_t id = 0;
  {
    HistoryStore store = HistoryStore::open(path);
    id = store.record(run);
    EXPECT_EQ(id, 1);
  }
  const HistoryStore store = HistoryStore::open(path);  // a new handle reads what the first wrote
  const std::optional<RunRecord> back = store.find(std::to_string(id));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->id, id);
  EXPECT_EQ(back->label, run.label);
  EXPECT_EQ(back->created_at, run.created_at);
  EXPECT_EQ(back->kind, run.kind);
  EXPECT_EQ(back->subject, run.subject);
  EXPECT_EQ(back->unit, run.unit);
  EXPECT_EQ(back->warmup, run.warmup);
  EXPECT_EQ(back->batch_size, run.batch_size);
  EXPECT_EQ(back->settings, run.settings);
  EXPECT_EQ(back->environment.fields, run.environment.fields);
  ASSERT_EQ(back->metrics.size(), 3u);
  EXPECT_EQ(back->metrics[0], run.metrics[0]);
  EXPECT_EQ(back->metrics[1], run.metrics[1]);
  EXPECT_EQ(back->metrics[2].first, "unknown");
  EXPECT_TRUE(std::isnan(back->metrics[2].second));
  ASSERT_EQ(back->samples.size(), 10000u);
  for (std::size_t i = 0; i < run.samples.size(); ++i) {
    if (std::isnan(run.samples[i])) {
      EXPECT_TRUE(std::isnan(back->samples[i])) << i;
    } else {
      EXPECT_EQ(std::memcmp(&back->samples[i], &run.samples[i], sizeof(double)), 0) << "sample " << i;
    }
  }

  // list() without samples carries everything else.
  const std::vector<RunRecord> listed = store.list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].samples.empty());
  EXPECT_EQ(listed[0].settings, run.settings);
  EXPECT_EQ(store.list("", 0, true)[0].samples.size(), 10000u);
}

TEST(HistoryStore, StampsTheTimeWhenTheRunHasNone) {
  HistoryStore store = HistoryStore::open(fresh_dir("stamp") + "/history.db");
  store.record(small_run("main"));
  const std::string stamp = store.find("main")->created_at;
  EXPECT_TRUE(std::regex_match(stamp, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"))) << stamp;
}

TEST(HistoryStore, FindsByIdLabelAndLabelTilde) {
  HistoryStore store = HistoryStore::open(fresh_dir("find") + "/history.db");
  EXPECT_EQ(store.record(small_run("main", {1})), 1);
  EXPECT_EQ(store.record(small_run("feature", {2})), 2);
  EXPECT_EQ(store.record(small_run("main", {3})), 3);
  EXPECT_EQ(store.record(small_run("main", {4})), 4);
  EXPECT_EQ(store.record(small_run("exp~1", {5})), 5);  // a label that looks like LABEL~N
  EXPECT_EQ(store.record(small_run("2024", {6})), 6);   // a label that looks like an id

  auto id_of = [&](const std::string& ref) -> std::int64_t {
    const std::optional<RunRecord> r = store.find(ref);
    return r ? r->id : -1;
  };
  EXPECT_EQ(id_of("2"), 2);
  EXPECT_EQ(id_of("#3"), 3);
  EXPECT_EQ(id_of("main"), 4);  // the newest with that label
  EXPECT_EQ(id_of("main~0"), 4);
  EXPECT_EQ(id_of("main~1"), 3);  // one before the newest
  EXPECT_EQ(id_of("main~2"), 1);
  EXPECT_EQ(id_of("main~3"), -1);  // only three runs
  EXPECT_EQ(id_of("feature"), 2);
  EXPECT_EQ(id_of("exp~1"), 5);   // the exact label wins over "exp", one back
  EXPECT_EQ(id_of("2024"), 6);    // no run #2024: the label
  EXPECT_EQ(id_of("#2024"), -1);  // "#" means an id, only
  EXPECT_EQ(id_of("#99"), -1);
  EXPECT_EQ(id_of("nope"), -1);
  EXPECT_EQ(id_of(""), -1);
  EXPECT_EQ(id_of("main~x"), -1);
  // find() loads the samples.
  EXPECT_EQ(store.find("main~1")->samples, std::vector<double>{3});
}

TEST(HistoryStore, ListsNewestFirstByLabelAndLimit) {
  HistoryStore store = HistoryStore::open(fresh_dir("list") + "/history.db");
  for (const char* label : {"a", "b", "a", "b", "a"}) store.record(small_run(label));
  std::vector<std::int64_t> ids;
  for (const RunRecord& r : store.list()) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{5, 4, 3, 2, 1}));
  ids.clear();
  for (const RunRecord& r : store.list("a", 2)) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{5, 3}));
  EXPECT_TRUE(store.list("zzz").empty());
}

TEST(HistoryStore, TwoStoresWriteTheSameFileInTurn) {
  const std::string path = fresh_dir("sequential") + "/history.db";
  HistoryStore first = HistoryStore::open(path);
  HistoryStore second = HistoryStore::open(path);  // both open at once, as two CLI calls can be
  EXPECT_EQ(first.record(small_run("one")), 1);
  EXPECT_EQ(second.record(small_run("two")), 2);
  EXPECT_EQ(first.record(small_run("one")), 3);
  EXPECT_EQ(first.list().size(), 3u);
  EXPECT_EQ(second.list().size(), 3u);
  HistoryStore moved = std::move(first);  // a moved store keeps working
  EXPECT_EQ(moved.record(small_run("three")), 4);
  EXPECT_EQ(HistoryStore::open(path).list().size(), 4u);
}

TEST(HistoryStore, CreatesItsDirectory) {
  const std::string path = fresh_dir("mkdir") + "/a/b/.ferret/history.db";
  HistoryStore store = HistoryStore::open(path);
  store.record(small_run("x"));
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
}

TEST(HistoryStore, NonDatabaseFileIsRefusedByName) {
  const std::string path = fresh_dir("notadb") + "/trace.json";
  std::string text;
  for (int i = 0; i < 200; ++i) text += "{\"traceEvents\": [ this is not an SQLite file ]}\n";
  test::write_file(path, text);
  try {
    HistoryStore::open(path);
    FAIL() << "opened a text file";
  } catch (const StoreError& e) {
    EXPECT_TRUE(contains(e.what(), path)) << e.what();
    EXPECT_TRUE(contains(e.what(), "not a ferret history database")) << e.what();
  }
  EXPECT_EQ(test::read_file(path), text);  // and left it alone
}

TEST(HistoryStore, AnotherProgramsDatabaseIsRefusedByName) {
  const std::string path = fresh_dir("otherdb") + "/app.db";
  raw_sql(path, "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('x');");
  try {
    HistoryStore::open(path);
    FAIL() << "opened another program's database";
  } catch (const StoreError& e) {
    EXPECT_TRUE(contains(e.what(), path)) << e.what();
  }
}

TEST(HistoryStore, NewerSchemaIsRefused) {
  const std::string path = fresh_dir("newer") + "/history.db";
  HistoryStore::open(path).record(small_run("x"));
  raw_sql(path, "PRAGMA user_version = 2;");
  try {
    HistoryStore::open(path);
    FAIL() << "opened a newer schema";
  } catch (const StoreError& e) {
    EXPECT_TRUE(contains(e.what(), path)) << e.what();
    EXPECT_TRUE(contains(e.what(), "newer")) << e.what();
  }
}

TEST(HistoryStore, UncreatableDirectoryIsNamed) {
  // A regular file where a directory should be: mkdir fails even for root (chmod would not).
  const std::string blocker = fresh_dir("blocked") + "/file";
  test::write_file(blocker, "x");
  const std::string path = blocker + "/sub/history.db";
  try {
    HistoryStore::open(path);
    FAIL() << "created a database under a file";
  } catch (const StoreError& e) {
    EXPECT_TRUE(contains(e.what(), path)) << e.what();
  }
  try {
    HistoryStore::open(fresh_dir("isdir"));
    FAIL() << "opened a directory";
  } catch (const StoreError& e) {
    EXPECT_TRUE(contains(e.what(), "directory")) << e.what();
  }
}

TEST(HistoryStore, UsesWriteAheadLogging) {
  const std::string path = fresh_dir("wal") + "/history.db";
  HistoryStore::open(path).record(small_run("x"));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST(HistoryStore, TwoProcessesRecordingAtOnceLoseNothing) {
  const std::string path = fresh_dir("concurrent") + "/history.db";  // neither process finds a schema
  constexpr int kRunsEach = 50;
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  pid_t children[2];
  for (int c = 0; c < 2; ++c) {
    children[c] = ::fork();
    ASSERT_GE(children[c], 0);
    if (children[c] == 0) {
      char go;
      ::close(start[1]);
      if (::read(start[0], &go, 1) != 1) ::_exit(3);  // both start when the parent closes the pipe
      try {
        HistoryStore store = HistoryStore::open(path);
        for (int i = 0; i < kRunsEach; ++i) {
          RunRecord r = small_run(c == 0 ? "first" : "second");
          r.samples.assign(200, 0.001 * (i + 1));
          store.record(r);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", c, e.what());
        ::_exit(1);
      }
      ::_exit(0);
    }
  }
  ::close(start[0]);
  const char go[2] = {'g', 'g'};
  ASSERT_EQ(::write(start[1], go, 2), 2);
  ::close(start[1]);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  const HistoryStore store = HistoryStore::open(path);
  const std::vector<RunRecord> runs = store.list("", 0, true);
  EXPECT_EQ(runs.size(), 2u * kRunsEach);
  EXPECT_EQ(store.list("first").size(), static_cast<std::size_t>(kRunsEach));
  EXPECT_EQ(store.list("second").size(), static_cast<std::size_t>(kRunsEach));
  for (const RunRecord& r : runs) EXPECT_EQ(r.samples.size(), 200u) << "run " << r.id;
}

}  // namespace history_store_test
}  // namespace
}  // namespace ferret
