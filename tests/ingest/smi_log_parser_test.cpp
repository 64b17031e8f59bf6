// GPU utilisation logs, one fixture per format under tests/data/smi/ (written from each tool's
// documented layout; the numbers below are the ones written into them), and the damage each
// reader must survive: [N/A] and `-` values, ragged rows, garbage lines, long lines, an empty
// file, a headerless CSV.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "base/input_error.h"
#include "ingest/smi/smi_log_parser.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace smi_log_parser_test {

std::string fixture(const std::string& name) {
  return test::read_file(std::string(FERRET_SOURCE_DIR) + "/tests/data/smi/" + name);
}

SmiLog parse_fixture(const std::string& name, const SmiReadOptions& options = {}) {
  return parse_smi_text(fixture(name), name, options);
}

// 2024-01-31 12:00:00 UTC in seconds since the epoch (Python: calendar.timegm).
constexpr std::int64_t kNoonS = 1706702400;
constexpr std::int64_t kNs = 1000000000;

TEST(SmiLogParser, SniffsEachFormatFromItsFirstLines) {
  EXPECT_EQ(sniff_smi_format(fixture("query-two-gpus.csv")), SmiFormat::kQueryCsv);
  EXPECT_EQ(sniff_smi_format(fixture("dmon-dt.txt")), SmiFormat::kDmon);
  EXPECT_EQ(sniff_smi_format(fixture("pmon.txt")), SmiFormat::kPmon);
  EXPECT_EQ(sniff_smi_format(fixture("dcgmi-dmon.txt")), SmiFormat::kDcgmiDmon);
  EXPECT_EQ(sniff_smi_format(fixture("dcgm-exporter.prom")), SmiFormat::kPrometheus);
  EXPECT_EQ(sniff_smi_format(fixture("rocm-smi.csv")), SmiFormat::kRocmSmiCsv);
  EXPECT_EQ(sniff_smi_format(fixture("amd-smi.csv")), SmiFormat::kAmdSmiCsv);
  EXPECT_EQ(sniff_smi_format(fixture("table-535-slurm.log")), SmiFormat::kSmiTable);  // job output first
  EXPECT_EQ(sniff_smi_format(fixture("table-418-unused-gpu.log")), SmiFormat::kSmiTable);
  EXPECT_EQ(sniff_smi_format(fixture("table-550-mig.log")), SmiFormat::kSmiTable);
  // The driver's failure names the tool but is no table.
  EXPECT_EQ(sniff_smi_format("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"),
            SmiFormat::kUnknown);
  EXPECT_EQ(sniff_smi_format("hello world\n"), SmiFormat::kUnknown);
  EXPECT_EQ(sniff_smi_format("a,b,c\n1,2,3\n"), SmiFormat::kUnknown);
}

TEST(SmiLogParser, TimesAreReadAsUtcToTheMillisecond) {
  EXPECT_EQ(parse_smi_time("2024/01/31 12:00:00.000"), kNoonS * kNs);
  EXPECT_EQ(parse_smi_time("2024/01/31 12:34:56.789"), (kNoonS + 34 * 60 + 56) * kNs + 789000000);
  EXPECT_EQ(parse_smi_time("2024-01-31 12:00:01"), (kNoonS + 1) * kNs);
  EXPECT_EQ(parse_smi_time("20240131 12:00:02"), (kNoonS + 2) * kNs);
  EXPECT_EQ(parse_smi_time("1970/01/01 00:00:00"), 0);
  for (const char* bad : {"", "2024/13/01 00:00:00", "2024/01/31", "2024/01/31 25:00:00", "9999/01/01 00:00:00",
                          "2024/01/31 12:00:00x", "abcd/01/31 12:00:00"})
    EXPECT_EQ(parse_smi_time(bad), kSmiNoTime) << bad;
}

