// Every file ferret writes goes through SafeFile: the bytes go to a new temporary file beside the
// target (created with O_EXCL, so nothing planted there is followed), are flushed to disk, and the
// file is renamed over the target only once it is complete. So an output is never one of the
// command's inputs (refused, after resolving links, by device and inode), never written through a
// link someone else left where it goes, and never left half-written: a failure, an exception or a
// signal leaves the old file (or none) and no temporary behind.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ferret {

class SafeFile {
 public:
  // Throws std::runtime_error naming `path` when it is one of `inputs` (the same file, however
  // reached) or its temporary file cannot be made.
  explicit SafeFile(std::string path, const std::vector<std::string>& inputs = {});
  SafeFile(const SafeFile&) = delete;
  SafeFile& operator=(const SafeFile&) = delete;
  ~SafeFile();  // not committed: the temporary file is removed

  const std::string& path() const { return path_; }
  // Every byte, or std::runtime_error naming the file and the reason (a full disk, a quota).
  void write(std::string_view bytes);
  // fsync, close, rename over the target (mode 0644 less the umask). Throws std::runtime_error.
  void commit();

 private:
  std::string path_;
  std::string temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// Throws std::runtime_error when `output` names the same file as one of `inputs` (after links).
void refuse_if_an_input(const std::string& output, const std::vector<std::string>& inputs);

// Writes `bytes` to `path` whole through a SafeFile.
void write_file_safely(const std::string& path, std::string_view bytes, const std::vector<std::string>& inputs = {});

}  // namespace ferret
