#include "test_util.h"

#include <algorithm>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace ferret::test {

std::string corpus_path(const std::string& name) {
  const std::string path = std::string(FERRET_SHARED_DIR) + "/corpus/" + name;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? path : std::string();
}

std::size_t longest_line(const std::string& text) {
  std::size_t longest = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    longest = std::max(longest, end - start);
    start = end + 1;
  }
  return longest;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string unwrapped(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out += text[i];
      continue;
    }
    out += ' ';
    while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
  }
  return out;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/ferret-test-" + std::to_string(::getpid()) + "-" + name;
}

std::string span(const char* cat, const std::string& name, int pid, int tid, double ts, double dur,
                 const std::string& args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, R"({"ph":"X","cat":"%s","name":"%s","pid":%d,"tid":%d,"ts":%.3f,"dur":%.3f%s%s%s})",
                cat, name.c_str(), pid, tid, ts, dur, args.empty() ? "" : ",\"args\":{", args.c_str(),
                args.empty() ? "" : "}");
  return buf;
}

std::string corr(int c) { return "\"correlation\":" + std::to_string(c); }

std::string trace(const std::vector<std::string>& events) {
  std::string out = R"({"traceEvents":[)";
  for (std::size_t i = 0; i < events.size(); ++i) out += (i ? "," : "") + events[i];
  return out + "]}";
}

std::string gzip_bytes(const std::string& plain, int level) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, plain.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string gunzip(const std::string& compressed) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buffer[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&z);
  return out;
}

std::string zstd_bytes(const std::string& plain) {
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  const std::size_t n = ZSTD_compress(out.data(), out.size(), plain.data(), plain.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

namespace {

CommandResult run_ferret_line(const std::string& command, const std::string& stdin_file = "") {
  CommandResult r;
  const std::string out = temp_path("cmd.out"), err = temp_path("cmd.err");
  std::string cmd = command + " >" + out + " 2>" + err;
  if (!stdin_file.empty()) cmd += " <" + stdin_file;
  const int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

}  // namespace

CommandResult run_ferret(const std::string& args, const std::string& stdin_file) {
  return run_ferret_line(std::string(FERRET_BINARY) + " " + args, stdin_file);
}

CommandResult run_shell(const std::string& line) {
  std::string cmd = line;
  for (std::size_t at = cmd.find("{ferret}"); at != std::string::npos; at = cmd.find("{ferret}", at))
    cmd.replace(at, 8, FERRET_BINARY);
  const std::string script = temp_path("cmd.sh");
  write_file(script, cmd + "\n");
  CommandResult r = run_ferret_line("sh " + script);
  std::remove(script.c_str());
  return r;
}

std::string python_generated_dir(const std::string& script) {
  static std::map<std::string, std::string> made;
  const auto it = made.find(script);
  if (it != made.end()) return it->second;
  std::string name = script;
  for (char& c : name)
    if (c == '/' || c == '.') c = '-';
  const std::string dir = temp_path("generated-" + name);
  const CommandResult r =
      run_shell("/usr/bin/python3 '" + std::string(FERRET_SOURCE_DIR) + "/" + script + "' '" + dir + "'");
  return made[script] = r.exit_code == 0 ? dir : std::string();
}

}  // namespace ferret::test
