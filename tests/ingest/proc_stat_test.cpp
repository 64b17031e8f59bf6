// /proc/PID/stat lines and the process tree built from them (ingest/proc/proc_stat.h,
// ingest/proc/process_tree.h): lines written by hand in proc(5)'s layout, and trees of hand-made scans
// whose CPU per role is computed by hand in the comments.
#include <gtest/gtest.h>

#include <filesystem>

#include "ingest/proc/memory_limit.h"
#include "ingest/proc/proc_stat.h"
#include "ingest/proc/process_tree.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace proc_stat_test {

// A stat line with the fields ferret reads placed by number (proc(5)): 1 pid, 2 comm, 3 state,
// 4 ppid, 14 utime, 15 stime, 16 cutime, 17 cstime, 22 starttime; the others 0, 52 fields in all.
std::string stat_line(int pid, const std::string& comm, int ppid, std::uint64_t utime, std::uint64_t stime,
                      std::uint64_t cutime, std::uint64_t cstime, std::uint64_t start, char state = 'S') {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on " " + std::to_string(...).
  std::string line = std::to_string(pid);
  line += " (";
  line += comm;
  line += ") ";
  line += state;
  line += " ";
  line += std::to_string(ppid);
  for (int field = 5; field <= 52; ++field) {
    std::uint64_t v = 0;
    if (field == 14) v = utime;
    if (field == 15) v = stime;
    if (field == 16) v = cutime;
    if (field == 17) v = cstime;
    if (field == 22) v = start;
    if (field == 20) v = 1;  // num_threads
    line += ' ';
    line += std::to_string(v);
  }
  return line + "\n";
}

ProcStat stat_of(int pid, const std::string& comm, int ppid, std::uint64_t own, std::uint64_t reaped,
                 std::uint64_t start) {
  return *parse_proc_stat(stat_line(pid, comm, ppid, own, 0, reaped, 0, start));
}

TEST(ProcStat, ReadsTheFieldsByNumber) {
  // As the kernel writes it for a sleeping python3 (fields after 22 trimmed to a few).
  const auto s = parse_proc_stat(
      "4242 (python3) S 4200 4242 4200 34816 4242 4194304 1234 0 0 0 250 31 7 2 20 0 3 0 987654 123456789 4321 "
      "18446744073709551615\n");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, 4242);
  EXPECT_EQ(s->comm, "python3");
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->ppid, 4200);
  EXPECT_EQ(s->utime, 250u);
  EXPECT_EQ(s->stime, 31u);
  EXPECT_EQ(s->cutime, 7u);
  EXPECT_EQ(s->cstime, 2u);
  EXPECT_EQ(s->starttime, 987654u);
  EXPECT_EQ(s->own(), 281u);
  EXPECT_EQ(s->reaped(), 9u);
}

TEST(ProcStat, CommMayHoldSpacesAndParentheses) {
  // comm runs from the first '(' to the last ')': a name such as "python (worker)" or ") 1 2 (".
  auto s = parse_proc_stat(stat_line(77, "python (worker)", 76, 5, 6, 0, 0, 100, 'R'));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->comm, "python (worker)");
  EXPECT_EQ(s->state, 'R');
  EXPECT_EQ(s->ppid, 76);
  EXPECT_EQ(s->own(), 11u);
  s = parse_proc_stat(stat_line(78, ") 9 9 (", 1, 3, 0, 0, 0, 5));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->comm, ") 9 9 (");
  EXPECT_EQ(s->ppid, 1);
  EXPECT_EQ(s->utime, 3u);
  s = parse_proc_stat(stat_line(79, "", 1, 3, 0, 0, 0, 5));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->comm, "");
}

TEST(ProcStat, RefusesLinesOfAnotherShape) {
  const std::string good = stat_line(10, "sh", 1, 1, 2, 3, 4, 5);
  EXPECT_TRUE(parse_proc_stat(good).has_value());
  EXPECT_FALSE(parse_proc_stat("").has_value());
  EXPECT_FALSE(parse_proc_stat("10 sh S 1 2 3").has_value());                             // no parentheses
  EXPECT_FALSE(parse_proc_stat("10 (sh) S 1 2 3 4 5 6").has_value());                     // fewer than 22 fields
  EXPECT_FALSE(parse_proc_stat("x (sh)" + good.substr(good.find(')') + 1)).has_value());  // pid not a number
  EXPECT_FALSE(parse_proc_stat("0 (sh)" + good.substr(good.find(')') + 1)).has_value());  // pid 0
  EXPECT_FALSE(parse_proc_stat("10 (sh) S -1" + good.substr(good.find(" 1 ") + 2)).has_value());  // negative ppid
  std::string huge = good;
  huge.replace(huge.find(" 1 2 3 4 "), 9, " 1 99999999999999999999999 3 4 ");  // utime beyond 2^64
  EXPECT_FALSE(parse_proc_stat(huge).has_value());
  std::string overflow = stat_line(10, "sh", 1, std::uint64_t{1} << 61, 0, 0, 0, 5);  // beyond the 2^60 bound
  EXPECT_FALSE(parse_proc_stat(overflow).has_value());
}