TEST(SmiLogParser, QueryCsvWithUnitsTwoGpus) {
  const SmiLog log = parse_fixture("query-two-gpus.csv");
  ASSERT_EQ(log.sources.size(), 1u);
  const SmiSource& src = log.sources[0];
  EXPECT_EQ(src.format, SmiFormat::kQueryCsv);
  EXPECT_EQ(src.samples, 20u);
  EXPECT_EQ(src.skipped_lines, 1u);  // "Unable to determine the device handle ..."
  EXPECT_EQ(src.not_available, 1u);  // GPU 1's throttle reasons at 12:00:04 ([N/A]; fan.speed is not read)
  EXPECT_EQ(src.ignored_columns, std::vector<std::string>{"fan.speed"});
  ASSERT_EQ(log.gpus.size(), 2u);
  const SmiGpu& g0 = log.gpus[0];
  EXPECT_EQ(g0.key, "0");
  EXPECT_EQ(g0.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g0.uuid, "GPU-0aaa");
  ASSERT_EQ(g0.samples.size(), 10u);
  const SmiSample& s1 = g0.samples[1];
  EXPECT_EQ(s1.time_ns, (kNoonS + 1) * kNs);
  EXPECT_DOUBLE_EQ(s1.util_pct, 90);
  EXPECT_DOUBLE_EQ(s1.mem_used_mib, 40500);
  EXPECT_DOUBLE_EQ(s1.mem_total_mib, 81559);
  EXPECT_DOUBLE_EQ(s1.power_w, 690);
  EXPECT_DOUBLE_EQ(s1.power_limit_w, 700);
  EXPECT_DOUBLE_EQ(s1.sm_clock_mhz, 1800);
  EXPECT_DOUBLE_EQ(s1.max_sm_clock_mhz, 1980);
  EXPECT_EQ(s1.throttle_reasons, kSmiReasonSwPowerCap);
  EXPECT_DOUBLE_EQ(s1.temp_c, 70);
  EXPECT_EQ(log.gpus[1].samples[4].throttle_reasons, -1);  // [N/A]
  EXPECT_TRUE(g0.absolute_time);
}

TEST(SmiLogParser, HeaderlessCsvNeedsColumns) {
  try {
    parse_fixture("query-noheader.csv");
    FAIL() << "a headerless CSV was read without --columns";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--columns"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("query-noheader.csv"), std::string::npos) << e.what();
  }
  SmiReadOptions o;
  o.columns = "timestamp,index,utilization.gpu,memory.used";
  const SmiLog log = parse_fixture("query-noheader.csv", o);
  ASSERT_EQ(log.gpus.size(), 1u);
  ASSERT_EQ(log.gpus[0].samples.size(), 4u);
  EXPECT_DOUBLE_EQ(log.gpus[0].samples[3].util_pct, 40);        // nounits: plain numbers
  EXPECT_DOUBLE_EQ(log.gpus[0].samples[3].mem_used_mib, 1003);  // MiB by default
  EXPECT_EQ(log.gpus[0].samples[2].time_ns, (kNoonS + 2) * kNs + 500000000);
}

TEST(SmiLogParser, UtcOffsetMovesLocalTimesToUtc) {
  SmiReadOptions o;
  o.utc_offset_s = 2 * 3600;  // the log was written at UTC+2: 12:00 local is 10:00 UTC
  const SmiLog log = parse_fixture("query-two-gpus.csv", o);
  EXPECT_EQ(log.gpus[0].samples[0].time_ns, (kNoonS - 2 * 3600) * kNs);
}

TEST(SmiLogParser, DmonWithDateTimeAndRepeatedHeader) {
  const SmiLog log = parse_fixture("dmon-dt.txt");
  EXPECT_EQ(log.sources[0].format, SmiFormat::kDmon);
  EXPECT_EQ(log.sources[0].skipped_lines, 0u);  // the repeated header and units lines are not rows
  ASSERT_EQ(log.gpus.size(), 1u);
  const SmiGpu& g = log.gpus[0];
  ASSERT_EQ(g.samples.size(), 20u);
  EXPECT_TRUE(g.absolute_time);
  EXPECT_EQ(g.samples[19].time_ns, (kNoonS + 19) * kNs);
  EXPECT_DOUBLE_EQ(g.samples[4].util_pct, 2);
  EXPECT_DOUBLE_EQ(g.samples[1].power_w, 400);
  EXPECT_DOUBLE_EQ(g.samples[1].sm_clock_mhz, 1980);  // pclk
  EXPECT_EQ(g.samples[1].throttle_reasons, 0);        // pviol 0, tviol 0
}

TEST(SmiLogParser, PmonSumsProcessesPerGpuAndSample) {
  const SmiLog log = parse_fixture("pmon.txt");
  EXPECT_EQ(log.sources[0].format, SmiFormat::kPmon);
  ASSERT_EQ(log.gpus.size(), 2u);
  const SmiGpu& g0 = log.gpus[0];
  ASSERT_EQ(g0.samples.size(), 3u);
  // 40 + 30, 50 + 45, 60 + (- counts 0)
  EXPECT_DOUBLE_EQ(g0.samples[0].util_pct, 70);
  EXPECT_DOUBLE_EQ(g0.samples[1].util_pct, 95);
  EXPECT_DOUBLE_EQ(g0.samples[2].util_pct, 60);
  ASSERT_EQ(g0.processes.size(), 2u);
  EXPECT_EQ(g0.processes[0].pid, 4242);
  EXPECT_EQ(g0.processes[0].command, "python");
  EXPECT_DOUBLE_EQ(g0.processes[0].sm_pct_sum, 150);  // 40 + 50 + 60
  EXPECT_EQ(log.sources[0].not_available, 1u);        // pid 4343's sm in the last sample
  ASSERT_EQ(log.gpus[1].samples.size(), 3u);
  EXPECT_DOUBLE_EQ(log.gpus[1].samples[0].util_pct, 0);  // no process
  EXPECT_FALSE(g0.absolute_time);                        // pmon without -o DT prints no time
  EXPECT_EQ(g0.samples[2].time_ns, 2 * kNs);             // index x the 1 s interval
}

