// `ferret nccl` through the built binary: the three formats, several logs at once, stdin, gzip,
// unreadable and hostile input, and --trace. Numbers come from the corpus counts worked out in
// tests/ingest/nccl_log_parser_test.cpp and tests/analysis/nccl_setup_test.cpp.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "terminal_hazard.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace nccl_cli_test {

using nlohmann::json;
using test::run_ferret;

std::string corpus(const std::string& name) { return std::string(FERRET_SOURCE_DIR) + "/tests/data/nccl/" + name; }
bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ferret under a 1 GiB address-space limit and a 60 s timeout (exit 124 when it runs past it):
// the hostile-input tests must fail, not hang or take the machine down, on a ferret that
// reads forever or builds its output in proportion to a number in the log.
test::CommandResult run_bounded(const std::string& args, const std::string& stdin_file = "") {
  test::CommandResult r;
  const std::string out = test::temp_path("bounded.out"), err = test::temp_path("bounded.err");
  const std::string limit = test::kUnderSanitizer ? "" : "ulimit -v 1048576; ";
  std::string cmd = limit + "timeout 60 " + std::string(FERRET_BINARY) + " " + args + " >" + out + " 2>" + err;
  if (!stdin_file.empty()) cmd += " <" + stdin_file;
  const int status = std::system(("sh -c '" + cmd + "'").c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = test::read_file(out);
  r.err = test::read_file(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

// The security review's log: `lines` communicators that each claim 1,048,576 ranks and log rank 0.
std::string hostile_init_lines(int lines) {
  std::string text;
  for (int i = 0; i < lines; ++i) {
    const std::string id = "0x" + std::to_string(i);
    text += "h:1:1 [0] NCCL INFO comm " + id + " rank 0 nranks 1048576 cudaDev 0 busId 1a000 commId " + id +
            " - Init START\n";
  }
  return text;
}

TEST(NcclCli, HelpListsTheOptions) {
  const auto r = run_ferret("nccl --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* option : {"--trace", "--json", "--md"}) EXPECT_TRUE(contains(r.out, option)) << option;
}

TEST(NcclCli, TextReportFitsEightyColumns) {
  const auto r = run_ferret("nccl " + corpus("two_host_socket_fallback.log"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "4 ranks on 2 hosts")) << r.out;
  EXPECT_TRUE(contains(r.out, "HIGH")) << r.out;
  EXPECT_TRUE(contains(r.out, "TCP sockets")) << r.out;
  std::size_t start = 0;
  while (start < r.out.size()) {
    std::size_t end = r.out.find('\n', start);
    if (end == std::string::npos) end = r.out.size();
    EXPECT_LE(end - start, 80u) << r.out.substr(start, end - start);
    start = end + 1;
  }
}

// Rank 0's log alone: never "1 host" when peers are reached over the network; the peers listed.
TEST(NcclCli, OneRankLogNamesTheOtherHosts) {
  const auto r = run_ferret("nccl " + corpus("rank0_nccl24_ring.log"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "4 ranks on >= 2 hosts (1 logged; peers reached over NET/Socket)")) << r.out;
  EXPECT_FALSE(contains(r.out, "on 1 host")) << r.out;
  EXPECT_TRUE(contains(r.out, "rank 0 -> rank 1: P2P/IPC (same host); rank 3: NET/Socket (another host)")) << r.out;
  EXPECT_TRUE(contains(r.out, "0 not understood")) << r.out;
  const auto m = run_ferret("nccl --md " + corpus("rank0_socket_no_verbs.log"));
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_TRUE(contains(m.out, "**4 ranks on 2 hosts (1 logged; nNodes in the graph line)**")) << m.out;
  const json j = json::parse(run_ferret("nccl --json " + corpus("rank0_socket_no_verbs.log")).out);
  EXPECT_EQ(j["job"]["hosts"], 1);
  EXPECT_EQ(j["job"]["hosts_at_least"], 2);
  EXPECT_EQ(j["peers"].size(), 3u);
  EXPECT_EQ(j["hosts"][0]["ib_unavailable"], "Failed to open libibverbs.so[.1]");
}

TEST(NcclCli, JsonSchemaAndAllLogsTogether) {
  const auto r = run_ferret("nccl --json " + corpus("two_host_ib_gdr.log") + " " + corpus("p2p_disabled.log"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "ferret.nccl/1");
  ASSERT_EQ(j["sources"].size(), 2u);
  EXPECT_EQ(j["lines"]["read"], 119 + 25);
  EXPECT_EQ(j["lines"]["not_understood"], 0);
  // The largest communicator is the job: 8 ranks of two_host_ib_gdr.log.
  EXPECT_EQ(j["job"]["nranks"], 8);
  EXPECT_EQ(j["job"]["connections"]["net_rdma"], 8);
  EXPECT_EQ(j["job"]["connections"]["shm"], 8);
  EXPECT_EQ(j["communicators"].size(), 2u);
  EXPECT_EQ(j["hosts"].size(), 3u);  // node-a, node-b, pcie-box
  EXPECT_EQ(j["ranks"][0]["host"], "node-a");
  EXPECT_EQ(j["ranks"][0]["nccl_version"], "2.18.5");
  bool p2p = false;
  for (const json& f : j["findings"]) {
    p2p = p2p || f["id"] == "nccl-p2p-disabled";
    EXPECT_EQ(f["dimension"], "distributed");
    EXPECT_FALSE(f["threshold"].get<std::string>().empty());
  }
  EXPECT_TRUE(p2p);
}

TEST(NcclCli, MarkdownEscapesLogText) {
  const std::string path = test::temp_path("nccl_md.log");
  test::write_file(path, "h:1:1 [0] misc/x.cc:1 NCCL WARN <script>|alert*`x`\n");
  const auto r = run_ferret("nccl --md " + path);
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "## NCCL setup")) << r.out;
  // `x` is a code span and stays one (Markdown is escaped only outside code spans).
  EXPECT_TRUE(contains(r.out, "&lt;script&gt;\\|alert\\*`x`")) << r.out;
  EXPECT_FALSE(contains(r.out, "<script>"));
}

// A colour sequence in a log (here in a commId, a host and a version) is log text, not ferret's
// colour: escaped in every table cell (a fuzzer found the commId column passing it raw).
TEST(NcclCli, ColourSequencesInLogTextAreEscapedInTables) {
  const std::string path = test::temp_path("nccl_sgr.log");
  test::write_file(path,
                   "h\x1b[31m:1:1 [0] NCCL INFO NCCL version 2.18.\x1b[33m1+cuda12.1\n"
                   "h\x1b[31m:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1a000 commId "
                   "\x1b[33m0x1f - Init START\n");
  for (const char* form : {"nccl ", "nccl --md "}) {
    const auto r = run_ferret(form + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::terminal_hazard(r.out), "") << form << r.out;
    // Shown, escaped (Markdown escapes the backslash and '[' once more).
    EXPECT_TRUE(contains(r.out, std::string(form) == "nccl " ? "\\x1b[33m0x1f" : "\\\\x1b\\[33m0x1f")) << form << r.out;
  }
  std::remove(path.c_str());
}

TEST(NcclCli, ReadsStdinAndGzip) {
  const auto piped = run_ferret("nccl --json -", corpus("mixed_torchrun.log"));
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(json::parse(piped.out)["lines"]["nccl"], 27);

  const std::string gz = test::temp_path("nccl_gz.log.gz");
  ASSERT_EQ(std::system(("gzip -c " + corpus("nccl_2_7_old.log") + " > " + gz).c_str()), 0);
  const auto r = run_ferret("nccl --json " + gz);
  std::remove(gz.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["sources"][0]["compression"], "gzip");
  EXPECT_EQ(j["lines"]["read"], 36);
  EXPECT_EQ(j["communicators"][0]["missing_ranks"], json::parse("[[3, 3]]"));
  EXPECT_EQ(j["communicators"][0]["missing_count"], 1);
}

TEST(NcclCli, UnreadableLogIsNamedAndOnlyFatalWhenNothingRemains) {
  const std::string missing = "/nonexistent/nccl-rank9.log";
  const auto some = run_ferret("nccl --json " + corpus("p2p_disabled.log") + " " + missing);
  EXPECT_EQ(some.exit_code, 0) << some.err;
  EXPECT_TRUE(contains(some.err, "nccl-rank9.log")) << some.err;
  const json j = json::parse(some.out);
  ASSERT_EQ(j["errors"].size(), 1u);
  EXPECT_EQ(j["errors"][0]["source"], missing);

  const auto none = run_ferret("nccl " + missing);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(contains(none.err, "nccl-rank9.log")) << none.err;
}

TEST(NcclCli, GarbageNeverCrashes) {
  const std::string path = test::temp_path("nccl_garbage.log");
  std::string bytes;
  for (unsigned i = 0; i < 300000; ++i) bytes += static_cast<char>((i * 7919u) % 256u);
  bytes += std::string(100000, 'N') + " NCCL INFO Channel 00/0 : 0[0] -> \n";
  bytes += "x:1:1 [0] NCCL INFO Channel 99/0 : -5[0] -> 2147483647[1] via \n";
  bytes += "x:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 99999999999 - Init START\n";
  bytes += "x:1:1 [0] NCCL INFO Init timings: rank\n";
  test::write_file(path, bytes);
  const auto r = run_ferret("nccl --json " + path);
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_GE(j["sources"][0]["long_lines"].get<int>(), 1);
  EXPECT_GE(j["lines"]["not_understood"].get<int>(), 2);
}

// 50 lines (about 5 KB) once gave 836 MB of JSON: each communicator listed its 1,048,575
// missing ranks one by one. Now each has one range, [1, 1048575], and the document is a few
// hundred bytes per communicator.
TEST(NcclCli, HugeNranksGivesSmallJson) {
  const std::string path = test::temp_path("nccl_hostile50.log");
  test::write_file(path, hostile_init_lines(50));
  const auto r = run_bounded("nccl --json " + path);
  const auto text = run_bounded("nccl " + path);
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(r.out.size(), 200u * 1024);
  const json j = json::parse(r.out);
  ASSERT_EQ(j["communicators"].size(), 50u);
  for (const json& c : j["communicators"]) {
    EXPECT_EQ(c["missing_ranks"], json::parse("[[1, 1048575]]"));
    EXPECT_EQ(c["missing_count"], 1048575);
  }
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_LT(text.out.size(), 200u * 1024);
  EXPECT_TRUE(contains(text.out, "missing ranks (1048575): 1-1048575")) << text.out;
}

// 5,000 such lines (600 KB) once needed 24 GB. The output grows with the lines, not with nranks:
// 5,000 communicators of about 430 bytes of JSON each (2.1 MB) plus 16 findings and one that counts
// the other 4,984 stay under 4 MB, and ferret runs in 1 GiB.
TEST(NcclCli, FiveThousandHugeCommunicatorsStayBounded) {
  const std::string path = test::temp_path("nccl_hostile5000.log");
  test::write_file(path, hostile_init_lines(5000));
  const auto r = run_bounded("nccl --json " + path);
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(r.out.size(), 4u << 20);
  const json j = json::parse(r.out);
  ASSERT_EQ(j["communicators"].size(), 5000u);
  EXPECT_EQ(j["communicators"][4999]["missing_ranks"], json::parse("[[1, 1048575]]"));
  ASSERT_EQ(j["findings"].size(), 17u);
  EXPECT_EQ(j["findings"][16]["title"], "4984 more communicators with missing or incomplete ranks");
}

// nranks beyond 1,048,576 is damage: the line is ignored and the report says where.
TEST(NcclCli, ImplausibleNranksIsNamedWithFileAndLine) {
  const std::string path = test::temp_path("nccl_hostile_big.log");
  test::write_file(path,
                   hostile_init_lines(1) +
                       "h:1:1 [0] NCCL INFO comm 0x9 rank 0 nranks 2000000000 cudaDev 0 commId 0x9 - Init START\n");
  const auto r = run_bounded("nccl --json " + path);
  const auto text = run_bounded("nccl " + path);
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["communicators"].size(), 1u);
  EXPECT_EQ(j["sources"][0]["implausible_lines"], 1);
  const std::string note =
      path + ":2: comm 0x9: nranks 2000000000 above 1048576 (the largest job ferret accepts): line ignored";
  EXPECT_EQ(j["sources"][0]["implausible_samples"], json::array({note}));
  EXPECT_TRUE(contains(text.out, "1 line with an implausible value")) << text.out;
  EXPECT_TRUE(contains(text.out, ":2: comm 0x9: nranks 2000000000")) << text.out;
}

// `ferret nccl /dev/zero` reads the 4 bytes sniffed for a magic and 1,024 chunks of 1 MiB: at
// 1,073,741,828 bytes it is 4 over the default limit (1 GiB) and stops,
// naming the file and the byte offset.
TEST(NcclCli, DevZeroStopsWithAMessage) {
  const auto r = run_bounded("nccl --json /dev/zero");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "ferret: /dev/zero: reading stopped at byte 1073741828: 1073741828 bytes since the "
                       "start without an NCCL line (limit 1073741824 bytes)"))
      << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["sources"][0]["bytes"], 1073741828);
}

