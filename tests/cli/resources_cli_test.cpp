// Hostile shapes of input that must cost memory and time in proportion to the input: one kernel on
// each of many devices; more parser threads than the machine can start.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace ferret::test {
namespace {
namespace resources_cli_test {

using nlohmann::json;

// One 10 us kernel on each of `devices` devices (pid d), starting at 1000 + d % 7 us, with a
// 1 us memcpy and deviceProperties for each: the window is 1000..1016 us, so each device is busy
// 10 of 16 us (62.5%).
std::string many_devices_trace(int devices) {
  std::vector<std::string> events;
  events.reserve(2 * static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d) {
    events.push_back(span("kernel", "k", d, 7, 1000.0 + d % 7, 10.0, "\"device\":" + std::to_string(d)));
    events.push_back(span("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", d, 8, 1011.0, 1.0,
                          "\"device\":" + std::to_string(d) + ",\"bytes\":1024"));
  }
  std::string doc = trace(events);
  doc.pop_back();  // the closing brace: deviceProperties follow
  doc += ",\"deviceProperties\":[";
  for (int d = 0; d < devices; ++d) {
    if (d > 0) doc += ',';
    doc += "{\"id\":" + std::to_string(d);
    doc += ",\"name\":\"Test GPU\",\"totalGlobalMem\":1024,\"computeMajor\":9,\"computeMinor\":0,\"numSms\":132}";
  }
  return doc + "]}";
}

TEST(ResourcesCli, TenThousandDevicesStayWithinMemoryAndTime) {
  constexpr int kDevices = 10000;
  const std::string path = temp_path("many-devices.json");
  write_file(path, many_devices_trace(kDevices));
  // 400 MB of address space for a ~2 MB trace: reserving room for every GPU event on every device
  // needed 2.4 GB of RSS for this trace and fails here with std::bad_alloc. (Sanitizer builds
  // cannot run under an address-space limit; there the test checks the output only.)
  const std::string limit = kUnderSanitizer ? "" : "ulimit -v 400000 && ";
  const CommandResult r = run_shell(limit + "{ferret} analyze --json " + path);
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc;
  ASSERT_NO_THROW(doc = json::parse(r.out)) << r.out.substr(0, 2000);
  const json& gpus = doc.at("traces")[0].at("gpus");
  ASSERT_EQ(gpus.size(), static_cast<std::size_t>(kDevices));
  for (int d = 0; d < kDevices; ++d) {
    const json& g = gpus[static_cast<std::size_t>(d)];
    ASSERT_EQ(g.at("device").get<int>(), d);
    ASSERT_EQ(g.at("kernels").get<int>(), 1) << "device " << d;
    ASSERT_DOUBLE_EQ(g.at("kernel_us").get<double>(), 10.0) << "device " << d;
    ASSERT_DOUBLE_EQ(g.at("utilization_pct").get<double>(), 62.5) << "device " << d;
    ASSERT_EQ(g.at("name").get<std::string>(), "Test GPU") << "device " << d;
  }
}

TEST(ResourcesCli, ThreadsBeyondTheCapAreCappedNotFatal) {
  const std::string path = temp_path("threads.json");
  write_file(path, many_devices_trace(200));
  const CommandResult one = run_ferret("analyze --json --threads 1 " + path);
  const CommandResult many = run_ferret("analyze --json --threads 33000 --jobs 4096 " + path);
  const CommandResult info = run_ferret("info --json --threads 33000 " + path);
  std::remove(path.c_str());
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(many.exit_code, 0) << many.err;  // was SIGABRT: std::system_error from std::thread
  EXPECT_EQ(many.out, one.out);
  EXPECT_NE(many.err.find("--threads 33000 capped at"), std::string::npos) << many.err;
  EXPECT_NE(many.err.find("--jobs 4096 capped at"), std::string::npos) << many.err;
  EXPECT_EQ(info.exit_code, 0) << info.err;
}

// FERRET_TEST_THREAD_LIMIT=N makes thread creation fail after N threads, as a low `ulimit -u`
// does (root ignores RLIMIT_NPROC, so the limit itself cannot be used here): the parser falls
// back to the threads it has, or to none, and gives the same answer.
TEST(ResourcesCli, RefusedThreadsFallBackToFewer) {
  const std::string path = temp_path("refused.json");
  write_file(path, many_devices_trace(200));
  const CommandResult one = run_ferret("analyze --json --threads 1 " + path);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  for (const char* limit : {"0", "1", "2"}) {
    const CommandResult r =
        run_shell(std::string("FERRET_TEST_THREAD_LIMIT=") + limit + " {ferret} analyze --json --threads 4 " + path);
    EXPECT_EQ(r.exit_code, 0) << "limit " << limit << ": " << r.err;
    EXPECT_EQ(r.out, one.out) << "limit " << limit;
  }
  const std::string second = temp_path("refused-2.json");
  write_file(second, many_devices_trace(50));
  const CommandResult jobs =
      run_shell("FERRET_TEST_THREAD_LIMIT=0 {ferret} analyze --json --jobs 2 " + path + " " + second);
  std::remove(path.c_str());
  std::remove(second.c_str());
  EXPECT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_NE(jobs.out.find("\"traces\""), std::string::npos);
}

// `ferret gen job` writes ranks on a pool of threads: capped like the analysis (--threads 33000
// aborted with SIGABRT), and refused threads leave the work to those that started; the files are
// the same bytes either way.
TEST(ResourcesCli, GenJobThreadsAreCappedAndRefusalsFallBack) {
  const std::string one = temp_path("gen-threads-1"), many = temp_path("gen-threads-many"),
                    refused = temp_path("gen-threads-refused");
  for (const std::string& d : {one, many, refused}) std::filesystem::remove_all(d);
  const std::string job = " --ranks 4 --steps 2 -o ";
  ASSERT_EQ(run_ferret("gen job --threads 1" + job + one).exit_code, 0);
  const CommandResult capped = run_ferret("gen job --threads 33000" + job + many);
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  EXPECT_NE(capped.err.find("--threads 33000 capped at"), std::string::npos) << capped.err;
  const CommandResult r = run_shell("FERRET_TEST_THREAD_LIMIT=0 {ferret} gen job --threads 4" + job + refused);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string name = "/rank-" + std::to_string(rank) + ".json";
    EXPECT_EQ(read_file(many + name), read_file(one + name)) << name;
    EXPECT_EQ(read_file(refused + name), read_file(one + name)) << name;
  }
  for (const std::string& d : {one, many, refused}) std::filesystem::remove_all(d);
}

// Gzip of `plain_bytes` of valid, highly repetitive tiny CPU ops (64 in a row share a timestamp,
// ts = i / 64 us): deflate packs them a few hundred to one, below the 1000:1 decompression guard.
std::string repetitive_events_gzip(std::size_t plain_bytes, std::size_t& events) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out, chunk;
  std::vector<char> buffer(1 << 20);
  auto pack = [&](const std::string& text, int flush) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    z.avail_in = static_cast<uInt>(text.size());
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer.data());
      z.avail_out = static_cast<uInt>(buffer.size());
      deflate(&z, flush);
      out.append(buffer.data(), buffer.size() - z.avail_out);
    } while (z.avail_out == 0);
  };
  std::size_t written = 0;
  events = 0;
  pack("{\"traceEvents\":[", Z_NO_FLUSH);
  while (written < plain_bytes) {
    chunk.clear();
    for (int k = 0; k < 64 * 256; ++k, ++events)
      chunk +=
          std::string(events ? "," : "") +
          "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(events / 64) +
          ",\"dur\":1}";
    written += chunk.size();
    pack(chunk, Z_NO_FLUSH);
  }
  pack("]}", Z_FINISH);
  deflateEnd(&z);
  return out;
}