TEST(SmiLogParser, DcgmiDmonScalesFractionsAndReadsNa) {
  SmiReadOptions o;
  o.interval_s = 0.5;
  const SmiLog log = parse_fixture("dcgmi-dmon.txt", o);
  EXPECT_EQ(log.sources[0].format, SmiFormat::kDcgmiDmon);
  ASSERT_EQ(log.gpus.size(), 2u);
  EXPECT_EQ(log.gpus[0].key, "GPU 0");
  const SmiGpu& g0 = log.gpus[0];
  ASSERT_EQ(g0.samples.size(), 6u);
  EXPECT_DOUBLE_EQ(g0.samples[0].sm_active_pct, 50);
  EXPECT_DOUBLE_EQ(g0.samples[2].tensor_active_pct, 30);
  EXPECT_DOUBLE_EQ(g0.samples[0].sm_occupancy_pct, 25);
  EXPECT_DOUBLE_EQ(g0.samples[0].dram_active_pct, 30);
  EXPECT_DOUBLE_EQ(g0.samples[0].util_pct, 90);  // GPUTL is a percentage already
  EXPECT_TRUE(std::isnan(g0.samples[4].sm_active_pct));
  EXPECT_EQ(log.sources[0].not_available, 1u);
  EXPECT_EQ(g0.samples[5].time_ns, 5 * kNs / 2);  // 5 x 0.5 s
}

