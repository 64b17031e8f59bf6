// base/safe_file.h by hand: a committed file holds exactly the bytes with the usual mode; one not
// committed leaves nothing (not even its temporary); a link planted at the target is replaced, not
// written through; an output that is an input (by name, through a link, or a hard link) is refused.
#include "base/safe_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "test_util.h"

namespace ferret {
namespace {
namespace safe_file_test {

namespace fs = std::filesystem;

struct Folder {
  fs::path path = fs::path(test::temp_path("safe-file-dir"));
  Folder() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Folder() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  std::size_t entries() const { return static_cast<std::size_t>(std::distance(fs::directory_iterator(path), {})); }
};

TEST(SafeFile, ACommittedFileHoldsTheBytesAndAnUncommittedOneLeavesNothing) {
  Folder dir;
  {
    SafeFile f(dir / "out.json");
    f.write("{\"a\": ");
    f.write("1}\n");
    EXPECT_FALSE(fs::exists(dir / "out.json"));  // not before it is complete
    EXPECT_EQ(dir.entries(), 1u);                // the temporary beside it
    f.commit();
  }
  EXPECT_EQ(test::read_file(dir / "out.json"), "{\"a\": 1}\n");
  EXPECT_EQ(dir.entries(), 1u);
  struct stat st {};
  ASSERT_EQ(::stat((dir / "out.json").c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0644 & ~mask);
  {
    SafeFile f(dir / "out.json");
    f.write("half");
  }  // an error cut it short: the old file stays whole
  EXPECT_EQ(test::read_file(dir / "out.json"), "{\"a\": 1}\n");
  EXPECT_EQ(dir.entries(), 1u);
}

TEST(SafeFile, APlantedLinkIsReplacedNotFollowed) {
  Folder dir;
  test::write_file(dir / "victim", "precious");
  fs::create_symlink(dir / "victim", dir / "out.json");
  write_file_safely(dir / "out.json", "ours");
  EXPECT_EQ(test::read_file(dir / "victim"), "precious");
  EXPECT_FALSE(fs::is_symlink(dir / "out.json"));
  EXPECT_EQ(test::read_file(dir / "out.json"), "ours");
}

TEST(SafeFile, AnOutputThatIsAnInputIsRefusedHoweverNamed) {
  Folder dir;
  test::write_file(dir / "trace.json", "[]");
  fs::create_symlink(dir / "trace.json", dir / "link.json");
  fs::create_hard_link(dir / "trace.json", dir / "hard.json");
  for (const std::string& out :
       {dir / "trace.json", dir / "link.json", dir / "hard.json", dir.path.string() + "/./trace.json"}) {
    try {
      SafeFile f(out, {dir / "trace.json"});
      FAIL() << out << " accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("is the input"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(test::read_file(dir / "trace.json"), "[]");
  EXPECT_NO_THROW(refuse_if_an_input(dir / "other.json", {dir / "trace.json"}));
}

TEST(SafeFile, AFolderThatCannotBeWrittenIsAnErrorNamingTheFile) {
  try {
    SafeFile f("/nonexistent-ferret-dir/out.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-ferret-dir/out.json: cannot create"), std::string::npos)
        << e.what();
  }
}

}  // namespace safe_file_test
}  // namespace
}  // namespace ferret
