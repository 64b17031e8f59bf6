// `ferret memory` on allocator snapshots written by Python's pickle module in the shape of each
// torch generation's _snapshot() (tests/tools/make_pickles.py): the numbers against the ones
// computed by hand from the blocks the script writes, the findings, text against JSON.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace memory_cli_test {

using nlohmann::json;
constexpr std::int64_t kMiB = 1 << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

std::string snapshot(const std::string& name) {
  const std::string dir = test::python_generated_dir("tests/tools/make_pickles.py");
  return dir.empty() ? std::string() : dir + "/" + name;
}

#define REQUIRE_SNAPSHOT(var, name)       \
  const std::string var = snapshot(name); \
  if (var.empty()) GTEST_SKIP() << "SKIPPED: /usr/bin/python3 could not write the test pickles"

json memory_json(const std::string& path) {
  const test::CommandResult r = test::run_ferret("memory --json '" + path + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

std::vector<std::string> ids(const json& snap) {
  std::vector<std::string> out;
  for (const json& f : snap["findings"]) out.push_back(f["id"]);
  return out;
}

TEST(MemoryCli, FragmentedCacheNumbersByHandInEveryProtocol) {
  for (const char* p : {"p2", "p4", "p5"}) {
    REQUIRE_SNAPSHOT(path, std::string("snapshot-fragmented-") + p + ".pickle");
    const json doc = memory_json(path);
    EXPECT_EQ(doc["schema"], "ferret.memory/1");
    const json& snap = doc["snapshots"][0];
    const json& d0 = snap["devices"][0]["total"];
    EXPECT_EQ(d0["reserved_bytes"], 3 * kGiB);
    EXPECT_EQ(d0["allocated_bytes"], 1124 * kMiB);
    EXPECT_EQ(d0["requested_bytes"], 1124 * kMiB - 4024);
    EXPECT_EQ(d0["rounding_waste_bytes"], 4024);
    EXPECT_EQ(d0["inactive_bytes"], 1948 * kMiB);
    EXPECT_EQ(d0["free_blocks"], 5);
    EXPECT_EQ(d0["largest_free_block_bytes"], 924 * kMiB);
    EXPECT_NEAR(d0["external_fragmentation_pct"].get<double>(), 100.0 * (1 - 924.0 / 1948.0), 1e-3);
    // The 2 GiB segment pins 1 GiB free around four 256 MiB tensors, the first from train.py:40.
    const json& pin = snap["devices"][0]["pinning_segments"][0];
    EXPECT_EQ(pin["free_bytes"], 1024 * kMiB);
    EXPECT_EQ(pin["active_bytes"], 1024 * kMiB);
    EXPECT_EQ(pin["splitters"][0]["frame"], "train.py:40 in step");
    // Device 1: a graph pool with a pending free block.
    const json& d1 = snap["devices"][1];
    EXPECT_EQ(d1["pools"][0]["pool"], "1,3");
    EXPECT_EQ(d1["total"]["active_bytes"], 512);
    EXPECT_EQ(d1["total"]["allocated_bytes"], 0);
    EXPECT_EQ(ids(snap), std::vector<std::string>{"allocator-fragmentation"});
    EXPECT_EQ(snap["findings"][0]["severity"], "high");
    EXPECT_EQ(snap["allocator_settings"]["expandable_segments"], "False");
    // The text says the same numbers.
    const test::CommandResult text = test::run_ferret("memory '" + path + "'");
    EXPECT_NE(text.out.find("largest 924.0 MiB"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("expandable_segments:True"), std::string::npos);
  }
}

TEST(MemoryCli, OomStatesFromTheDeviceTraceWalkedBack) {
  REQUIRE_SNAPSHOT(frag, "snapshot-oom-fragmentation.pickle");
  const json f = memory_json(frag)["snapshots"][0];
  const json& trace = f["devices"][0]["trace"];
  EXPECT_EQ(trace["allocs"], 2);
  EXPECT_EQ(trace["frees"], 1);
  EXPECT_EQ(trace["segment_allocs"], 1);
  EXPECT_EQ(trace["peak_active_bytes"], 800 * kMiB);
  EXPECT_EQ(trace["peak_reserved_bytes"], kGiB);
  ASSERT_EQ(trace["ooms"].size(), 1u);
  EXPECT_EQ(trace["ooms"][0]["requested_bytes"], 700 * kMiB);
  EXPECT_EQ(trace["ooms"][0]["allocated_bytes"], 200 * kMiB);
  EXPECT_EQ(trace["ooms"][0]["cached_free_bytes"], 824 * kMiB);
  EXPECT_EQ(trace["ooms"][0]["device_free_bytes"], 50 * kMiB);
  EXPECT_EQ(trace["ooms"][0]["frame"], "train.py:77 in forward");
  EXPECT_EQ(ids(f), std::vector<std::string>{"oom-fragmentation"});

  REQUIRE_SNAPSHOT(cap, "snapshot-oom-capacity.pickle");
  const json c = memory_json(cap)["snapshots"][0];
  EXPECT_EQ(c["devices"][0]["trace"]["ooms"][0]["cached_free_bytes"], 0);
  EXPECT_EQ(ids(c), std::vector<std::string>{"oom-capacity"});
}

TEST(MemoryCli, OlderSnapshotsAndChurn) {
  REQUIRE_SNAPSHOT(old, "snapshot-1.13.pickle");
  const json o = memory_json(old)["snapshots"][0];
  EXPECT_EQ(o["devices"][0]["total"]["reserved_bytes"], 20 * kMiB);
  EXPECT_EQ(o["devices"][0]["total"]["allocated_bytes"], 8 * kMiB);
  EXPECT_TRUE(o["devices"][0]["total"]["requested_bytes"].is_null());
  EXPECT_EQ(o["devices"][0]["pinning_segments"][0]["splitters"][0]["frame"], "old.py:3 in main");
  EXPECT_TRUE(o["findings"].empty());

  REQUIRE_SNAPSHOT(churn, "snapshot-churn.pickle");
  const json ch = memory_json(churn)["snapshots"][0];
  EXPECT_EQ(ch["devices"][0]["trace"]["segment_allocs"], 100);
  EXPECT_EQ(ch["devices"][0]["trace"]["segment_frees"], 100);
  EXPECT_EQ(ids(ch), std::vector<std::string>{"segment-churn"});
}

TEST(MemoryCli, NotASnapshotIsNamedAndTheOthersStillReport) {
  REQUIRE_SNAPSHOT(good, "snapshot-oom-capacity.pickle");
  REQUIRE_SNAPSHOT(evil, "global-p4.pickle");
  const std::string values = snapshot("values-p4.pickle");
  const test::CommandResult r = test::run_ferret("memory --json '" + evil + "' '" + values + "' '" + good + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("global-p4.pickle: not a readable pickle: byte"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("values-p4.pickle: not a torch memory snapshot: no \"segments\" list"), std::string::npos)
      << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["snapshots"].size(), 1u);
  EXPECT_EQ(ids(doc["snapshots"][0]), std::vector<std::string>{"oom-capacity"});
}

}  // namespace memory_cli_test
}  // namespace
}  // namespace ferret