TEST(SmiLogParser, DcgmExporterScrapesBecomeASeries) {
  const SmiLog log = parse_fixture("dcgm-exporter.prom");
  EXPECT_EQ(log.sources[0].format, SmiFormat::kPrometheus);
  ASSERT_EQ(log.gpus.size(), 2u);
  const SmiGpu& g0 = log.gpus[0];
  EXPECT_EQ(g0.key, "node-a:0");
  EXPECT_EQ(g0.name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(g0.samples.size(), 3u);
  EXPECT_EQ(g0.samples[1].time_ns, 1706704801000LL * 1000000);
  EXPECT_DOUBLE_EQ(g0.samples[0].sm_active_pct, 90);
  EXPECT_DOUBLE_EQ(g0.samples[2].sm_active_pct, 70);
  EXPECT_DOUBLE_EQ(g0.samples[0].util_pct, 95);
  EXPECT_DOUBLE_EQ(g0.samples[0].tensor_active_pct, 25);
  EXPECT_DOUBLE_EQ(g0.samples[0].mem_used_mib, 1000);
  EXPECT_DOUBLE_EQ(g0.samples[0].mem_total_mib, 81000);  // used + free
  EXPECT_DOUBLE_EQ(g0.samples[0].power_w, 512.5);
  EXPECT_EQ(log.sources[0].ignored_columns, std::vector<std::string>{"DCGM_FI_DEV_XID_ERRORS"});
}

TEST(SmiLogParser, ExporterTimestampsPastInt64NanosecondsAreSkipped) {
  // Found by smi_fuzzer: a millisecond stamp whose nanoseconds overflow int64 (here 1.7e15 ms, a
  // timestamp written in microseconds) is not a time; the line is counted, never multiplied.
  const std::string line = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 95 ";
  const std::string text =
      line + "1706704800000\n" + line + "1706704801001000\n" + line + "9223372036854\n" + line + "4000000000000\n";
  const SmiLog log = parse_smi_text(text, "stamps.prom");
  EXPECT_EQ(log.sources[0].skipped_lines, 2u);
  ASSERT_EQ(log.gpus.size(), 1u);
  ASSERT_EQ(log.gpus[0].samples.size(), 2u);
  EXPECT_EQ(log.gpus[0].samples[1].time_ns, kSmiMaxTimeNs);  // the latest time kept
}

TEST(SmiLogParser, TimesPast2096AreSkipped) {
  // Found by smi_fuzzer: an amd-smi epoch of 6107702400 s (2163) beside 1706702400 s made the
  // span and period add past int64. Times beyond kSmiMaxTimeNs are skipped rows, so any two add.
  const std::string text = "gpu,timestamp,gfx_activity\n0,1706702400,80\n0,6107702400,80\n0,1706702401,85\n";
  const SmiLog log = parse_smi_text(text, "far.csv");
  EXPECT_EQ(log.sources[0].skipped_lines, 1u);
  ASSERT_EQ(log.gpus.size(), 1u);
  ASSERT_EQ(log.gpus[0].samples.size(), 2u);
  EXPECT_EQ(log.gpus[0].samples[1].time_ns, (kNoonS + 1) * kNs);
  const SmiLog query = parse_smi_text(
      "timestamp, index, utilization.gpu [%]\n2096/10/02 00:00:00.000, 0, 5 %\n2096/10/03 00:00:00.000, 0, 5 %\n",
      "late.csv");
  EXPECT_EQ(query.sources[0].skipped_lines, 1u);  // the first is before kSmiMaxTimeNs, the second after
  EXPECT_LE(query.gpus[0].samples[0].time_ns, kSmiMaxTimeNs);
}

TEST(SmiLogParser, RocmSmiConcatenatedRuns) {
  const SmiLog log = parse_fixture("rocm-smi.csv");
  EXPECT_EQ(log.sources[0].format, SmiFormat::kRocmSmiCsv);
  ASSERT_EQ(log.gpus.size(), 2u);
  EXPECT_EQ(log.gpus[0].key, "card0");
  ASSERT_EQ(log.gpus[0].samples.size(), 3u);
  EXPECT_DOUBLE_EQ(log.gpus[0].samples[1].util_pct, 98);
  EXPECT_DOUBLE_EQ(log.gpus[0].samples[1].mem_used_mib, 20 * 1024);  // 20 GiB in bytes
  EXPECT_DOUBLE_EQ(log.gpus[0].samples[1].mem_total_mib, 206141652992.0 / (1 << 20));
  EXPECT_DOUBLE_EQ(log.gpus[0].samples[1].power_limit_w, 750);
  EXPECT_FALSE(log.gpus[0].absolute_time);
}

TEST(SmiLogParser, AmdSmiMetricCsvWithEpochTimes) {
  const SmiLog log = parse_fixture("amd-smi.csv");
  EXPECT_EQ(log.sources[0].format, SmiFormat::kAmdSmiCsv);
  ASSERT_EQ(log.gpus.size(), 2u);
  const SmiGpu& g0 = log.gpus[0];
  ASSERT_EQ(g0.samples.size(), 3u);
  EXPECT_TRUE(g0.absolute_time);
  EXPECT_EQ(g0.samples[2].time_ns, (kNoonS + 2) * kNs);
  EXPECT_DOUBLE_EQ(g0.samples[2].util_pct, 90);
  EXPECT_DOUBLE_EQ(g0.samples[0].power_w, 700);
  EXPECT_DOUBLE_EQ(g0.samples[0].power_limit_w, 750);
  EXPECT_DOUBLE_EQ(g0.samples[0].mem_total_mib, 196592);
  EXPECT_TRUE(std::isnan(log.gpus[1].samples[0].util_pct));  // N/A
}

TEST(SmiLogParser, BrokenInputsAreCountedNeverFatal) {
  const std::string header = "timestamp, index, utilization.gpu [%]\n";
  const std::string good = "2024/01/31 12:00:00.000, 0, 50 %\n";
  // Ragged (one field short, one too many), garbage, a huge line, [N/A], binary bytes.
  const std::string text = header + good + "2024/01/31 12:00:01.000, 0\n" + "2024/01/31 12:00:02.000, 0, 60 %, 7\n" +
                           "garbage line\n" + std::string(kSmiMaxLineBytes + 10, 'x') + "\n" +
                           "2024/01/31 12:00:03.000, 0, [N/A]\n" + std::string("\x01\x02\xff,\x00,zz\n", 9) + good;
  const SmiLog log = parse_smi_text(text, "broken.csv");
  const SmiSource& s = log.sources[0];
  EXPECT_EQ(s.long_lines, 1u);
  EXPECT_EQ(s.ragged_rows, 2u);    // kept: 2 of 3 and 4 of 3 fields are readable
  EXPECT_EQ(s.skipped_lines, 3u);  // garbage, the long line, the binary row
  EXPECT_EQ(s.not_available, 1u);
  ASSERT_EQ(log.gpus.size(), 1u);
  EXPECT_EQ(log.gpus[0].samples.size(), 5u);
  EXPECT_FALSE(s.skipped_examples.empty());
  for (const std::string& e : s.skipped_examples) EXPECT_EQ(e.find('\x01'), std::string::npos);
  EXPECT_THROW(parse_smi_text("", "empty.csv"), InputError);
  EXPECT_THROW(parse_smi_text("\n\n  \n", "blank.csv"), InputError);
  EXPECT_THROW(parse_smi_text("just some text\n", "text.log"), InputError);
}

TEST(SmiLogParser, HostileCountsStayBounded) {
  // 5,000 GPU indexes: the first kSmiMaxGpus are kept, the rest counted.
  std::string text = "index, utilization.gpu [%]\n";
  for (int i = 0; i < 5000; ++i) text += std::to_string(i) + ", 50 %\n";
  const SmiLog log = parse_smi_text(text, "many.csv");
  EXPECT_EQ(log.gpus.size(), kSmiMaxGpus);
  EXPECT_EQ(log.sources[0].ignored_gpus, 5000 - kSmiMaxGpus);
  // pmon rows with ever new pids on one GPU: samples close at kSmiMaxProcesses rows.
  std::string pmon = "# gpu pid type sm mem enc dec command\n";
  for (int i = 0; i < 3000; ++i) pmon += "0 " + std::to_string(i) + " C 1 0 - - p\n";
  const SmiLog p = parse_smi_text(pmon, "pmon.txt");
  EXPECT_EQ(p.gpus[0].processes.size(), kSmiMaxProcesses);
  EXPECT_GE(p.gpus[0].samples.size(), 3000 / kSmiMaxProcesses);
}

// One corrupted cell among 600 samples: the row is damaged, skipped and counted, and nothing else
// moves. Before: a 3,000,000% utilisation made the mean 5,030%; an unreadable time (2024/13/31)
// made the whole GPU's series relative; 4e12 MiB used gave a negative headroom.
std::string query_log(int rows, int bad_row, const std::string& bad_time, const std::string& bad_util,
                      const std::string& bad_used) {
  std::string text =
      "timestamp, index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W]\n";
  for (int i = 0; i < rows; ++i) {
    const bool bad = i == bad_row;
    text +=
        fmt::format("{}, 0, NVIDIA H100, {} %, {} MiB, 81559 MiB, 400 W\n",
                    bad && !bad_time.empty() ? bad_time : fmt::format("2024/01/31 12:{:02}:{:02}.000", i / 60, i % 60),
                    bad && !bad_util.empty() ? bad_util : std::to_string(i % 2 == 0 ? 20 : 40),
                    bad && !bad_used.empty() ? bad_used : "40000");
  }
  return text;
}

TEST(SmiLogParser, ARowWithAValueNoGpuReportsIsSkippedAndCounted) {
  struct Case {
    std::string time, util, used, why;
  };
  for (const Case& c :
       {Case{"", "3000000", "", "a utilisation outside 0-100%"}, Case{"", "-5", "", "a utilisation outside 0-100%"},
        Case{"2024/13/31 12:00:00.000", "", "", "a time that cannot be read"},
        Case{"9999/01/31 12:00:00.000", "", "", "a time that cannot be read"},
        Case{"", "", "4000000000000", "a memory size outside 0-16 TiB"},
        Case{"", "", "90000", "memory used above the GPU's total"}}) {
    // Row 301 is odd: its utilisation would have been 40%.
    const SmiLog log = parse_smi_text(query_log(600, 301, c.time, c.util, c.used), "t.csv");
    ASSERT_EQ(log.gpus.size(), 1u) << c.why;
    const SmiGpu& gpu = log.gpus[0];
    EXPECT_TRUE(gpu.absolute_time) << c.why;
    ASSERT_EQ(gpu.samples.size(), 599u) << c.why;
    EXPECT_EQ(log.sources[0].skipped_lines, 1u) << c.why;
    ASSERT_EQ(log.sources[0].skipped_examples.size(), 1u) << c.why;
    EXPECT_EQ(log.sources[0].skipped_examples[0], "line 303: " + c.why);
    double sum = 0, most_used = 0;
    for (const SmiSample& smp : gpu.samples) sum += smp.util_pct, most_used = std::max(most_used, smp.mem_used_mib);
    EXPECT_DOUBLE_EQ(sum, 300 * 20.0 + 299 * 40.0) << c.why;
    EXPECT_EQ(most_used, 40000) << c.why;
    EXPECT_EQ(gpu.samples.back().time_ns, (kNoonS + 599) * kNs) << c.why;
  }
}

// ---- nvidia-smi's default table ---------------------------------------------------------------

// 2026-12-06 10:15:01, 2022-01-31 12:00:00 and 2025-03-04 09:30:00 UTC in seconds since the epoch
// (Python: calendar.timegm): the date lines of the three table fixtures.
constexpr std::int64_t kTable535S = 1796552101;
constexpr std::int64_t kTable418S = 1643630400;
constexpr std::int64_t kTable550S = 1741080600;

TEST(SmiLogParser, TableSlurmLogThreeTablesTwoGpus) {
  // Driver 535's layout, a table every 5 s between the job's own lines (`set -x` and the training
  // log): 2 + 4 + 3 + 1 = 10 lines of job output, each skipped and counted.
  const SmiLog log = parse_fixture("table-535-slurm.log");
  ASSERT_EQ(log.sources.size(), 1u);
  const SmiSource& src = log.sources[0];
  EXPECT_EQ(src.format, SmiFormat::kSmiTable);
  EXPECT_EQ(src.samples, 6u);
  EXPECT_EQ(src.skipped_lines, 10u);
  EXPECT_EQ(src.not_available, 0u);  // the fans' N/A is not read
  ASSERT_FALSE(src.skipped_examples.empty());
  EXPECT_EQ(src.skipped_examples[0], "line 1: not nvidia-smi table text");
  ASSERT_EQ(log.gpus.size(), 2u);
  const SmiGpu& g0 = log.gpus[0];
  EXPECT_EQ(g0.key, "0");
  EXPECT_EQ(g0.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g0.bus_id, "00000000:07:00.0");
  EXPECT_EQ(log.gpus[1].bus_id, "00000000:0F:00.0");
  EXPECT_TRUE(g0.absolute_time);
  ASSERT_EQ(g0.samples.size(), 3u);
  ASSERT_EQ(log.gpus[1].samples.size(), 3u);
  // The values written into the fixture: GPU 0 90/100/80 %, GPU 1 40/50/60 %.
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(g0.samples[k].time_ns, (kTable535S + 5 * static_cast<std::int64_t>(k)) * kNs) << k;
    EXPECT_EQ(log.gpus[1].samples[k].time_ns, g0.samples[k].time_ns) << k;
    EXPECT_DOUBLE_EQ(log.gpus[1].samples[k].util_pct, 40 + 10 * static_cast<double>(k)) << k;
    EXPECT_DOUBLE_EQ(g0.samples[k].mem_total_mib, 81920) << k;
    EXPECT_DOUBLE_EQ(g0.samples[k].power_limit_w, 400) << k;
  }
  EXPECT_DOUBLE_EQ(g0.samples[0].util_pct, 90);
  EXPECT_DOUBLE_EQ(g0.samples[1].util_pct, 100);
  EXPECT_DOUBLE_EQ(g0.samples[2].util_pct, 80);
  const SmiSample& s1 = g0.samples[1];  // `| N/A   55C    P0   355W / 400W |  40530MiB / 81920MiB |   100%   Default |`
  EXPECT_DOUBLE_EQ(s1.temp_c, 55);
  EXPECT_DOUBLE_EQ(s1.power_w, 355);
  EXPECT_DOUBLE_EQ(s1.mem_used_mib, 40530);
  EXPECT_EQ(s1.line, 40u);  // the GPU's first line in the second table
  // The same log with the clock at UTC+1: 10:15:01 local is 09:15:01 UTC.
  SmiReadOptions east;
  east.utc_offset_s = 3600;
  EXPECT_EQ(parse_fixture("table-535-slurm.log", east).gpus[0].samples[0].time_ns, (kTable535S - 3600) * kNs);
}

