// `ferret memory` on allocator snapshots written by Python's pickle module in the shape of each
// torch generation's _snapshot() (tests/tools/make_pickles.py): the numbers against the ones
// computed by hand from the blocks the script writes, the findings, text against JSON. Then on
// text (tests/data/memory/: memory_summary() tables and out-of-memory messages, the numbers by
// hand in tests/ingest/memory_text_reader_test.cpp): the findings each fixture was written to
// raise, text against JSON, snapshots and text in one run, text that holds neither.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/units.h"
#include "pickle_writer.h"
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

// Free memory at a snapshot taken after the step's peak is the step's blocks kept for reuse: the
// device trace walked back shows the peak held 2972 MiB active in the 3 GiB (3.3% free).
TEST(MemoryCli, FragmentationIsJudgedAtThePeak) {
  REQUIRE_SNAPSHOT(path, "snapshot-fragmented-after-peak.pickle");
  const json snap = memory_json(path)["snapshots"][0];
  const json& trace = snap["devices"][0]["trace"];
  EXPECT_EQ(trace["peak_active_bytes"], 2972 * kMiB);
  EXPECT_EQ(snap["devices"][0]["total"]["inactive_bytes"], 1948 * kMiB);
  EXPECT_TRUE(snap["findings"].empty()) << snap["findings"].dump();
}

// A pass that only filled the cache is growth, not churn, and says what grew by the first user
// frame past the recording's machinery and torch's own Python (8 x 20 MiB from train.py:12, 4 x
// 20 MiB from data.py:30: 240 MiB of 240 MiB reserved).
TEST(MemoryCli, GrowthWithWhatGrewAtTheFirstUserFrame) {
  REQUIRE_SNAPSHOT(path, "snapshot-growth.pickle");
  const json snap = memory_json(path)["snapshots"][0];
  EXPECT_EQ(snap["devices"][0]["trace"]["segment_allocs"], 12);
  EXPECT_EQ(snap["devices"][0]["trace"]["segment_frees"], 0);
  ASSERT_EQ(ids(snap), std::vector<std::string>{"cache-growth"});
  const json& f = snap["findings"][0];
  EXPECT_EQ(f["severity"], "info");
  EXPECT_NE(f["title"].get<std::string>().find("12 segments (240 MiB)"), std::string::npos) << f["title"];
  const std::string detail = f["detail"];
  EXPECT_NE(detail.find("What grew: train.py:12 in build_model 160 MiB, data.py:30 in load 80 MiB."), std::string::npos)
      << detail;
  // The blocks' allocation sites skip the machinery too.
  EXPECT_EQ(snap["devices"][0]["pinning_segments"].size(), 0u);  // no free memory: nothing pinned
  const test::CommandResult text = test::run_ferret("memory '" + path + "'");
  EXPECT_NE(text.out.find("train.py:12 in build_model"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("CUDACachingAllocator"), std::string::npos) << text.out;
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

std::string text_fixture(const std::string& name) {
  return std::string(FERRET_SOURCE_DIR) + "/tests/data/memory/" + name;
}

TEST(MemoryCli, TextFixturesRaiseTheFindingsTheyWereWrittenFor) {
  // summary-torch1: 3 retries, peak reserved 15872 MiB - peak allocated 12288 MiB = 3584 MiB
  // (22.6% >= 20%, >= 1 GiB); transient 12288 - 4096 = 8192 MiB (66.7% >= 50%).
  // summary-torch2: segments 400 allocated / 8 at the peak = 50x, 395 freed; reserved 10240 MiB
  // >= 2 x 3072 MiB peak allocated, 7 GiB idle.
  // oom-torch1: 14.62 - 14.56 GiB = 61.4 MiB unallocated >= 20 MiB requested: fragmentation.
  // oom-torch2: 1.50 GiB unallocated < 2 GiB: capacity; process 1234's 12 GiB is 15.2% of 79.15 GiB.
  // oom-hip: 11.50 GiB unallocated >= 1 GiB: fragmentation; its one process is this one.
  // oom-in-traceback: 512 MiB unallocated < 8 GiB: capacity.
  // two-summaries: the last (3584 of 4096 MiB held) raises nothing; the first would have.
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"summary-torch1.txt", {"summary-fragmentation", "summary-activation-peak"}},
      {"summary-torch2.txt", {"summary-segment-churn", "summary-cached-memory"}},
      {"oom-torch1.log", {"oom-fragmentation"}},
      {"oom-torch2.log", {"oom-other-processes", "oom-capacity"}},  // 12 GiB of others explain it
      {"oom-hip.log", {"oom-fragmentation"}},
      {"oom-in-traceback.log", {"oom-capacity"}},
      {"two-summaries.log", {}},
  };
  for (const auto& [name, expected] : cases) {
    const json doc = memory_json(text_fixture(name));
    ASSERT_EQ(doc["texts"].size(), 1u) << name;
    EXPECT_TRUE(doc["snapshots"].empty()) << name;
    const json& t = doc["texts"][0];
    EXPECT_EQ(t["kind"], "text");
    EXPECT_EQ(ids(t), expected) << name;
    EXPECT_TRUE(t["notes"].empty()) << name << ": " << t["notes"].dump();
  }
  const json o = memory_json(text_fixture("oom-torch2.log"))["texts"][0]["ooms"][0];
  EXPECT_EQ(o["kind"], "oom");
  EXPECT_EQ(o["wording"], "torch 2.x");
  EXPECT_EQ(o["requested_bytes"], 2 * kGiB);
  EXPECT_EQ(o["reserved_unallocated_bytes"], 3 * kGiB / 2);
  EXPECT_EQ(o["other_processes_bytes"], 12 * kGiB);
  EXPECT_EQ(o["processes"][0]["pid"], 1234);
  const json s = memory_json(text_fixture("summary-torch1.txt"))["texts"][0]["summaries"][0];
  EXPECT_EQ(s["kind"], "summary");
  EXPECT_EQ(s["alloc_retries"], 3);
  EXPECT_EQ(s["rows"]["allocated_bytes"]["peak"], 12288 * kMiB);
  EXPECT_EQ(s["rows"]["allocated_bytes"]["large_pool"]["current"], 4000 * kMiB);
  EXPECT_FALSE(s["rows"].contains("requested_bytes"));  // no such row before torch 2.x
  EXPECT_EQ(s["units"], "KB/MB/GB (binary)");
}

