// The environment fingerprint: the git state read from .git files alone (loose refs, packed-refs,
// detached HEAD, worktrees, the index for the dirty flag), the variables, and which differences
// count. Repositories are written by hand as plain files; blob ids in the comments were computed
// with `printf 'hello\n' | git hash-object --stdin` and checked against the git documentation's
// object format ("blob <size>\0<content>" hashed with SHA-1).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "benchmark/environment.h"
#include "test_util.h"
#include "version.h"

namespace ferret {
namespace {
namespace environment_test {

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";
constexpr const char* kOther = "fedcba9876543210fedcba9876543210fedcba98";
// Blob ids (git hash-object): "hello\n", "a\n", "b\n".
constexpr const char* kHelloBlob = "ce013625030ba8dba906f756967f9e9ca394464a";
constexpr const char* kABlob = "78981922613b2afb6025042ff6bd878ac1994e85";
constexpr const char* kBBlob = "61780798228d17af2d34fce4cfbdf35556832472";

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

std::string fresh_dir(const std::string& name) {
  const std::string dir = test::temp_path(name);
  made_dirs().push_back(dir);
  std::system(("rm -rf '" + dir + "'").c_str());
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

void mkdirs(const std::string& path) { std::system(("mkdir -p '" + path + "'").c_str()); }

void put(const std::string& path, const std::string& text) {
  mkdirs(path.substr(0, path.find_last_of('/')));
  test::write_file(path, text);
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}
std::string be16(std::uint16_t v) { return {static_cast<char>(v >> 8), static_cast<char>(v)}; }

std::string hex_bytes(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

// One index entry's fixed part (gitformat-index: 10 32-bit stat fields, the object id, 16-bit
// flags). The stat data is all zero, so ferret must hash the file to decide.
std::string entry_head(const std::string& blob, std::uint32_t size, std::size_t name_length, int stage = 0) {
  std::string e;
  for (int i = 0; i < 6; ++i) e += be32(0);  // ctime, mtime (s, ns), dev, ino
  e += be32(0100644);                        // mode: regular file
  e += be32(0) + be32(0);                    // uid, gid
  e += be32(size);
  e += hex_bytes(blob);
  e += be16(static_cast<std::uint16_t>((stage << 12) | std::min<std::size_t>(name_length, 0xFFF)));
  return e;
}

// Version 2: the path, then 1 to 8 NULs so the entry is a multiple of 8 bytes long.
std::string index_v2(const std::vector<std::tuple<std::string, std::string, std::uint32_t, int>>& entries) {
  std::string out = "DIRC" + be32(2) + be32(static_cast<std::uint32_t>(entries.size()));
  for (const auto& [path, blob, size, stage] : entries) {
    std::string e = entry_head(blob, size, path.size(), stage) + path;
    e += std::string(8 - e.size() % 8, '\0');  // 62 + len bytes, padded with at least one NUL
    out += e;
  }
  return out + std::string(20, '\0');  // trailing checksum (not checked)
}

// Version 4: the path is prefix-compressed against the previous one (a varint count of bytes to
// drop, then the new suffix and one NUL), with no padding.
std::string index_v4(const std::vector<std::tuple<std::string, std::string, std::uint32_t, unsigned>>& entries) {
  std::string out = "DIRC" + be32(4) + be32(static_cast<std::uint32_t>(entries.size()));
  std::string previous;
  for (const auto& [path, blob, size, strip] : entries) {
    const std::string kept = previous.substr(0, previous.size() - strip);
    out += entry_head(blob, size, path.size()) + static_cast<char>(strip) + path.substr(kept.size()) + '\0';
    previous = path;
  }
  return out + std::string(20, '\0');
}

TEST(GitState, LooseRefOfTheCurrentBranch) {
  const std::string repo = fresh_dir("git-loose");
  put(repo + "/.git/HEAD", "ref: refs/heads/main\n");
  put(repo + "/.git/refs/heads/main", std::string(kCommit) + "\n");
  mkdirs(repo + "/src/deep");
  for (const std::string& dir : {repo, repo + "/src/deep"}) {  // found from a subdirectory too
    const GitState git = read_git_state(dir);
    EXPECT_EQ(git.commit, kCommit) << dir;
    EXPECT_EQ(git.branch, "main") << dir;
    EXPECT_EQ(git.dirty, "no") << dir;  // no index: nothing tracked can differ
  }
}

TEST(GitState, PackedRefsWhenNoLooseFile) {
  const std::string repo = fresh_dir("git-packed");
  put(repo + "/.git/HEAD", "ref: refs/heads/dev\n");
  mkdirs(repo + "/.git/refs/heads");
  put(repo + "/.git/packed-refs", std::string("# pack-refs with: peeled fully-peeled sorted \n") + kOther +
                                      " refs/heads/devel\n" + kCommit + " refs/heads/dev\n" + kOther +
                                      " refs/tags/v1\n^" + kOther + "\n");
  const GitState git = read_git_state(repo);
  EXPECT_EQ(git.commit, kCommit);  // refs/heads/dev, not the devel line before it
  EXPECT_EQ(git.branch, "dev");
}

TEST(GitState, LooseRefWinsOverPackedRefs) {
  const std::string repo = fresh_dir("git-both");
  put(repo + "/.git/HEAD", "ref: refs/heads/main\n");
  put(repo + "/.git/refs/heads/main", std::string(kCommit) + "\n");
  put(repo + "/.git/packed-refs", std::string(kOther) + " refs/heads/main\n");  // stale
  EXPECT_EQ(read_git_state(repo).commit, kCommit);
}

TEST(GitState, DetachedHeadAndUnbornBranch) {
  const std::string repo = fresh_dir("git-detached");
  put(repo + "/.git/HEAD", std::string(kCommit) + "\n");
  GitState git = read_git_state(repo);
  EXPECT_EQ(git.commit, kCommit);
  EXPECT_EQ(git.branch, "");
  put(repo + "/.git/HEAD", "ref: refs/heads/main\n");  // `git init`, nothing committed
  git = read_git_state(repo);
  EXPECT_EQ(git.commit, "");
  EXPECT_EQ(git.branch, "main");
}

TEST(GitState, WorktreeThroughItsGitFile) {
  const std::string root = fresh_dir("git-worktree");
  put(root + "/main/.git/packed-refs", std::string(kCommit) + " refs/heads/feature\n");
  put(root + "/main/.git/worktrees/wt/HEAD", "ref: refs/heads/feature\n");
  put(root + "/main/.git/worktrees/wt/commondir", "../..\n");
  put(root + "/wt/.git", "gitdir: ../main/.git/worktrees/wt\n");
  const GitState git = read_git_state(root + "/wt");
  EXPECT_EQ(git.commit, kCommit);
  EXPECT_EQ(git.branch, "feature");
}

TEST(GitState, OutsideARepositoryEverythingIsEmpty) {
  const std::string dir = fresh_dir("git-none");
  for (std::string up = dir; up.size() > 1; up = up.substr(0, up.find_last_of('/'))) {
    struct stat st {};
    if (::stat((up + "/.git").c_str(), &st) == 0) GTEST_SKIP() << "the temporary directory is inside a repository";
    if (up.find('/', 1) == std::string::npos) break;
  }
  const GitState git = read_git_state(dir);
  EXPECT_EQ(git.commit, "");
  EXPECT_EQ(git.branch, "");
  EXPECT_EQ(git.dirty, "");
}

TEST(GitState, DirtyFromTheIndexVersion2) {
  const std::string repo = fresh_dir("git-dirty2");
  put(repo + "/.git/HEAD", "ref: refs/heads/main\n");
  put(repo + "/.git/refs/heads/main", std::string(kCommit) + "\n");
  put(repo + "/hello.txt", "hello\n");
  put(repo + "/sub/a.txt", "a\n");
  put(repo + "/.git/index", index_v2({{"hello.txt", kHelloBlob, 6, 0}, {"sub/a.txt", kABlob, 2, 0}}));
  EXPECT_EQ(read_git_state(repo).dirty, "no");  // stat data differs, the contents hash the same
  put(repo + "/untracked.txt", "x");
  EXPECT_EQ(read_git_state(repo).dirty, "no");  // untracked files do not count (as git describe --dirty)
  put(repo + "/hello.txt", "hellO\n");          // same size, other content
  EXPECT_EQ(read_git_state(repo).dirty, "yes");
  put(repo + "/hello.txt", "hello\n");
  EXPECT_EQ(read_git_state(repo).dirty, "no");
  std::remove((repo + "/sub/a.txt").c_str());  // a deleted tracked file
  EXPECT_EQ(read_git_state(repo).dirty, "yes");
  put(repo + "/sub/a.txt", "a\n");
  put(repo + "/.git/index", index_v2({{"hello.txt", kHelloBlob, 6, 0}, {"sub/a.txt", kABlob, 2, 1}}));
  EXPECT_EQ(read_git_state(repo).dirty, "yes");  // stage 1: an unmerged path
}

TEST(GitState, DirtyFromTheIndexVersion4) {
  const std::string repo = fresh_dir("git-dirty4");
  put(repo + "/.git/HEAD", std::string(kCommit) + "\n");
  put(repo + "/dir/a.txt", "a\n");
  put(repo + "/dir/b.txt", "b\n");
  // "dir/b.txt" after "dir/a.txt": drop 5 bytes ("a.txt"), add "b.txt".
  put(repo + "/.git/index", index_v4({{"dir/a.txt", kABlob, 2, 0}, {"dir/b.txt", kBBlob, 2, 5}}));
  EXPECT_EQ(read_git_state(repo).dirty, "no");
  put(repo + "/dir/b.txt", "c\n");
  EXPECT_EQ(read_git_state(repo).dirty, "yes");
}

// With git installed, a real repository checks the reader against git itself.
TEST(GitState, AgreesWithGit) {
  if (std::system("git --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "git is not installed";
  const std::string repo = fresh_dir("git-real");
  const std::string git = "git -C '" + repo + "' -c user.name=t -c user.email=t@t -c commit.gpgsign=false ";
  put(repo + "/a.txt", "a\n");
  put(repo + "/dir/b.txt", "b\n");
  ASSERT_EQ(std::system((git + "init -q -b trunk && " + git + "add . && " + git + "commit -q -m one").c_str()), 0);
  const std::string head_file = repo + "/head.out";
  std::system((git + "rev-parse HEAD >'" + head_file + "'").c_str());
  std::string head = test::read_file(head_file);
  std::remove(head_file.c_str());
  while (!head.empty() && (head.back() == '\n' || head.back() == '\r')) head.pop_back();
  GitState state = read_git_state(repo);
  EXPECT_EQ(state.commit, head);
  EXPECT_EQ(state.branch, "trunk");
  EXPECT_EQ(state.dirty, "no");
  put(repo + "/a.txt", "changed\n");
  EXPECT_EQ(read_git_state(repo).dirty, "yes");
  ASSERT_EQ(std::system((git + "commit -q -am two && " + git + "pack-refs --all").c_str()), 0);
  state = read_git_state(repo);  // the branch is now only in packed-refs
  EXPECT_EQ(state.commit.size(), 40u);
  EXPECT_NE(state.commit, head);
  EXPECT_EQ(state.dirty, "no");
}

TEST(Environment, CapturesTheMachineVersionsAndVariables) {
  ::setenv("OMP_NUM_THREADS", "3", 1);
  ::unsetenv("MKL_NUM_THREADS");
  ::setenv("LD_PRELOAD", "", 1);  // set but empty is recorded; unset is absent
  const Environment env = capture_environment("2.5.1", "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(env.get("OMP_NUM_THREADS"), "3");
  bool has_mkl = false, has_preload = false;
  for (const auto& [key, value] : env.fields) {
    has_mkl = has_mkl || key == "MKL_NUM_THREADS";
    has_preload = has_preload || key == "LD_PRELOAD";
  }
  EXPECT_FALSE(has_mkl);
  EXPECT_TRUE(has_preload);
  EXPECT_EQ(env.get("torch_version"), "2.5.1");
  EXPECT_EQ(env.get("device"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(env.get("ferret_version"), FERRET_VERSION);
  EXPECT_EQ(env.get("logical_cores"), std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_FALSE(env.get("os").empty());
  EXPECT_FALSE(env.get("memory_total").empty());
  if (test::read_file("/proc/cpuinfo").find("model name") != std::string::npos) {
    EXPECT_FALSE(env.get("cpu_model").empty());
  }
  ::unsetenv("OMP_NUM_THREADS");
  ::unsetenv("LD_PRELOAD");
}

TEST(Environment, CapturesTheGitStateOfTheCurrentDirectory) {
  const std::string repo = fresh_dir("git-cwd");
  put(repo + "/.git/HEAD", "ref: refs/heads/main\n");
  put(repo + "/.git/refs/heads/main", std::string(kCommit) + "\n");
  char previous[4096];
  ASSERT_NE(::getcwd(previous, sizeof previous), nullptr);
  ASSERT_EQ(::chdir(repo.c_str()), 0);
  const Environment env = capture_environment();
  ASSERT_EQ(::chdir(previous), 0);
  EXPECT_EQ(env.get("git_commit"), kCommit);
  EXPECT_EQ(env.get("git_branch"), "main");
  EXPECT_EQ(env.get("git_dirty"), "no");
  EXPECT_EQ(env.get("torch_version"), "");  // unknown: absent
}

TEST(Environment, DifferencesIgnoreTheCommitAndHost) {
  Environment a, b;
  a.fields = {{"cpu_model", "EPYC"},
              {"hostname", "ci-1"},
              {"git_commit", kCommit},
              {"git_dirty", "no"},
              {"git_branch", "main"},
              {"OMP_NUM_THREADS", "4"},
              {"LD_PRELOAD", "/usr/lib/libjemalloc.so"}};
  b.fields = {{"cpu_model", "EPYC"},
              {"hostname", "ci-2"},
              {"git_commit", kOther},
              {"git_dirty", "yes"},
              {"git_branch", "pr"},
              {"OMP_NUM_THREADS", "4"},
              {"LD_PRELOAD", "/usr/lib/libjemalloc.so"}};
  EXPECT_TRUE(environment_differences(a, b).empty());
  b.fields[5].second = "8";
  b.fields.erase(b.fields.begin() + 6);
  b.fields.emplace_back("torch_version", "2.5.1");
  const std::vector<std::string> diff = environment_differences(a, b);
  EXPECT_EQ(diff, (std::vector<std::string>{"OMP_NUM_THREADS: 4 -> 8", "LD_PRELOAD: /usr/lib/libjemalloc.so -> (unset)",
                                            "torch_version: (unset) -> 2.5.1"}));
}

}  // namespace environment_test
}  // namespace
}  // namespace ferret