TEST(SmiLogParser, TableOlderLayoutWithoutMigLine) {
  // Driver 418's narrower layout (`| N/A 34C P0 41W / 300W | 0MiB / 16130MiB | 0% Default |`, no
  // MIG M. line, truncated names), six tables 5 s apart as `nvidia-smi -l 5` writes them.
  const SmiLog log = parse_fixture("table-418-unused-gpu.log");
  const SmiSource& src = log.sources[0];
  EXPECT_EQ(src.format, SmiFormat::kSmiTable);
  EXPECT_EQ(src.skipped_lines, 0u);
  ASSERT_EQ(log.gpus.size(), 2u);
  EXPECT_EQ(log.gpus[0].name, "Tesla V100-SXM2...");
  const std::vector<double> util0 = {0, 96, 98, 100, 94, 92};
  const std::vector<double> power0 = {41, 250, 260, 270, 255, 245};
  ASSERT_EQ(log.gpus[0].samples.size(), 6u);
  ASSERT_EQ(log.gpus[1].samples.size(), 6u);
  for (std::size_t k = 0; k < 6; ++k) {
    const SmiSample& s = log.gpus[0].samples[k];
    EXPECT_EQ(s.time_ns, (kTable418S + 5 * static_cast<std::int64_t>(k)) * kNs) << k;
    EXPECT_DOUBLE_EQ(s.util_pct, util0[k]) << k;
    EXPECT_DOUBLE_EQ(s.power_w, power0[k]) << k;
    EXPECT_DOUBLE_EQ(s.power_limit_w, 300) << k;
    EXPECT_DOUBLE_EQ(s.mem_used_mib, k == 0 ? 0 : 15000) << k;
    EXPECT_DOUBLE_EQ(s.mem_total_mib, 16130) << k;
    const SmiSample& idle = log.gpus[1].samples[k];
    EXPECT_DOUBLE_EQ(idle.util_pct, 0) << k;
    EXPECT_DOUBLE_EQ(idle.mem_used_mib, 0) << k;
    EXPECT_DOUBLE_EQ(idle.temp_c, 36) << k;
  }
}

