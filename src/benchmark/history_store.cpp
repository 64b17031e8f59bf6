// The baseline store in SQLite. Schema (version 1, PRAGMA user_version; docs/HISTORY.md):
//
//   runs(id INTEGER PRIMARY KEY AUTOINCREMENT, label, created_at, kind, subject, unit, warmup,
//        batch_size, settings JSON, metrics JSON, environment JSON)
//   samples(run_id -> runs.id, idx, value)  -- every sample, in order; NULL stores a NaN, -0 reads back as 0
//
// Concurrency: the file is in WAL mode (readers never block the writer), every write is one
// BEGIN IMMEDIATE transaction (the write lock is taken up front, so two writers queue instead of
// deadlocking on a lock upgrade), and a busy timeout makes a writer wait for the other rather than
// fail. WAL needs the -wal and -shm files beside the database and a local file system (not NFS).
#include "benchmark/history_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "version.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

constexpr int kSchemaVersion = 1;
// PRAGMA application_id marks the file as ferret's ("FRRT"), so `file` and ferret can tell it from
// another program's SQLite database.
constexpr std::int32_t kApplicationId = 0x46525254;
// A writer waits this long for another (a CI job recording at the same time) before giving up.
constexpr int kBusyTimeoutMs = 30000;

const char* const kCreateSchema = R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  label TEXT NOT NULL,
  created_at TEXT NOT NULL,
  kind TEXT NOT NULL,
  subject TEXT NOT NULL,
  unit TEXT NOT NULL,
  warmup INTEGER NOT NULL,
  batch_size REAL NOT NULL,
  settings TEXT NOT NULL,
  metrics TEXT NOT NULL,
  environment TEXT NOT NULL
);
CREATE INDEX runs_by_label ON runs(label, id);
CREATE TABLE samples (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  value REAL,
  PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;
)sql";

const char* const kRunColumns =
    "id, label, created_at, kind, subject, unit, warmup, batch_size, settings, metrics, environment";

// An error message that names the database and says what went wrong in the user's terms.
std::string describe(sqlite3* db, int rc, const std::string& path, const std::string& doing) {
  const char* detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_NOTADB: return fmt::format("{} is not a ferret history database (not an SQLite file)", path);
    case SQLITE_CORRUPT:
      return fmt::format("the history database {} is corrupt ({}): move it aside to start a new one", path, detail);
    case SQLITE_READONLY:
      return fmt::format("cannot write the history database {}: it is read-only ({})", path, detail);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return fmt::format("the history database {} stayed locked by another process for {} s while {}", path,
                         kBusyTimeoutMs / 1000, doing);
    case SQLITE_FULL: return fmt::format("the disk is full: cannot write the history database {}", path);
    case SQLITE_CANTOPEN: return fmt::format("cannot open the history database {} ({})", path, detail);
    default: return fmt::format("history database {}: {} failed: {}", path, doing, detail);
  }
}

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) : db_(db), path_(path) {
    const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) throw StoreError(describe(db, rc, path, "preparing a query"));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind(int i, const std::string& text) {
    check(sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
  }
  void bind(int i, std::int64_t v) { check(sqlite3_bind_int64(stmt_, i, v)); }
  void bind(int i, double v) { check(std::isnan(v) ? sqlite3_bind_null(stmt_, i) : sqlite3_bind_double(stmt_, i, v)); }

  // True while there is a row.
  bool step(const char* doing) {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(describe(db_, rc, path_, doing));
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  std::int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  int type(int col) const { return sqlite3_column_type(stmt_, col); }
  double real(int col) const {
    return sqlite3_column_type(stmt_, col) == SQLITE_NULL ? stats::kNaN : sqlite3_column_double(stmt_, col);
  }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw StoreError(describe(db_, rc, path_, "binding a value"));
  }
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const char* sql, const std::string& path, const char* doing) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &message);
  sqlite3_free(message);
  if (rc != SQLITE_OK) throw StoreError(describe(db, rc, path, doing));
}

std::int64_t pragma_int(sqlite3* db, const char* name, const std::string& path) {
  Statement s(db, std::string("PRAGMA ") + name, path);
  return s.step("reading the schema version") ? s.int64(0) : 0;
}

