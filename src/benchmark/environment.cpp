#include "benchmark/environment.h"
#include "base/text.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

#include "version.h"

namespace ferret {

std::string Environment::get(const std::string& key) const {
  for (const auto& [k, v] : fields)
    if (k == key) return v;
  return "";
}

namespace {

// Variables that change how fast the same model runs: thread pools (OpenMP, MKL, OpenBLAS, the
// Intel OpenMP runtime), PyTorch's CUDA allocator and CPU kernel dispatch, oneDNN's ISA cap, TF32
// and blocking launches, which GPUs are visible, and the allocator (LD_PRELOAD of jemalloc or
// tcmalloc, their options, glibc malloc tunables).
constexpr const char* kVariables[] = {
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "TORCH_NUM_THREADS",
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "KMP_AFFINITY",
    "KMP_BLOCKTIME",
    "ATEN_CPU_CAPABILITY",
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "NVIDIA_TF32_OVERRIDE",
    "CUBLAS_WORKSPACE_CONFIG",
    "LD_PRELOAD",
    "MALLOC_CONF",
    "TCMALLOC_RELEASE_RATE",
    "GLIBC_TUNABLES",
};

// Keys that never make two runs incomparable. The commit (and its branch and dirty flag) is what a
// comparison is usually about; the hostname differs between identical machines of one CI pool,
// whose hardware the other keys already describe.
const std::set<std::string> kIgnoredKeys = {"git_commit", "git_branch", "git_dirty", "hostname"};

std::string trimmed(std::string_view s) { return std::string(trim(s)); }

bool read_whole_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

std::string read_trimmed(const std::string& path) {
  std::string text;
  return read_whole_file(path, text) ? trimmed(text) : std::string();
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// ---- Machine -----------------------------------------------------------------------------------

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, fallback;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trimmed(std::string_view(line).substr(0, colon));
    const std::string value = trimmed(std::string_view(line).substr(colon + 1));
    if (key == "model name" && !value.empty()) return value;                                                // x86
    if ((key == "Hardware" || key == "Model" || key == "cpu model") && fallback.empty()) fallback = value;  // ARM, MIPS
  }
  return fallback;
}

std::string memory_total() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return "";
  const double bytes = static_cast<double>(pages) * static_cast<double>(page_size);
  // Rounded: MemTotal moves by a few MiB between kernels on the same hardware.
  const double gib = bytes / double(1ull << 30);
  if (gib >= 1) return fmt::format("{:.0f} GiB", gib);
  return fmt::format("{:.0f} MiB", bytes / double(1ull << 20));
}

std::string os_name() {
  struct utsname u {};
  if (::uname(&u) != 0) return "";
  return fmt::format("{} {} {}", u.sysname, u.release, u.machine);
}

std::string host_name() {
  struct utsname u {};
  return ::uname(&u) == 0 ? std::string(u.nodename) : std::string();
}

std::string libc_version() {
#if defined(__GLIBC__)
  return std::string("glibc ") + gnu_get_libc_version();
#else
  return "";
#endif
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023" ->
// "535.104.05" (the open kernel module says "Open Kernel Module" in the same place).
std::string nvidia_driver() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  const std::size_t module = line.find("Kernel Module");
  if (module != std::string::npos) {
    std::istringstream rest(line.substr(module + std::strlen("Kernel Module")));
    std::string version;
    if (rest >> version) return version;
  }
  const std::size_t colon = line.find(':');
  return trimmed(colon == std::string::npos ? line : line.substr(colon + 1));
}

// ---- Git ---------------------------------------------------------------------------------------

// SHA-1 (FIPS 180-4), enough to hash a blob the way git does: "blob <size>\0<content>".
class Sha1 {
 public:
  void update(const unsigned char* data, std::size_t n) {
    total_ += n;
    while (n > 0) {
      const std::size_t take = std::min(n, sizeof(buffer_) - used_);
      std::memcpy(buffer_ + used_, data, take);
      used_ += take;
      data += take;
      n -= take;
      if (used_ == sizeof(buffer_)) {
        block(buffer_);
        used_ = 0;
      }
    }
  }
  void update(std::string_view s) { update(reinterpret_cast<const unsigned char*>(s.data()), s.size()); }