// Endless stdin with the limit made small: /dev/zero on stdin, and a `yes`-like file of 8 MiB of
// "y\n" after one NCCL line (44 bytes). The first read of a file or stdin is the 4 bytes sniffed for
// a gzip/zstd magic, then 1 MiB chunks: /dev/zero stops at 4 + 1,048,576 = 1,048,580 (over the
// limit from the start); the `yes` file at 4 + 2 x 1,048,576 = 2,097,156, 2,097,112 bytes after
// the NCCL line, which is kept.
TEST(NcclCli, EndlessStdinStopsAtTheGivenLimit) {
  const auto zero = run_bounded("nccl --json --max-bytes-without-progress 1048576 -", "/dev/zero");
  ASSERT_EQ(zero.exit_code, 0) << zero.err;
  EXPECT_TRUE(contains(zero.err, "ferret: -: reading stopped at byte 1048580: 1048580 bytes since the start"))
      << zero.err;

  const std::string path = test::temp_path("nccl_yes.log");
  std::string yes = "h:1:1 [0] NCCL INFO cudaDriverVersion 12020\n";
  for (int i = 0; i < 4 << 20; ++i) yes += "y\n";
  test::write_file(path, yes);
  const auto r = run_bounded("nccl --json --max-bytes-without-progress 1048576 -", path);
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["sources"][0]["stopped"],
            "reading stopped at byte 2097156: 2097112 bytes since byte 44 without an NCCL line (limit 1048576 "
            "bytes); what came before is kept");
  EXPECT_EQ(j["lines"]["nccl"], 1);
  EXPECT_TRUE(contains(r.err, "ferret: -: reading stopped at byte 2097156")) << r.err;
}