// Rolls back unless committed: a failed record leaves no partial run behind.
class Transaction {
 public:
  // BEGIN IMMEDIATE takes the write lock at once (writers); a plain BEGIN reads one snapshot.
  Transaction(sqlite3* db, const std::string& path, const char* doing, const char* begin = "BEGIN IMMEDIATE")
      : db_(db), path_(path) {
    exec(db_, begin, path_, doing);
  }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit(const char* doing) {
    exec(db_, "COMMIT", path_, doing);
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool done_ = false;
};

struct Header {
  std::int64_t application_id = 0;
  std::int64_t version = 0;  // PRAGMA user_version: 0 for a new file
  std::int64_t objects = 0;  // tables, indexes, ... already in the file
};

Header read_header(sqlite3* db, const std::string& path) {
  Header h;
  h.application_id = pragma_int(db, "application_id", path);
  h.version = pragma_int(db, "user_version", path);
  Statement objects(db, "SELECT count(*) FROM sqlite_master", path);
  if (objects.step("reading the schema")) h.objects = objects.int64(0);
  return h;
}

// Refuses another program's database and a schema newer than this ferret's.
void check_header(const Header& h, const std::string& path) {
  if (h.application_id != 0 && h.application_id != kApplicationId)
    throw StoreError(fmt::format("{} is another program's SQLite database (application_id {:#x}), not a ferret history",
                                 path, h.application_id));
  if (h.version > kSchemaVersion)
    throw StoreError(
        fmt::format("the history database {} has schema version {}, newer than this ferret ({}) reads "
                    "({}): upgrade ferret",
                    path, h.version, FERRET_VERSION, kSchemaVersion));
  if (h.application_id == 0 && h.objects > 0)
    throw StoreError(
        fmt::format("{} is an SQLite database without ferret's history schema; give another path "
                    "with --db",
                    path));
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// mkdir -p of the directory that will hold the database.
void make_directories(const std::string& dir, const std::string& path) {
  if (dir.empty()) return;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    const std::string part = dir.substr(0, pos);
    if (part.empty()) continue;
    if (::mkdir(part.c_str(), 0777) != 0 && errno != EEXIST)
      throw StoreError(fmt::format("cannot create the directory {} for the history database {}: {}", part, path,
                                   std::strerror(errno)));
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw StoreError(fmt::format("cannot create the history database {}: {} is not a directory", path, dir));
}

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string fields_json(const Fields& fields) {
  json j = json::object();
  for (const auto& [k, v] : fields) j[k] = v;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string metrics_json(const std::vector<std::pair<std::string, double>>& metrics) {
  json j = json::object();
  for (const auto& [k, v] : metrics) j[k] = v;  // NaN and infinities are written as null
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A run row that cannot be read as ferret wrote it (edited by hand, or by another program).
class MalformedRun : public StoreError {
 public:
  using StoreError::StoreError;
};

const char* type_name(int sqlite_type) {
  switch (sqlite_type) {
    case SQLITE_INTEGER: return "an integer";
    case SQLITE_FLOAT: return "a real";
    case SQLITE_TEXT: return "text";
    case SQLITE_BLOB: return "a blob";
    default: return "NULL";
  }
}

json parse_object(const std::string& text, const std::string& path, std::int64_t id, const char* column) {
  // ferret writes flat objects; a database edited to nest deeply would overflow the stack later.
  constexpr std::size_t kMaxDepth = 32;
  json j = json_nesting_depth(text, kMaxDepth) > kMaxDepth ? json() : json::parse(text, nullptr, false);
  if (!j.is_object())
    throw MalformedRun(
        fmt::format("history database {}: run #{} has a malformed {} column (not a JSON object)", path, id, column));
  return j;
}

Fields parse_fields(const std::string& text, const std::string& path, std::int64_t id, const char* column) {
  Fields fields;
  const json object = parse_object(text, path, id, column);
  for (const auto& [k, v] : object.items()) fields.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
  return fields;
}

// SQLite stores whatever a hand edit puts in a column; reading text or NULL as a number would
// silently give 0, so each column's storage class is checked against what ferret writes.
void expect_column_type(const Statement& s, int col, bool numeric, const std::string& path, std::int64_t id,
                        const char* column) {
  const int type = s.type(col);
  const bool ok = numeric ? (type == SQLITE_INTEGER || type == SQLITE_FLOAT) : type == SQLITE_TEXT;
  if (!ok)
    throw MalformedRun(fmt::format("history database {}: run #{} has {} in its {} column, not {}", path, id,
                                   type_name(type), column, numeric ? "a number" : "text"));
}

RunRecord read_run(const Statement& s, const std::string& path) {
  RunRecord r;
  r.id = s.int64(0);
  static constexpr const char* kTextColumns[] = {"label", "created_at", "kind", "subject", "unit"};
  for (int col = 1; col <= 5; ++col) expect_column_type(s, col, false, path, r.id, kTextColumns[col - 1]);
  expect_column_type(s, 6, true, path, r.id, "warmup");
  expect_column_type(s, 7, true, path, r.id, "batch_size");
  for (int col = 8; col <= 10; ++col)
    expect_column_type(s, col, false, path, r.id, col == 8 ? "settings" : col == 9 ? "metrics" : "environment");
  r.label = s.text(1);
  r.created_at = s.text(2);
  r.kind = s.text(3);
  r.subject = s.text(4);
  r.unit = s.text(5);
  r.warmup = static_cast<std::size_t>(std::max<std::int64_t>(0, s.int64(6)));
  r.batch_size = s.real(7);
  r.settings = parse_fields(s.text(8), path, r.id, "settings");
  const json metrics = parse_object(s.text(9), path, r.id, "metrics");
  for (const auto& [k, v] : metrics.items()) r.metrics.emplace_back(k, v.is_number() ? v.get<double>() : stats::kNaN);
  r.environment.fields = parse_fields(s.text(10), path, r.id, "environment");
  return r;
}

// A sample stored as text or a blob is skipped and named in `skipped` (NULL is a stored NaN).
void load_samples(sqlite3* db, const std::string& path, RunRecord& run, std::vector<std::string>& skipped) {
  Statement s(db, "SELECT idx, value FROM samples WHERE run_id = ?1 ORDER BY idx", path);
  s.bind(1, run.id);
  while (s.step("reading samples")) {
    const int type = s.type(1);
    if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
      skipped.push_back(fmt::format("history database {}: run #{} sample {} is {}, not a number: skipped", path, run.id,
                                    s.int64(0), type_name(type)));
      continue;
    }
    run.samples.push_back(s.real(1));
  }
}

// "12" / "#12" -> 12; anything else -> nullopt.
std::optional<std::int64_t> parse_id(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  std::int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

HistoryStore::HistoryStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}

HistoryStore::~HistoryStore() {
  if (db_) sqlite3_close_v2(db_);
}

HistoryStore::HistoryStore(HistoryStore&& other) noexcept
    : path_(std::move(other.path_)), db_(std::exchange(other.db_, nullptr)), skipped_(std::move(other.skipped_)) {}

HistoryStore& HistoryStore::operator=(HistoryStore&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    path_ = std::move(other.path_);
    db_ = std::exchange(other.db_, nullptr);
    skipped_ = std::move(other.skipped_);
  }
  return *this;
}

HistoryStore HistoryStore::open_existing(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw StoreError(
        fmt::format("no history database at {}: record runs with `ferret bench MODEL --record --label NAME`, "
                    "or name the database with --db",
                    path));
  // SQLite would happily turn an empty file into a database; a reading command leaves it as it is.
  if (S_ISREG(st.st_mode) && st.st_size == 0)
    throw StoreError(
        fmt::format("{} is empty, not a ferret history database; `ferret bench MODEL --record --db {}` creates "
                    "one there, or name another database with --db",
                    path, path));
  return open(path);
}

HistoryStore HistoryStore::open(const std::string& path) {
  if (path.empty()) throw StoreError("no history database path given");
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) throw StoreError(fmt::format("{} is a directory, not a history database", path));
  const std::string dir = directory_of(path);
  if (!exists) {
    make_directories(dir, path);
    const std::string dir_or_cwd = dir.empty() ? "." : dir;
    if (::access(dir_or_cwd.c_str(), W_OK) != 0)
      throw StoreError(
          fmt::format("cannot create the history database {}: the directory {} is not writable", path, dir_or_cwd));
  }

  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  HistoryStore store(path, raw);  // closes the handle on every path out of here
  if (rc != SQLITE_OK) throw StoreError(describe(raw, rc, path, "opening"));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);

