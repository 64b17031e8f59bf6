// The baseline store: every recorded run with all its samples, in SQLite
// (.ferret/history.db by default). One file, no server, safe to keep in a CI cache.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/run_record.h"

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
  // For reading commands: a missing file is most likely a wrong path, so it is not created.
  static HistoryStore open_existing(const std::string& path);
  ~HistoryStore();
  HistoryStore(HistoryStore&&) noexcept;
  HistoryStore& operator=(HistoryStore&&) noexcept;

  // Stores the run (samples included) in one transaction; returns its id.
  std::int64_t record(const RunRecord& run);

  // Runs, newest first; `label` filters exactly when not empty; limit 0 = all.
  std::vector<RunRecord> list(const std::string& label = "", std::size_t limit = 0, bool with_samples = false) const;

  // A run by reference: "12" or "#12" (id), "LABEL" (the newest run with that label),
  // "LABEL~N" (the Nth run before the newest with that label). With samples.
  std::optional<RunRecord> find(const std::string& ref) const;

  const std::string& path() const { return path_; }

 private:
  HistoryStore(std::string path, sqlite3* db);
  std::string path_;
  sqlite3* db_ = nullptr;
};

// .ferret/history.db under the current directory.
std::string default_history_path();

}  // namespace ferret