// Endless *valid* lines make progress on every line, so only a memory bound stops them: reading
// stops once ferret holds more than --max-memory, at a multiple of the 8,192 lines between
// checks, and every line before is kept. Sizes are accepted with units (1MiB).
TEST(NcclCli, EndlessValidLinesStopAtMaxMemory) {
  const std::string line = "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 busId 1a000 commId 0x1 - Init START";
  const std::string out = test::temp_path("nccl_endless.out");
  const auto r = test::run_shell("yes '" + line + "' | timeout 120 {ferret} nccl --json --max-memory 48MiB " +
                                 "--max-bytes-without-progress 1MiB - > " + out);
  const std::string doc_text = test::read_file(out);
  std::remove(out.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(doc_text);
  const std::string stopped = j["sources"][0]["stopped"];
  EXPECT_TRUE(contains(stopped, "over --max-memory (48 MiB); what came before is kept")) << stopped;
  const std::uint64_t lines = j["lines"]["nccl"];
  EXPECT_GE(lines, 8192u);
  EXPECT_EQ(lines % 8192, 0u);
  EXPECT_TRUE(contains(stopped, "(NCCL line " + std::to_string(lines) + ")")) << stopped;
  // The byte offset is just past the last line kept: every line has the same length.
  EXPECT_TRUE(contains(stopped, "reading stopped at byte " + std::to_string(lines * (line.size() + 1)))) << stopped;
  EXPECT_TRUE(contains(r.err, "over --max-memory")) << r.err;

  EXPECT_EQ(run_ferret("nccl --max-bytes-without-progress lots " + corpus("two_host_ib_gdr.log")).exit_code, 2);
}

TEST(NcclCli, TraceCrossCheck) {
  // 268,435,456 B AllReduce over 8 ranks in 10 ms: busbw 46.98 GB/s against 2 x 400 Gb/s IB.
  const std::string trace = test::temp_path("nccl_trace.json");
  test::write_file(trace, R"J({
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85520809984, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},
  "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", "pid": 0, "tid": 20, "ts": 1000, "dur": 10000,
   "args": {"Collective name": "allreduce", "In msg nelems": 67108864, "Out msg nelems": 67108864, "Group size": 8, "dtype": "Float"}}
]})J");
  const auto r = run_ferret("nccl --json " + corpus("two_host_ib_gdr.log") + " --trace " + trace);
  const auto text = run_ferret("nccl " + corpus("two_host_ib_gdr.log") + " --trace " + trace);
  std::remove(trace.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["bandwidth"].size(), 1u);
  EXPECT_EQ(j["bandwidth"][0]["collective"], "AllReduce");
  EXPECT_NEAR(j["bandwidth"][0]["busbw_gbps"].get<double>(), 46.976, 1e-3);
  EXPECT_EQ(j["bandwidth"][0]["ceiling_gbps"], 100.0);
  EXPECT_NEAR(j["bandwidth"][0]["fraction_of_ceiling"].get<double>(), 0.47, 1e-3);
  EXPECT_TRUE(contains(text.out, "47% of 100.0 GB/s")) << text.out;
}

}  // namespace nccl_cli_test
}  // namespace
}  // namespace ferret
