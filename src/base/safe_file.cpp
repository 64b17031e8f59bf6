#include "base/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace ferret {

namespace {

std::runtime_error failure(const std::string& path, const char* doing, int error) {
  return std::runtime_error(path + ": cannot " + doing + ": " + std::strerror(error));
}

// The umask without changing it (umask(2) would, for a moment, for every thread).
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  return 022;
}

}  // namespace

void refuse_if_an_input(const std::string& output, const std::vector<std::string>& inputs) {
  struct stat out {};
  if (output == "-" || ::stat(output.c_str(), &out) != 0) return;  // nothing there yet: no input
  for (const std::string& input : inputs) {
    struct stat in {};
    if (input != "-" && ::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw std::runtime_error(output + ": is the input " + input +
                               " (the same file); writing it would destroy what is read: choose another output");
  }
}

SafeFile::SafeFile(std::string path, const std::vector<std::string>& inputs) : path_(std::move(path)) {
  refuse_if_an_input(path_, inputs);
  const std::size_t slash = path_.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path_.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  if (base.empty() || base == "." || base == "..") throw std::runtime_error(path_ + ": not a file name");
  temp_ = dir + "." + base + ".ferret-XXXXXX";
  fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);  // O_CREAT | O_EXCL, mode 0600
  if (fd_ < 0) throw failure(path_, "create a file beside it", errno);
}

SafeFile::~SafeFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void SafeFile::write(std::string_view bytes) {
  if (fd_ < 0) throw std::logic_error("SafeFile::write after commit");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw failure(path_, "write", n < 0 ? errno : ENOSPC);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void SafeFile::commit() {
  if (committed_) return;
  if (::fchmod(fd_, 0644 & ~current_umask()) != 0) throw failure(path_, "set the mode of", errno);
  if (::fsync(fd_) != 0) throw failure(path_, "write (fsync)", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw failure(path_, "write (close)", errno);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) throw failure(path_, "replace", errno);
  committed_ = true;
}

void write_file_safely(const std::string& path, std::string_view bytes, const std::vector<std::string>& inputs) {
  SafeFile file(path, inputs);
  file.write(bytes);
  file.commit();
}

}  // namespace ferret
