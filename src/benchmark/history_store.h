// The baseline store: every recorded run with all its samples, in SQLite
// (.ferret/history.db by default). One file, no server, safe to keep in a CI cache.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "benchmark/run_record.h"

struct sqlite3;

namespace ferret {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class HistoryStore {
 public:
  // Opens (creating the file, its directory and the schema when needed). Throws StoreError
  // naming the path on failure (not a database, read-only, newer schema).
  static HistoryStore open(const std::string& path);
  // For reading commands: a missing file is most likely a wrong path, so it is not created, and an
  // empty file is refused rather than given a schema.
  static HistoryStore open_existing(const std::string& path);
  ~HistoryStore();
  HistoryStore(HistoryStore&&) noexcept;
  HistoryStore& operator=(HistoryStore&&) noexcept;

  // Stores the run (samples included) in one transaction; returns its id.
  std::int64_t record(const RunRecord& run);

  // Runs, newest first; `label` filters exactly when not empty; limit 0 = all. A run row that is
  // not as ferret writes it (a column of the wrong type, settings that are not a JSON object) is
  // left out and named in skipped(); so is a sample stored as text.
  std::vector<RunRecord> list(const std::string& label = "", std::size_t limit = 0, bool with_samples = false) const;

  // A run by reference: "12" or "#12" (id), "LABEL" (the newest run with that label),
  // "LABEL~N" (the Nth run before the newest with that label). With samples. A malformed run row
  // throws StoreError naming it (it cannot be compared); a sample stored as text is skipped().
  std::optional<RunRecord> find(const std::string& ref) const;

  // What list() and find() left out so far, one message per row, naming the run and the problem.
  const std::vector<std::string>& skipped() const { return skipped_; }

  const std::string& path() const { return path_; }

 private:
  HistoryStore(std::string path, sqlite3* db);
  std::string path_;
  sqlite3* db_ = nullptr;
  mutable std::vector<std::string> skipped_;
};

// .ferret/history.db under the current directory.
std::string default_history_path();

}  // namespace ferret
