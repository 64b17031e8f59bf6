// The NCCL text report fits the layout width (--width / COLUMNS) on every log in tests/data/nccl:
// its tables shrink and drop optional columns instead of running past the edge, and what they
// show is the same at 60 columns as at 160 (the host names, versions and communicator rows).
#include "report/nccl/nccl_report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/nccl/nccl_setup.h"
#include "diagnosis/nccl/rules_nccl.h"
#include "ingest/nccl/nccl_log_parser.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace nccl_report_test {

namespace fs = std::filesystem;

std::string report_at(const std::string& path, std::size_t width) {
  NcclLog log;
  parse_nccl_file(path, log);
  const NcclSetup setup = analyze_nccl_setup(log);
  std::vector<Finding> findings;
  rules_nccl(setup, findings);
  Style st;
  st.width = width;
  return nccl_text(setup, findings, {}, st);
}

TEST(NcclText, EveryLogFitsTheWidth) {
  std::size_t logs = 0;
  for (const auto& entry : fs::directory_iterator(std::string(FERRET_SOURCE_DIR) + "/tests/data/nccl")) {
    ++logs;
    for (std::size_t width : {40u, 60u, 80u}) {
      SCOPED_TRACE(entry.path().filename().string() + " at " + std::to_string(width));
      const std::string text = report_at(entry.path().string(), width);
      EXPECT_LE(test::longest_line(text), width) << text;
    }
  }
  EXPECT_GE(logs, 10u);
}

TEST(NcclText, NarrowTablesKeepTheirRows) {
  const std::string path = std::string(FERRET_SOURCE_DIR) + "/tests/data/nccl/two_host_ib_gdr.log";
  const std::string narrow = report_at(path, 60);
  // One line per host, per rank and per communicator, with the names whole at 60 columns.
  EXPECT_NE(narrow.find("  node-a 0-3       4 2.18.5+cuda12.2 IB x2   on\n"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("  node-b 4-7       4 2.18.5+cuda12.2 IB x2   on\n"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("     5 node-b 505   1 2b000 2.18.5     ok P2P/IPC 2\n"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("8       8        8     2        - job\n"), std::string::npos) << narrow;
  // Wide, the communicator id is whole too; at 40 the optional columns (pid, bus id) are gone
  // but every rank keeps its row.
  const std::string wide = report_at(path, 160);
  EXPECT_NE(wide.find("0x1c2b3a4d5e6f7081"), std::string::npos) << wide;
  const std::string tiny = report_at(path, 40);
  EXPECT_EQ(tiny.find("busId"), std::string::npos) << tiny;
  for (const char* rank : {"     0 node-a", "     7 node-b"}) EXPECT_NE(tiny.find(rank), std::string::npos) << tiny;
}

}  // namespace nccl_report_test
}  // namespace
}  // namespace ferret