  // The first read is where SQLite notices a file that is not a database. One read transaction,
  // so a schema another process commits meanwhile is seen whole or not at all.
  Header header;
  {
    Transaction read(raw, path, "reading the schema", "BEGIN");
    header = read_header(raw, path);
    read.commit("reading the schema");
  }
  check_header(header, path);

  const bool read_only = sqlite3_db_readonly(raw, "main") == 1;
  if (!read_only) {
    // WAL is a property of the file: set once, it stays. It fails harmlessly on a file system
    // without shared memory, leaving the rollback journal (still safe, with more waiting).
    sqlite3_exec(raw, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
    // With WAL, NORMAL loses at most the last transactions on power loss, never consistency.
    exec(raw, "PRAGMA synchronous=NORMAL", path, "configuring");
  }
  exec(raw, "PRAGMA foreign_keys=ON", path, "configuring");

  if (header.version == 0) {
    if (read_only) throw StoreError(fmt::format("the history database {} is read-only and holds no history yet", path));
    // Two processes may create the schema at once: the second finds it made, under the lock.
    Transaction create(raw, path, "creating the schema", "BEGIN IMMEDIATE");
    header = read_header(raw, path);
    check_header(header, path);
    if (header.version == 0) {
      exec(raw, kCreateSchema, path, "creating the schema");
      exec(raw, fmt::format("PRAGMA application_id={}", kApplicationId).c_str(), path, "creating the schema");
      exec(raw, fmt::format("PRAGMA user_version={}", kSchemaVersion).c_str(), path, "creating the schema");
    }
    create.commit("creating the schema");
  }
  return store;
}

std::int64_t HistoryStore::record(const RunRecord& run) {
  if (sqlite3_db_readonly(db_, "main") == 1)
    throw StoreError(fmt::format("cannot record into the history database {}: it is read-only", path_));
  Transaction tx(db_, path_, "recording a run");
  Statement insert(db_,
                   "INSERT INTO runs (label, created_at, kind, subject, unit, warmup, batch_size, settings, metrics, "
                   "environment) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                   path_);
  insert.bind(1, run.label);
  insert.bind(2, run.created_at.empty() ? now_utc() : run.created_at);
  insert.bind(3, run.kind);
  insert.bind(4, run.subject);
  insert.bind(5, run.unit);
  insert.bind(6, static_cast<std::int64_t>(run.warmup));
  insert.bind(7, std::isfinite(run.batch_size) ? run.batch_size : 1.0);
  insert.bind(8, fields_json(run.settings));
  insert.bind(9, metrics_json(run.metrics));
  insert.bind(10, fields_json(run.environment.fields));
  insert.step("recording a run");
  const std::int64_t id = sqlite3_last_insert_rowid(db_);

  Statement sample(db_, "INSERT INTO samples (run_id, idx, value) VALUES (?1, ?2, ?3)", path_);
  for (std::size_t i = 0; i < run.samples.size(); ++i) {
    sample.bind(1, id);
    sample.bind(2, static_cast<std::int64_t>(i));
    sample.bind(3, run.samples[i]);
    sample.step("recording samples");
    sample.reset();
  }
  tx.commit("recording a run");
  return id;
}

std::vector<RunRecord> HistoryStore::list(const std::string& label, std::size_t limit, bool with_samples) const {
  std::string sql = fmt::format("SELECT {} FROM runs", kRunColumns);
  if (!label.empty()) sql += " WHERE label = ?1";
  sql += " ORDER BY id DESC LIMIT ?2";
  std::vector<RunRecord> runs;
  {
    Statement s(db_, sql, path_);
    if (!label.empty()) s.bind(1, label);
    s.bind(2, limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
    while (s.step("listing runs")) {
      try {
        runs.push_back(read_run(s, path_));
      } catch (const MalformedRun& e) {
        skipped_.push_back(std::string(e.what()) + ": skipped");
      }
    }
  }
  if (with_samples)
    for (RunRecord& run : runs) load_samples(db_, path_, run, skipped_);
  return runs;
}

std::optional<RunRecord> HistoryStore::find(const std::string& ref) const {
  auto by_label = [this](const std::string& label, std::int64_t back) -> std::optional<RunRecord> {
    Statement s(db_,
                fmt::format("SELECT {} FROM runs WHERE label = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2", kRunColumns),
                path_);
    s.bind(1, label);
    s.bind(2, back);
    if (!s.step("finding a run")) return std::nullopt;
    return read_run(s, path_);
  };
  auto by_id = [this](std::int64_t id) -> std::optional<RunRecord> {
    Statement s(db_, fmt::format("SELECT {} FROM runs WHERE id = ?1", kRunColumns), path_);
    s.bind(1, id);
    if (!s.step("finding a run")) return std::nullopt;
    return read_run(s, path_);
  };

  std::optional<RunRecord> run;
  if (ref.empty()) return std::nullopt;
  if (ref[0] == '#') {
    if (const auto id = parse_id(std::string_view(ref).substr(1))) run = by_id(*id);
  } else {
    // A number is an id; a label that is only digits is still found when no run has that id.
    if (const auto id = parse_id(ref)) run = by_id(*id);
    if (!run) run = by_label(ref, 0);  // an exact label wins over the LABEL~N reading
    const std::size_t tilde = ref.rfind('~');
    if (!run && tilde != std::string::npos && tilde > 0) {
      if (const auto back = parse_id(std::string_view(ref).substr(tilde + 1)))
        run = by_label(ref.substr(0, tilde), *back);
    }
  }
  if (run) load_samples(db_, path_, *run, skipped_);
  return run;
}

std::string default_history_path() { return ".ferret/history.db"; }

}  // namespace ferret
