// The default memory limit: 3/4 of physical memory, or of the cgroup limit when the process runs
// in a cgroup with a smaller one (v1 or v2), read from a sysfs tree built by the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "ingest/proc/memory_limit.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace memory_limit_test {

namespace fs = std::filesystem;

class CgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::temp_path("cgroup-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void put(const std::string& relative, const std::string& text) {
    const fs::path path = fs::path(root_) / relative;
    fs::create_directories(path.parent_path());
    test::write_file(path.string(), text);
  }
  std::string root_;
};

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

TEST_F(CgroupTree, V2LimitOfTheProcessCgroup) {
  put("user.slice/job-7/memory.max", "2147483648\n");
  const auto limit = cgroup_memory_limit("0::/user.slice/job-7\n", root_);
  ASSERT_TRUE(limit.has_value());
  EXPECT_EQ(limit->bytes, 2 * kGiB);
  EXPECT_EQ(limit->origin, root_ + "/user.slice/job-7/memory.max");
}

TEST_F(CgroupTree, V2MaxMeansNoLimit) {
  put("user.slice/memory.max", "max\n");
  EXPECT_FALSE(cgroup_memory_limit("0::/user.slice\n", root_).has_value());
}

TEST_F(CgroupTree, V2AncestorLimitBindsTheChild) {
  // The job's own cgroup says max; its parent holds 1 GiB for all of its children.
  put("batch/memory.max", "1073741824\n");
  put("batch/job-3/memory.max", "max\n");
  const auto limit = cgroup_memory_limit("0::/batch/job-3\n", root_);
  ASSERT_TRUE(limit.has_value());
  EXPECT_EQ(limit->bytes, kGiB);
}

TEST_F(CgroupTree, V2RootPathInAContainer) {
  // With a cgroup namespace the process sees itself at "/": the limit is at the mount's top.
  put("memory.max", "536870912\n");
  const auto limit = cgroup_memory_limit("0::/\n", root_);
  ASSERT_TRUE(limit.has_value());
  EXPECT_EQ(limit->bytes, kGiB / 2);
}

TEST_F(CgroupTree, V1MemoryControllerAmongOthers) {
  put("memory/docker/abc/memory.limit_in_bytes", "3221225472\n");
  const auto limit = cgroup_memory_limit("5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/\n", root_);
  ASSERT_TRUE(limit.has_value());
  EXPECT_EQ(limit->bytes, 3 * kGiB);
}

TEST_F(CgroupTree, V1HugeValueMeansNoLimit) {
  // What cgroup v1 writes for "unlimited": the largest page-aligned int64.
  put("memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_FALSE(cgroup_memory_limit("4:memory:/docker/abc\n", root_).has_value());
}

TEST_F(CgroupTree, MissingFilesMeanNoLimit) {
  EXPECT_FALSE(cgroup_memory_limit("0::/not/there\n4:memory:/nor/here\n", root_).has_value());
  EXPECT_FALSE(cgroup_memory_limit("", root_).has_value());
}

TEST_F(CgroupTree, GarbageContentsMeanNoLimit) {
  put("a/memory.max", "lots\n");
  put("b/memory.max", "-5\n");
  put("c/memory.max", "12abc\n");
  put("d/memory.max", "");
  for (const char* dir : {"a", "b", "c", "d"})
    EXPECT_FALSE(cgroup_memory_limit(std::string("0::/") + dir + "\n", root_).has_value()) << dir;
  // Lines that are not hierarchy:controllers:path are passed over.
  EXPECT_FALSE(cgroup_memory_limit("garbage\n0:/x\n::\n", root_).has_value());
}

TEST_F(CgroupTree, DefaultIsThreeQuartersOfTheSmallerOfRamAndCgroup) {
  put("job/memory.max", "4294967296\n");  // 4 GiB
  const MemoryLimit in_cgroup = default_memory_limit_from(16 * kGiB, "0::/job\n", root_);
  EXPECT_EQ(in_cgroup.bytes, 3 * kGiB);
  EXPECT_NE(in_cgroup.origin.find("cgroup limit of 4096 MiB"), std::string::npos) << in_cgroup.origin;
  EXPECT_NE(in_cgroup.origin.find(root_ + "/job/memory.max"), std::string::npos) << in_cgroup.origin;
  // A cgroup limit above physical memory changes nothing.
  const MemoryLimit big_cgroup = default_memory_limit_from(2 * kGiB, "0::/job\n", root_);
  EXPECT_EQ(big_cgroup.bytes, 3 * kGiB / 2);
  EXPECT_NE(big_cgroup.origin.find("physical memory (2048 MiB)"), std::string::npos) << big_cgroup.origin;
  const MemoryLimit none = default_memory_limit_from(16 * kGiB, "0::/elsewhere\n", root_);
  EXPECT_EQ(none.bytes, 12 * kGiB);
}

}  // namespace memory_limit_test
}  // namespace
}  // namespace ferret