TEST(SmiLogParser, TableMigDevicesAreNotGpus) {
  // Driver 550's wider layout; GPU 1 in MIG mode prints GPU-Util N/A, and the `MIG devices:` table
  // below (`|  1    1   0   0  |  30112MiB / 40448MiB | ...`) holds slices, not GPUs.
  const SmiLog log = parse_fixture("table-550-mig.log");
  const SmiSource& src = log.sources[0];
  EXPECT_EQ(src.skipped_lines, 0u);
  EXPECT_EQ(src.not_available, 2u);  // GPU 1's utilisation in each of the two tables
  ASSERT_EQ(log.gpus.size(), 2u);
  const SmiGpu& g0 = log.gpus[0];
  const SmiGpu& g1 = log.gpus[1];
  EXPECT_EQ(g0.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g1.bus_id, "00000000:2A:00.0");
  ASSERT_EQ(g0.samples.size(), 2u);
  ASSERT_EQ(g1.samples.size(), 2u);
  EXPECT_EQ(g0.samples[1].time_ns, (kTable550S + 10) * kNs);
  EXPECT_DOUBLE_EQ(g0.samples[0].util_pct, 97);
  EXPECT_DOUBLE_EQ(g0.samples[1].util_pct, 99);
  EXPECT_DOUBLE_EQ(g0.samples[1].power_w, 530);
  EXPECT_DOUBLE_EQ(g0.samples[1].power_limit_w, 700);
  EXPECT_DOUBLE_EQ(g0.samples[1].mem_used_mib, 60440);
  EXPECT_DOUBLE_EQ(g0.samples[1].mem_total_mib, 81559);
  EXPECT_TRUE(std::isnan(g1.samples[0].util_pct));
  EXPECT_DOUBLE_EQ(g1.samples[0].mem_used_mib, 30112);  // the GPU's, not its slice's 40448 total
  EXPECT_DOUBLE_EQ(g1.samples[0].mem_total_mib, 81559);
  EXPECT_DOUBLE_EQ(g1.samples[0].temp_c, 38);
}

