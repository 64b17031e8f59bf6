// Helpers shared by the tests: locating ../shared, reading files, running the CLI.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ingest/byte_source.h"

namespace ferret::test {

// Sanitizer builds: 10-20x slower, and ASan reserves terabytes of address space for its shadow
// memory, so address-space limits (ulimit -v) cannot apply there.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif
#else
inline constexpr bool kUnderSanitizer = false;
#endif

// Path of a corpus file, or "" when ../shared is absent.
std::string corpus_path(const std::string& name);

// Skips the current test loudly when the corpus is not present (e.g. on a user's machine).
#define FERRET_REQUIRE_CORPUS(path_var, name)                     \
  const std::string path_var = ::ferret::test::corpus_path(name); \
  if (path_var.empty()) GTEST_SKIP() << "SKIPPED: ../shared/corpus not present (" << name << ")"

std::string read_file(const std::string& path);
// A text report's wrapped sentences joined back: each newline and the indent after it become one space.
std::string unwrapped(const std::string& text);
// The longest line of a report, in bytes (its width when the text is ASCII).
std::size_t longest_line(const std::string& text);
void write_file(const std::string& path, const std::string& bytes);
std::string temp_path(const std::string& name);

// Hand-made trace events for tests: an 'X' span with the given category, name, pid, tid, ts and
// dur in microseconds and optional args (the text inside "args": {...}); "correlation": c; and a
// {"traceEvents": [...]} document of events.
std::string span(const char* cat, const std::string& name, int pid, int tid, double ts, double dur,
                 const std::string& args = "");
std::string corr(int c);
std::string trace(const std::vector<std::string>& events);

// One gzip member (zlib, level 6 unless given) and one zstd frame (level 3) of the given bytes.
std::string gzip_bytes(const std::string& plain, int level = 6);
std::string zstd_bytes(const std::string& plain);
// The bytes of one gzip member (zlib), for tests that read a sample as a second reader would.
std::string gunzip(const std::string& compressed);

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs the built ferret binary with the given argument string (shell-quoted by the caller).
CommandResult run_ferret(const std::string& args, const std::string& stdin_file = "");
// Runs a shell command line through sh -c, capturing its exit code, stdout and stderr. `{ferret}`
// in the line stands for the built binary (so a test can wrap it: ulimit, /usr/bin/time, prlimit).
CommandResult run_shell(const std::string& line);

// Runs `/usr/bin/python3 SCRIPT OUTDIR` once per test binary (SCRIPT relative to the source tree)
// and returns OUTDIR; "" when Debian's python3 is missing or the script failed.
std::string python_generated_dir(const std::string& script);

// A source that hands out at most `chunk` bytes per read: every read boundary falls somewhere
// new (inside strings, between a backslash and what it escapes, inside numbers and keys).
class DribbleSource final : public ByteSource {
 public:
  DribbleSource(std::string bytes, std::size_t chunk) : bytes_(std::move(bytes)), chunk_(chunk) {}
  std::size_t read(char* dst, std::size_t capacity) override {
    const std::size_t n = std::min({capacity, chunk_, bytes_.size() - pos_});
    std::copy_n(bytes_.data() + pos_, n, dst);
    pos_ += n;
    return n;
  }
  std::uint64_t consumed() const override { return pos_; }

 private:
  std::string bytes_;
  std::size_t chunk_;
  std::size_t pos_ = 0;
};

}  // namespace ferret::test