  std::array<unsigned char, 20> finish() {
    const std::uint64_t bits = total_ * 8;
    const unsigned char pad = 0x80;
    update(&pad, 1);
    const unsigned char zero = 0;
    while (used_ != 56) update(&zero, 1);
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(length, 8);
    std::array<unsigned char, 20> digest{};
    for (int i = 0; i < 20; ++i) digest[i] = static_cast<unsigned char>(h_[i / 4] >> (24 - 8 * (i % 4)));
    return digest;
  }

 private:
  static std::uint32_t rotl(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

  void block(const unsigned char* p) {
    std::uint32_t w[80];
    for (int i = 0; i < 16; ++i)
      w[i] = (std::uint32_t(p[4 * i]) << 24) | (std::uint32_t(p[4 * i + 1]) << 16) |
             (std::uint32_t(p[4 * i + 2]) << 8) | std::uint32_t(p[4 * i + 3]);
    for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
    for (int i = 0; i < 80; ++i) {
      std::uint32_t f, k;
      if (i < 20)
        f = (b & c) | (~b & d), k = 0x5A827999;
      else if (i < 40)
        f = b ^ c ^ d, k = 0x6ED9EBA1;
      else if (i < 60)
        f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
      else
        f = b ^ c ^ d, k = 0xCA62C1D6;
      const std::uint32_t t = rotl(a, 5) + f + e + k + w[i];
      e = d, d = c, c = rotl(b, 30), b = a, a = t;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e;
  }

  std::uint32_t h_[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  unsigned char buffer_[64] = {};
  std::size_t used_ = 0;
  std::uint64_t total_ = 0;
};

bool is_hex_id(std::string_view s) {
  if (s.size() != 40 && s.size() != 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string parent_dir(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string absolute(const std::string& dir) {
  if (!dir.empty() && dir[0] == '/') return dir;
  char buf[4096];
  if (::getcwd(buf, sizeof buf) == nullptr) return dir;
  const std::string cwd = buf;
  return dir.empty() || dir == "." ? cwd : cwd + "/" + dir;
}

struct GitDirs {
  std::string git_dir;     // HEAD, the index and per-worktree refs
  std::string common_dir;  // shared refs, packed-refs, config
  std::string work_tree;   // where the tracked files are
};

// Walks up from `dir` to the first ".git" (a directory, or a file "gitdir: PATH" as worktrees and
// submodules have).
bool find_git_dirs(const std::string& dir, GitDirs& out) {
  std::string cur = absolute(dir);
  while (cur.size() > 1 && cur.back() == '/') cur.pop_back();
  for (;;) {
    const std::string dot_git = (cur == "/" ? "" : cur) + "/.git";
    if (is_directory(dot_git)) {
      out.git_dir = dot_git;
    } else if (is_regular_file(dot_git)) {
      const std::string text = read_trimmed(dot_git);
      if (text.rfind("gitdir:", 0) == 0) {
        std::string target = trimmed(std::string_view(text).substr(7));
        if (!target.empty() && target[0] != '/') target = cur + "/" + target;
        if (is_directory(target)) out.git_dir = target;
      }
    }
    if (!out.git_dir.empty()) {
      out.work_tree = cur;
      std::string common = read_trimmed(out.git_dir + "/commondir");
      if (common.empty())
        common = out.git_dir;
      else if (common[0] != '/')
        common = out.git_dir + "/" + common;
      out.common_dir = common;
      return true;
    }
    if (cur == "/" || cur.empty()) return false;
    cur = parent_dir(cur);
  }
}

// The value of a ref: its loose file (per worktree, then shared), else its line in packed-refs.
std::string read_ref(const GitDirs& dirs, const std::string& name) {
  if (name.find("..") != std::string::npos) return "";
  for (const std::string* base : {&dirs.git_dir, &dirs.common_dir}) {
    const std::string path = *base + "/" + name;
    if (is_regular_file(path)) return read_trimmed(path);
  }
  std::ifstream packed(dirs.common_dir + "/packed-refs");
  std::string line;
  while (std::getline(packed, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '^') continue;  // header, peeled tag
    const std::size_t space = line.find(' ');
    if (space != std::string::npos && trimmed(std::string_view(line).substr(space + 1)) == name)
      return line.substr(0, space);
  }
  return "";
}

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);
}
std::uint16_t be16(const unsigned char* p) { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }

// The blob id git would give the file (or symlink) at `path`; false when it cannot be read.
bool blob_sha1(const std::string& path, bool symlink, std::array<unsigned char, 20>& digest) {
  Sha1 sha;
  if (symlink) {
    char target[4096];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target);
    if (n < 0) return false;
    sha.update(fmt::format("blob {}", n));
    sha.update(std::string_view("\0", 1));
    sha.update(std::string_view(target, static_cast<std::size_t>(n)));
  } else {
    struct stat st {};
    std::ifstream in(path, std::ios::binary);
    if (!in || ::stat(path.c_str(), &st) != 0) return false;
    sha.update(fmt::format("blob {}", static_cast<long long>(st.st_size)));
    sha.update(std::string_view("\0", 1));
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0)
      sha.update(reinterpret_cast<const unsigned char*>(buf), static_cast<std::size_t>(in.gcount()));
  }
  digest = sha.finish();
  return true;
}

// Index entries beyond this are not checked (a huge monorepo would make capture slow): dirty is
// then unknown.
constexpr std::uint32_t kMaxIndexEntries = 200000;

// "yes" / "no" / "" (unknown): does any tracked file differ from what the index records? Reads
// the index (versions 2, 3 and 4; git's Documentation/gitformat-index.txt) and, like git, trusts
// matching stat data (size and mtime) except when the file is as new as the index itself ("racy
// git"); otherwise it hashes the file as a blob.
std::string worktree_dirty(const GitDirs& dirs) {
  std::string index;
  if (!read_whole_file(dirs.git_dir + "/index", index)) return is_regular_file(dirs.git_dir + "/index") ? "" : "no";
  struct stat index_stat {};
  ::stat((dirs.git_dir + "/index").c_str(), &index_stat);
  std::string config;
  read_whole_file(dirs.common_dir + "/config", config);
  config.erase(
      std::remove_if(config.begin(), config.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
      config.end());
  std::transform(config.begin(), config.end(), config.begin(),
                 [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
  const std::size_t hash_size = config.find("objectformat=sha256") != std::string::npos ? 32 : 20;

  const auto* data = reinterpret_cast<const unsigned char*>(index.data());
  const std::size_t size = index.size();
  if (size < 12 || std::memcmp(data, "DIRC", 4) != 0) return "";
  const std::uint32_t version = be32(data + 4), count = be32(data + 8);
  if (version < 2 || version > 4 || count > kMaxIndexEntries) return "";

  std::size_t pos = 12;
  std::string path, previous;
  const std::size_t fixed = 40 + hash_size + 2;  // stat fields, object id, flags
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t start = pos;
    if (pos + fixed > size) return "";
    const std::uint32_t mtime_s = be32(data + pos + 8), mtime_ns = be32(data + pos + 12);
    const std::uint32_t mode = be32(data + pos + 24), file_size = be32(data + pos + 36);
    const unsigned char* id = data + pos + 40;
    const std::uint16_t flags = be16(data + pos + 40 + hash_size);
    pos += fixed;
    std::uint16_t extended = 0;
    if ((flags & 0x4000) && version >= 3) {
      if (pos + 2 > size) return "";
      extended = be16(data + pos);
      pos += 2;
    }
    if (version == 4) {
      // Prefix compression: strip N bytes from the previous path, then a NUL-terminated suffix.
      std::size_t strip = 0;
      if (pos >= size) return "";
      unsigned char c = data[pos++];
      strip = c & 127;
      while (c & 128) {
        if (pos >= size) return "";
        c = data[pos++];
        strip = ((strip + 1) << 7) | (c & 127);
      }
      const void* nul = std::memchr(data + pos, 0, size - pos);
      if (nul == nullptr || strip > previous.size()) return "";
      const std::size_t end = static_cast<const unsigned char*>(nul) - data;
      path = previous.substr(0, previous.size() - strip) + index.substr(pos, end - pos);
      pos = end + 1;
    } else {
      const void* nul = std::memchr(data + pos, 0, size - pos);
      if (nul == nullptr) return "";
      const std::size_t end = static_cast<const unsigned char*>(nul) - data;
      path = index.substr(pos, end - pos);
      pos = start + ((end - start + 8) & ~std::size_t{7});  // 1 to 8 NULs pad to a multiple of 8
    }
    previous = path;

    if (((flags >> 12) & 3) != 0) return "yes";  // unmerged (a conflict)
    if (extended & 0x4000) continue;             // skip-worktree (sparse checkout)
    if (extended & 0x2000) return "yes";         // intent-to-add: a new file not yet staged
    const std::uint32_t type = mode & 0170000;
    if (type == 0160000) continue;  // a submodule: its own repository
    const std::string file = dirs.work_tree + "/" + path;
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0) return errno == ENOENT || errno == ENOTDIR ? "yes" : "";
    const bool symlink = type == 0120000;
    if (symlink != S_ISLNK(st.st_mode)) return "yes";
    if (static_cast<std::uint32_t>(st.st_size) != file_size) return "yes";
    const bool same_mtime = static_cast<std::uint32_t>(st.st_mtim.tv_sec) == mtime_s &&
                            static_cast<std::uint32_t>(st.st_mtim.tv_nsec) == mtime_ns;
    const bool racy = st.st_mtim.tv_sec >= index_stat.st_mtim.tv_sec;
    if (same_mtime && !racy) continue;
    if (hash_size != 20) return "yes";  // no SHA-256 here: a changed mtime counts as a change
    std::array<unsigned char, 20> digest{};
    if (!blob_sha1(file, symlink, digest)) return "";
    if (std::memcmp(digest.data(), id, 20) != 0) return "yes";
  }
  return "no";
}

}  // namespace

GitState read_git_state(const std::string& dir) {
  GitState state;
  GitDirs dirs;
  if (!find_git_dirs(dir, dirs)) return state;
  std::string value = read_trimmed(dirs.git_dir + "/HEAD");
  for (int depth = 0; depth < 5 && value.rfind("ref:", 0) == 0; ++depth) {  // symbolic refs
    const std::string ref = trimmed(std::string_view(value).substr(4));
    if (depth == 0 && ref.rfind("refs/heads/", 0) == 0) state.branch = ref.substr(11);
    value = read_ref(dirs, ref);
  }
  if (is_hex_id(value)) state.commit = value;
  state.dirty = worktree_dirty(dirs);
  return state;
}

Environment capture_environment(const std::string& torch_version, const std::string& device) {
  Environment env;
  auto add = [&env](const std::string& key, const std::string& value) {
    if (!value.empty()) env.fields.emplace_back(key, value);
  };
  add("cpu_model", cpu_model());
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  add("logical_cores", cores > 0 ? std::to_string(cores) : std::string());
  add("memory_total", memory_total());
  add("cpu_governor", read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"));
  add("os", os_name());
  add("libc", libc_version());
  add("hostname", host_name());
  add("device", device);
  add("gpu_driver", nvidia_driver());
  add("torch_version", torch_version);
  add("ferret_version", FERRET_VERSION);
  const GitState git = read_git_state(".");
  add("git_commit", git.commit);
  add("git_branch", git.branch);
  add("git_dirty", git.dirty);
  for (const char* name : kVariables) {
    const char* value = std::getenv(name);
    if (value != nullptr) env.fields.emplace_back(name, value);  // set but empty is still recorded
  }
  return env;
}

std::vector<std::string> environment_differences(const Environment& a, const Environment& b) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : a.fields) keys.push_back(key);
  for (const auto& [key, value] : b.fields)
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  auto lookup = [](const Environment& env, const std::string& key) -> const std::string* {
    for (const auto& [k, v] : env.fields)
      if (k == key) return &v;
    return nullptr;
  };
  std::vector<std::string> out;
  for (const std::string& key : keys) {
    if (kIgnoredKeys.count(key)) continue;
    const std::string* va = lookup(a, key);
    const std::string* vb = lookup(b, key);
    if (va && vb && *va == *vb) continue;
    if (!va && !vb) continue;
    auto shown = [](const std::string* v) {
      return !v ? std::string("(unset)") : v->empty() ? std::string("\"\"") : *v;
    };
    out.push_back(fmt::format("{}: {} -> {}", key, shown(va), shown(vb)));
  }
  return out;
}

}  // namespace ferret