// Every number and finding the JSON holds, the text shows (at a width that cuts no title).
TEST(MemoryCli, TextAgreesWithJsonOnEveryFixture) {
  for (const char* name : {"summary-torch1.txt", "summary-torch2.txt", "oom-torch1.log", "oom-torch2.log",
                           "oom-hip.log", "oom-in-traceback.log", "two-summaries.log"}) {
    const std::string path = text_fixture(name);
    const json t = memory_json(path)["texts"][0];
    const test::CommandResult r = test::run_ferret("memory --width 400 '" + path + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string& out = r.out;
    auto shows = [&](const std::string& what) { EXPECT_NE(out.find(what), std::string::npos) << name << ": " << what; };
    shows(fmt::format("{} memory summar", t["summaries"].size()));
    shows(fmt::format("{} out-of-memory message", t["ooms"].size()));
    for (const json& s : t["summaries"]) {
      shows(fmt::format("Summary at line {}, device {}: CUDA OOMs {}, cudaMalloc retries {}", s["line"].get<int>(),
                        s["device"].get<int>(), s["ooms"].get<int>(), s["alloc_retries"].get<int>()));
      for (const char* key : {"allocated_bytes", "reserved_bytes"})
        for (const char* col : {"current", "peak", "allocated", "freed"})
          shows(human_bytes(s["rows"][key][col].get<std::uint64_t>()));
      shows(std::to_string(s["rows"]["segments"]["allocated"].get<int>()));
    }
    for (const json& o : t["ooms"]) {
      shows(fmt::format("Out of memory at line {}: {} device {}, {} requested", o["line"].get<int>(),
                        o["backend"].get<std::string>(), o["device"].get<int>(),
                        human_bytes(o["requested_bytes"].get<std::uint64_t>())));
      shows(fmt::format("PyTorch: allocated {}, reserved {}, reserved but unallocated {}",
                        human_bytes(o["allocated_bytes"].get<std::uint64_t>()),
                        human_bytes(o["reserved_bytes"].get<std::uint64_t>()),
                        human_bytes(o["reserved_unallocated_bytes"].get<std::uint64_t>())));
    }
    shows(fmt::format("Findings ({})", t["findings"].size()));
    for (const json& f : t["findings"]) shows(f["title"].get<std::string>());
    // Markdown carries the same titles.
    const test::CommandResult md = test::run_ferret("memory --md '" + path + "'");
    for (const json& f : t["findings"])
      EXPECT_NE(md.out.find(f["title"].get<std::string>().substr(0, 20)), std::string::npos) << name;
  }
}

TEST(MemoryCli, SnapshotsAndTextInOneRunAndTextWithNeitherNamed) {
  const std::string plain = test::temp_path("memory-plain.log");
  test::write_file(plain, "epoch 1 loss 0.3\nepoch 2 loss 0.2\n");
  const std::string gz = test::temp_path("memory-oom.log.gz");
  ASSERT_EQ(std::system(("gzip -c '" + text_fixture("oom-torch2.log") + "' > '" + gz + "'").c_str()), 0);
  std::string args = "'" + plain + "' '" + gz + "' '" + text_fixture("summary-torch1.txt") + "'";
  const std::string snap = snapshot("snapshot-oom-capacity.pickle");
  if (!snap.empty()) args += " '" + snap + "'";
  const test::CommandResult r = test::run_ferret("memory --json " + args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(plain + ": neither an allocator snapshot"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 lines read"), std::string::npos) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["texts"].size(), 2u);
  EXPECT_EQ(ids(doc["texts"][0]), (std::vector<std::string>{"oom-other-processes", "oom-capacity"}));  // gzip read
  EXPECT_EQ(doc["texts"][1]["summaries"].size(), 1u);
  if (!snap.empty()) {
    ASSERT_EQ(doc["snapshots"].size(), 1u);
    EXPECT_EQ(doc["snapshots"][0]["kind"], "snapshot");
    EXPECT_EQ(ids(doc["snapshots"][0]), std::vector<std::string>{"oom-capacity"});
  }
  std::remove(plain.c_str());
  std::remove(gz.c_str());
}

// Hostile pickles that make the memo name one large value many times (see the reader's tests for
// the exact shapes): the process as a whole keeps to --max-memory, the report stays small, and a
// dict of 200,000 uses of one 1 MiB key reads within a CPU-time limit. Before: 3.08 GB peak and a
// 314 MB report for 1 MB files under --max-memory 256M; 33-77 s of hashing for the keys.
namespace hostile {
using namespace test::pickle_writer;
std::string big() { return p_str(std::string(std::size_t{1} << 20, 'x')) + p_memo_put(0); }
std::string write(const std::string& name, const std::string& bytes) {
  const std::string path = test::temp_path(name);
  test::write_file(path, bytes);
  return path;
}
std::int64_t peak_kib(const std::string& err) {
  const std::size_t at = err.rfind("peak ");
  return at == std::string::npos ? -1 : std::stoll(err.substr(at + 5));
}
}  // namespace hostile

TEST(MemoryCli, SharedValuesKeepToTheMemoryBoundAndTheReportSmall) {
  using namespace hostile;
  std::vector<std::string> segments{
      p_dict({{"device", p_int(0)}, {"total_size", p_int(2 << 20)}, {"segment_type", big()}, {"blocks", "]"}}) +
      p_memo_put(1)};
  for (int i = 1; i < 3000; ++i) segments.push_back(p_memo_get(1));
  std::string settings = "}(";
  for (int i = 0; i < 300; ++i) settings += p_str(fmt::format("k{}", i)) + p_memo_get(0);
  settings += "u";
  const std::string path = write("shared-values.pickle", p_snapshot(segments, p_str("allocator_settings") + settings));
  const test::CommandResult r = test::run_shell("/usr/bin/time -f 'peak %M' {ferret} memory --max-memory 256M " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Device 0: 3000 segments"), std::string::npos) << r.out.substr(0, 400);
  EXPECT_LT(r.out.size(), 200'000u);
  if (!test::kUnderSanitizer) {
    EXPECT_LT(peak_kib(r.err), 100 * 1024) << r.err;
  }
}

TEST(MemoryCli, MaxMemoryHoldsForWhatTheConverterMakes) {
  if (test::kUnderSanitizer) {
    GTEST_SKIP() << "SKIPPED: ASan's shadow memory is not the process's own";
  }
  using namespace hostile;
  // 100,000 distinct frames sharing one 1 MiB file name: 5 MB of pickle, 100 MB of cut names.
  std::vector<std::string> blocks;
  for (int i = 0; i < 100'000; ++i)
    blocks.push_back(p_block(
        512, "inactive",
        p_list({p_dict({{"filename", i == 0 ? big() : p_memo_get(0)}, {"line", p_int(i)}, {"name", p_str("f")}})})));
  const std::string path =
      write("shared-frames.pickle", p_snapshot({p_segment(p_int(0), p_int(1 << 30), p_list(blocks))}));
  for (const int mib : {64, 128, 512}) {
    const test::CommandResult r =
        test::run_shell(fmt::format("/usr/bin/time -f 'peak %M' {{ferret}} memory --max-memory {}M {}", mib, path));
    EXPECT_TRUE(r.exit_code == 0 || r.err.find("memory bound") != std::string::npos) << r.err;
    EXPECT_LT(peak_kib(r.err), mib * 1024 * 5 / 4 + 40 * 1024) << mib << " MiB: " << r.err;
    if (mib == 512) {
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
  }
}

TEST(MemoryCli, OneLongStringUsedEverywhereReadsWithinACpuLimit) {
  using namespace hostile;
  // A root dict of 200,000 uses of one 1 MiB key (before: 33-77 s hashing it on each use) ...
  std::string root = "}(";
  root += big() + "N";
  for (int i = 0; i < 200'000; ++i) root += p_memo_get(0) + "N";
  root += p_str("segments") + "]u";
  // ... and 300,000 uses of a block whose state is a 1 MiB string (before: 7-11 s copying it).
  std::vector<std::string> blocks{p_dict({{"size", p_int(512)}, {"state", big()}}) + p_memo_put(1)};
  for (int i = 1; i < 300'000; ++i) blocks.push_back(p_memo_get(1));
  const std::string keys = write("shared-keys.pickle", p_pickle(root));
  const std::string states =
      write("shared-state.pickle", p_snapshot({p_segment(p_int(0), p_int(1 << 30), p_list(blocks))}));
  const test::CommandResult r = test::run_shell("ulimit -t 5; {ferret} memory --json " + keys + " " + states);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["snapshots"][0]["devices"].size(), 0u);
  EXPECT_EQ(doc["snapshots"][1]["devices"][0]["total"]["blocks"], 300'000) << doc["snapshots"][1]["devices"][0].dump();
}

// A pickle on stdin whose third byte is an opcode that runs code is refused at once, not after
// buffering the default bound's worth of bytes (3 GB before); the buffer takes at most half the
// bound, so the whole read stays within --max-memory (a 512M stdin pickle peaked at 1.06 GB).
TEST(MemoryCli, AStdinPickleIsRefusedEarlyAndBuffersWithinTheBound) {
  const test::CommandResult bad = test::run_shell(
      "{ printf '\\200\\002c'; head -c 200000000 /dev/zero; } | /usr/bin/time -f 'peak %M' {ferret} memory -");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("byte 2: opcode 0x63 GLOBAL"), std::string::npos) << bad.err;
  if (!test::kUnderSanitizer) {
    EXPECT_LT(hostile::peak_kib(bad.err), 60 * 1024) << bad.err;
  }
  // A sound start, then more than half of --max-memory 64M: refused, within the bound.
  const test::CommandResult big = test::run_shell(
      "{ printf '\\200\\002]q\\000('; yes 'K' | tr -d '\\n' | head -c 40000000; printf 'e.'; } | "
      "/usr/bin/time -f 'peak %M' {ferret} memory --max-memory 64M -");
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.err.find("over half the 64 MiB memory bound"), std::string::npos) << big.err;
  if (!test::kUnderSanitizer) {
    EXPECT_LT(hostile::peak_kib(big.err), 64 * 1024 + 20 * 1024) << big.err;
  }
}

// Sizes no device has (over 2^50 bytes; 2^64 saturated to 8 EiB before and raised findings) are
// unreadable and counted; a device the text does not name is "?" in findings as in the tables.
TEST(MemoryCli, SizesNoDeviceHasAreUnreadableAndCounted) {
  const std::string path = test::temp_path("oom-huge.log");
  test::write_file(path,
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 99999999999999999999 GiB. GPU "
                   "has a total capacity of 79.11 GiB of which 2048.00 PiB is free. Of the allocated memory 70.00 GiB "
                   "is allocated by PyTorch, and 1.50 GiB is reserved by PyTorch but unallocated.\n");
  const test::CommandResult r = test::run_ferret("memory --json " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  const json& oom = doc["texts"][0]["ooms"][0];
  EXPECT_EQ(oom["requested_bytes"], nullptr) << oom.dump();
  EXPECT_EQ(oom["device_free_bytes"], nullptr) << oom.dump();
  EXPECT_EQ(oom["allocated_bytes"], 70 * kGiB);
  EXPECT_NE(doc["texts"][0]["notes"].dump().find("size over 2^50 bytes (1 PiB), no device's memory"), std::string::npos)
      << doc["texts"][0]["notes"].dump();
  for (const json& f : doc["texts"][0]["findings"])
    EXPECT_EQ(f["title"].get<std::string>().find("-1"), std::string::npos);
  // A message that names no device: "?" in the findings' titles, as in the table, never -1.
  const std::string nameless = test::temp_path("oom-no-device.log");
  test::write_file(nameless,
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. Of the allocated memory "
                   "70.00 GiB is allocated by PyTorch, and 1.50 GiB is reserved by PyTorch but unallocated.\n");
  const json other = json::parse(test::run_ferret("memory --json " + nameless).out);
  ASSERT_FALSE(other["texts"][0]["findings"].empty()) << other.dump();
  for (const json& f : other["texts"][0]["findings"]) {
    EXPECT_EQ(f["title"].get<std::string>().find("-1"), std::string::npos) << f["title"];
    EXPECT_NE(f["title"].get<std::string>().find("device ?"), std::string::npos) << f["title"];
  }
}

}  // namespace memory_cli_test
}  // namespace
}  // namespace ferret