TEST(ProcStat, ThisProcessParsesFromProc) {
  const std::vector<ProcStat> all = scan_proc();
  bool found = false;
  for (const ProcStat& s : all) found = found || s.pid == static_cast<int>(::getpid());
  EXPECT_TRUE(found);
  EXPECT_TRUE(scan_proc("/nonexistent-proc").empty());
}

TEST(CpuBudget, TheCgroupQuotaLowersTheAffinityCount) {
  EXPECT_DOUBLE_EQ(cpu_budget_from(8, std::nullopt, "").cores, 8);
  const CpuBudget b = cpu_budget_from(8, 2.5, "/sys/fs/cgroup/job/cpu.max");
  EXPECT_DOUBLE_EQ(b.cores, 2.5);
  EXPECT_NE(b.origin.find("cpu.max"), std::string::npos);
  EXPECT_DOUBLE_EQ(cpu_budget_from(2, 4.0, "x").cores, 2);  // a quota above the CPUs binds nothing
  EXPECT_GE(cpu_budget().cores, 0.01);
}

TEST(CpuBudget, CgroupV2CpuMaxSmallestAlongThePath) {
  namespace fs = std::filesystem;
  const std::string root = test::temp_path("cgroup-cpu-v2");
  fs::remove_all(root);
  fs::create_directories(root + "/batch/job-3");
  test::write_file(root + "/batch/cpu.max", "250000 100000\n");  // 2.5 cores for the batch
  test::write_file(root + "/batch/job-3/cpu.max", "max 100000\n");
  const auto q = cgroup_cpu_quota("0::/batch/job-3\n", root);
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(q->cores, 2.5);
  EXPECT_EQ(q->origin, root + "/batch/cpu.max");
  test::write_file(root + "/batch/job-3/cpu.max", "50000 100000\n");  // 0.5 below it
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/batch/job-3\n", root)->cores, 0.5);
  test::write_file(root + "/batch/job-3/cpu.max", "garbage\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/batch/job-3\n", root)->cores, 2.5);
  EXPECT_FALSE(cgroup_cpu_quota("0::/elsewhere\n", root).has_value());
  fs::remove_all(root);
}

TEST(CpuBudget, CgroupV1CfsQuota) {
  namespace fs = std::filesystem;
  const std::string root = test::temp_path("cgroup-cpu-v1");
  fs::remove_all(root);
  fs::create_directories(root + "/cpu/docker/abc");
  test::write_file(root + "/cpu/docker/abc/cpu.cfs_quota_us", "300000\n");
  test::write_file(root + "/cpu/docker/abc/cpu.cfs_period_us", "100000\n");
  test::write_file(root + "/cpu/docker/cpu.cfs_quota_us", "-1\n");  // none
  test::write_file(root + "/cpu/docker/cpu.cfs_period_us", "100000\n");
  const auto q = cgroup_cpu_quota("4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n", root);
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(q->cores, 3.0);
  fs::remove_all(root);
}

// A tree fed scan by scan.
struct ScriptedScans {
  std::vector<std::vector<ProcStat>> scans;
  std::size_t next = 0;
  ProcessTree::Scan scan() {
    return [this] { return scans.at(std::min(next++, scans.size() - 1)); };
  }
};

double role_cores(const CpuSample& s, ProcessRole r) { return s.cores[static_cast<int>(r)]; }