std::vector<std::string> notes_of(const json& trace_info) {
  std::vector<std::string> notes;
  for (const json& n : trace_info.at("notes")) notes.push_back(n.get<std::string>());
  return notes;
}

bool any_contains(const std::vector<std::string>& notes, const std::string& text) {
  for (const std::string& n : notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

TEST(ResourcesCli, RepetitiveGzipStopsAtTheMemoryBoundKeepingTheEventsBefore) {
  std::size_t events = 0;
  const std::string gz = repetitive_events_gzip(std::size_t{400} << 20, events);
  ASSERT_GT((std::size_t{400} << 20) / gz.size(), 200u) << "the input must inflate over 200:1";
  const std::string path = temp_path("repetitive.json.gz");
  write_file(path, gz);
  const CommandResult r = run_ferret("info --json --threads 2 --max-memory 64MiB " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json info = json::parse(r.out).at("traces")[0];
  const auto kept = info.at("events").get<std::uint64_t>();
  ASSERT_GT(kept, 0u);
  ASSERT_LT(kept, events);
  EXPECT_TRUE(any_contains(notes_of(info), "at the memory limit of 64 MiB (--max-memory)")) << r.out.substr(0, 3000);
  // Each of these events takes at least 32 bytes of columns (kind, phase, category, name, ts, dur,
  // pid, tid, correlation, external id: 1+1+2+4+4+4+4+4+4+4), and its analysis at least 20 more (its
  // parent slot and its place in its thread's nesting): within 64 MiB, no more than 64 MiB / 52.
  // The model alone reached 64 MiB at 2.06 million events before the bound counted the analysis.
  EXPECT_LE(kept * 52, std::uint64_t{64} << 20);
  // The first `kept` events, in order: the last one starts at (kept - 1) / 64 us and lasts 1 us.
  EXPECT_EQ(info.at("span").at("first_ns").get<std::int64_t>(), 0);
  EXPECT_EQ(info.at("span").at("last_ns").get<std::int64_t>(),
            static_cast<std::int64_t>((kept - 1) / 64 * 1000 + 1000));
  // The same document on every run, threads and all: the note says where the events merged so far
  // end, not where the scanner, on its own thread, had got to ("about byte N" varied run to run).
  for (int run = 0; run < 3; ++run) {
    const CommandResult again = run_ferret("info --json --threads 2 --max-memory 64MiB " + path);
    EXPECT_EQ(again.out, r.out) << "run " << run;
  }
  std::remove(path.c_str());
}

// An address-space limit below what --max-memory allows: the allocation that fails is caught,
// what was read is kept (less a quarter, room for the analysis) and analysed, with a note.
TEST(ResourcesCli, RefusedAllocationReportsWhatWasRead) {
  if (kUnderSanitizer) GTEST_SKIP() << "SKIPPED: ulimit -v cannot apply under ASan";
  const std::string endless =
      "(printf '{\"traceEvents\":['; yes "
      "'{\"ph\":\"X\",\"cat\":\"c\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},')";
  const CommandResult info =
      run_shell("ulimit -v 400000 && " + endless + " | {ferret} info --json --max-memory 8GiB -");
  ASSERT_EQ(info.exit_code, 0) << info.err;  // was: std::bad_alloc, exit 2, no output
  const json trace = json::parse(info.out).at("traces")[0];
  const std::vector<std::string> notes = notes_of(trace);
  std::uint64_t read = 0, kept = 0;
  for (const std::string& n : notes) {
    if (n.find("ran out of memory at byte") != std::string::npos) {
      ASSERT_EQ(std::sscanf(n.substr(n.find(", event ")).c_str(), ", event %lu", &read), 1) << n;
    }
    if (const std::size_t at = n.find("kept the first "); at != std::string::npos) {
      ASSERT_EQ(std::sscanf(n.substr(at).c_str(), "kept the first %lu", &kept), 1) << n;
    }
  }
  ASSERT_GT(read, 0u) << info.out.substr(0, 3000);
  EXPECT_EQ(kept, read - read / 4);
  EXPECT_EQ(trace.at("events").get<std::uint64_t>(), kept);

  const CommandResult analyze =
      run_shell("ulimit -v 400000 && " + endless + " | {ferret} analyze --json --max-memory 8GiB -");
  ASSERT_EQ(analyze.exit_code, 0) << analyze.err;
  const json input = json::parse(analyze.out).at("traces")[0].at("input");
  EXPECT_TRUE(any_contains(notes_of(input), "ran out of memory at byte")) << input.dump();
}

}  // namespace resources_cli_test
}  // namespace
}  // namespace ferret::test