// One table of driver 535's layout: a GPU at `util` %, its date line given apart.
std::string one_table(const std::string& date_line, int util) {
  return date_line + "\n" +
         "+---------------------------------------------------------------------------------------+\n"
         "| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
         "|=========================================+======================+======================|\n"
         "|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |\n" +
         fmt::format("| N/A   33C    P0              62W / 400W |      4MiB / 81920MiB |    {:>3}%      Default |\n",
                     util) +
         "+-----------------------------------------+----------------------+----------------------+\n";
}

TEST(SmiLogParser, TableWithoutDateLinesIsInSampleOrder) {
  // A script that greps the table away from its date: samples k x --interval apart.
  SmiReadOptions o;
  o.interval_s = 5;
  const SmiLog log = parse_smi_text(one_table("", 10) + one_table("", 20) + one_table("", 30), "nodate.log", o);
  ASSERT_EQ(log.gpus.size(), 1u);
  const SmiGpu& g = log.gpus[0];
  EXPECT_FALSE(g.absolute_time);
  ASSERT_EQ(g.samples.size(), 3u);
  EXPECT_EQ(g.samples[2].time_ns, 10 * kNs);
  EXPECT_DOUBLE_EQ(g.samples[2].util_pct, 30);
  // `watch nvidia-smi` redirected to a file: its header carries the date, screens start with
  // terminal control sequences.
  const std::string watch =
      one_table("\x1b[?1049h\x1b[H\x1b[2JEvery 2.0s: nvidia-smi                  gpu017: Mon Jan 31 12:00:00 2022",
                40) +
      one_table("\x1b[H\x1b[2JEvery 2.0s: nvidia-smi                  gpu017: Mon Jan 31 12:00:02 2022", 50);
  const SmiLog w = parse_smi_text(watch, "watch.log");
  ASSERT_EQ(w.gpus.size(), 1u);
  ASSERT_EQ(w.gpus[0].samples.size(), 2u);
  EXPECT_TRUE(w.gpus[0].absolute_time);
  EXPECT_EQ(w.gpus[0].samples[1].time_ns, (kTable418S + 2) * kNs);
  EXPECT_DOUBLE_EQ(w.gpus[0].samples[1].util_pct, 50);
  EXPECT_EQ(w.sources[0].skipped_lines, 0u);
}