TEST(ProcessTree, RolesAndCpuPerIntervalByHand) {
  ScriptedScans script;
  // Scan 1: python3 100 (the command) with a forked python3 worker 101; 200 is not in the tree.
  script.scans.push_back({stat_of(100, "python3", 50, 30, 0, 1000), stat_of(101, "python3", 100, 40, 0, 1010),
                          stat_of(200, "python3", 1, 1000, 0, 10)});
  // Scan 2: 100 used 30 more ticks; 101 exited and was reaped: 100's reaped time grew by 55, of
  // which 40 were counted at scan 1, so 15 are 101's last ticks. A new helper `sh` 102 appeared.
  script.scans.push_back({stat_of(100, "python3", 50, 60, 55, 1000), stat_of(102, "sh", 100, 5, 0, 1040),
                          stat_of(200, "python3", 1, 2000, 0, 10)});
  // Scan 3: 100 reaped 10 more ticks from a child no scan saw; 102 is re-parented to init (100
  // did not exit; its parent changed anyway) and used 20 ticks; pid 101 names a new process
  // outside the tree (start time 5000).
  script.scans.push_back({stat_of(100, "python3", 50, 60, 65, 1000), stat_of(102, "sh", 1, 25, 0, 1040),
                          stat_of(101, "python3", 1, 500, 0, 5000)});
  ProcessTree tree(100, script.scan());
  // 100 ticks/s over 0.5 s: 50 ticks are one core.
  CpuSample s = tree.sample(0.5, 0.5, 100);
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kMain), 30.0 / 50);     // 0.6
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kWorkers), 40.0 / 50);  // 0.8
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kOther), 0);
  EXPECT_DOUBLE_EQ(s.busiest_main_cores, 0.6);
  EXPECT_EQ(s.processes, 2);
  EXPECT_EQ(s.workers, 1);

  s = tree.sample(1.0, 0.5, 100);
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kMain), 30.0 / 50);     // 60 - 30
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kWorkers), 15.0 / 50);  // 55 - 40: the exited worker's tail
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kOther), 5.0 / 50);     // sh, new: all its 5 ticks
  EXPECT_EQ(s.workers, 0);

  s = tree.sample(1.5, 0.5, 100);
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kMain), 0);
  // other: sh's 20 ticks (still a member after re-parenting) + 10 reaped ticks of an unseen child.
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kOther), 30.0 / 50);
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kWorkers), 0);
  EXPECT_DOUBLE_EQ(tree.short_lived_cpu_s(), 0.10);
  EXPECT_EQ(tree.alive_pids(), (std::vector<int>{100, 102}));

  const std::vector<WatchedProcess> ps = tree.processes();
  ASSERT_EQ(ps.size(), 3u);
  EXPECT_EQ(ps[0].pid, 100);
  EXPECT_EQ(ps[0].role, ProcessRole::kMain);
  EXPECT_DOUBLE_EQ(ps[0].cpu_s, 0.60);  // 30 + 30 ticks
  EXPECT_EQ(ps[1].pid, 101);
  EXPECT_EQ(ps[1].role, ProcessRole::kWorkers);
  EXPECT_DOUBLE_EQ(ps[1].cpu_s, 0.55);  // 40 + its 15-tick tail
  EXPECT_EQ(ps[2].comm, "sh");
  EXPECT_EQ(ps[2].role, ProcessRole::kOther);
  EXPECT_DOUBLE_EQ(ps[2].cpu_s, 0.25);
}

TEST(ProcessTree, ShellAboveThePythonMainAndDataWorkers) {
  ScriptedScans script;
  // bash 10 -> pt_main_thread 11 (torch renamed it) -> pt_data_worker 12, 13; bash is "other".
  script.scans.push_back({stat_of(10, "bash", 1, 1, 0, 100), stat_of(11, "pt_main_thread", 10, 50, 0, 101),
                          stat_of(12, "pt_data_worker", 11, 45, 0, 102),
                          stat_of(13, "pt_data_worker", 11, 40, 0, 103)});
  ProcessTree tree(10, script.scan());
  const CpuSample s = tree.sample(1, 1, 100);
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kMain), 0.50);
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kWorkers), 0.85);
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kOther), 0.01);
  EXPECT_EQ(s.workers, 2);
}

TEST(ProcessTree, WithoutPythonTheCommandIsTheMainProcess) {
  ScriptedScans script;
  script.scans.push_back({stat_of(10, "sh", 1, 2, 0, 100), stat_of(11, "yes", 10, 90, 0, 101)});
  ProcessTree tree(10, script.scan());
  const CpuSample s = tree.sample(1, 1, 100);
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kMain), 0.02);
  EXPECT_DOUBLE_EQ(role_cores(s, ProcessRole::kOther), 0.90);
  EXPECT_EQ(s.workers, 0);
}

TEST(ProcessTree, IsPythonComm) {
  EXPECT_TRUE(is_python_comm("python3.11"));
  EXPECT_TRUE(is_python_comm("pt_data_worker"));
  EXPECT_TRUE(is_main_python_comm("pt_main_thread"));
  EXPECT_FALSE(is_main_python_comm("pt_data_worker"));
  EXPECT_FALSE(is_python_comm("torchrun"));
  EXPECT_FALSE(is_python_comm("pt_elastic"));
}

}  // namespace proc_stat_test
}  // namespace
}  // namespace ferret