TEST(SmiLogParser, TableFanPercentIsNotTheUtilisation) {
  // A GPU with a fan prints its speed first (`30%`); GPU-Util is the % after Memory-Usage. `ERR!`
  // (a reading the driver failed to take) is not available.
  const std::string table =
      "| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
      "|   0  NVIDIA GeForce RTX 3090        Off | 00000000:01:00.0  On |                  N/A |\n"
      "| 30%   45C    P2             120W / 350W |  10240MiB / 24576MiB |     98%      Default |\n"
      "|   1  NVIDIA GeForce RTX 3090        Off | 00000000:02:00.0 Off |                  N/A |\n"
      "| 41%   ERR!   P2             ERR! / 350W |  10240MiB / 24576MiB |     12%      Default |\n";
  const SmiLog log = parse_smi_text(table, "rtx.log");
  ASSERT_EQ(log.gpus.size(), 2u);
  const SmiSample& s = log.gpus[0].samples.at(0);
  EXPECT_EQ(log.gpus[0].name, "NVIDIA GeForce RTX 3090");
  EXPECT_DOUBLE_EQ(s.util_pct, 98);
  EXPECT_DOUBLE_EQ(s.temp_c, 45);
  EXPECT_DOUBLE_EQ(s.power_w, 120);
  EXPECT_DOUBLE_EQ(s.power_limit_w, 350);
  EXPECT_DOUBLE_EQ(s.mem_used_mib, 10240);
  EXPECT_DOUBLE_EQ(s.mem_total_mib, 24576);
  const SmiSample& err = log.gpus[1].samples.at(0);
  EXPECT_DOUBLE_EQ(err.util_pct, 12);
  EXPECT_TRUE(std::isnan(err.power_w));
  EXPECT_DOUBLE_EQ(err.power_limit_w, 350);
  EXPECT_TRUE(std::isnan(err.temp_c));
  EXPECT_EQ(log.sources[0].not_available, 1u);  // the power draw (a lone ERR! temperature is not counted)
}

TEST(SmiLogParser, TableDamageIsCountedNeverFatal) {
  const std::string date = "Mon Jan 31 12:00:00 2022";
  std::string text = one_table(date, 50);
  // A GPU's first line whose readings line never comes (the job's output cut the table), a
  // readings line of garbage, a `|` line of the job's own, and a table cut inside its last row.
  text += "|   1  NVIDIA A100-SXM4-80GB          On  | 00000000:0F:00.0 Off |                    0 |\n";
  text += "| epoch | loss | lr |\n";
  text += "|   2  NVIDIA A100-SXM4-80GB          On  | 00000000:10:00.0 Off |                    0 |\n";
  text += "| zz | yy | xx |\n";
  text += one_table("Mon Jan 31 12:00:05 2022", 70);
  text += "|   3  NVIDIA A100-SXM4-80GB          On  | 00000000:11:00.0 Off |";
  const SmiLog log = parse_smi_text(text, "damaged.log");
  const SmiSource& src = log.sources[0];
  // GPU 1's readings line is the job's `| epoch | loss | lr |` (no value, skipped), GPU 2's is
  // garbage (skipped); GPU 3's first line is cut short of its third cell: not a GPU line.
  EXPECT_EQ(src.skipped_lines, 3u);
  ASSERT_EQ(log.gpus.size(), 1u);
  ASSERT_EQ(log.gpus[0].samples.size(), 2u);
  EXPECT_DOUBLE_EQ(log.gpus[0].samples[1].util_pct, 70);
  // A version line and no GPU row: read, no sample (the CLI exits 2 on it).
  const SmiLog empty = parse_smi_text(one_table(date, 0).substr(0, 200), "header-only.log");
  EXPECT_EQ(empty.sources[0].samples, 0u);
}

TEST(SmiLogParser, ARefusedLogNamesTheFileTheLineAndTheCommandThatWritesOne) {
  try {
    parse_smi_text("\nepoch 1 step 100 loss 2.31\nepoch 1 step 200 loss 2.10\n", "train.out");
    FAIL() << "a training log was read as a GPU utilisation log";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("train.out: not a GPU utilisation log"), std::string::npos) << what;
    EXPECT_NE(what.find("line 2 (`epoch 1 step 100 loss 2.31`)"), std::string::npos) << what;
    EXPECT_NE(what.find("nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,memory.used,memory.total,"
                        "power.draw,temperature.gpu --format=csv -l 1"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("nvidia-smi -l 5"), std::string::npos) << what;
  }
}

}  // namespace smi_log_parser_test
}  // namespace
}  // namespace ferret
