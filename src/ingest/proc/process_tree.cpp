#include "ingest/proc/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <unordered_set>

namespace ferret {

namespace {

// A chain of parents longer than this is a cycle (pid reuse cannot make one with start times
// checked, but the walk stays bounded whatever the table holds).
constexpr int kMaxTreeDepth = 4096;
// Exited processes kept for the report; past this many, the exited ones are forgotten (their CPU
// still counted in the samples).
constexpr std::size_t kMaxTrackedProcesses = 8192;

std::uint64_t ticks_since(std::uint64_t now, std::uint64_t before) { return now > before ? now - before : 0; }

}  // namespace

std::vector<ProcStat> scan_proc(const std::string& proc_root) {
  std::vector<ProcStat> out;
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) return out;
  char buffer[4096];
  while (const dirent* e = ::readdir(dir)) {
    const char* name = e->d_name;
    if (*name < '1' || *name > '9') continue;
    const std::string path = proc_root + "/" + name + "/stat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // exited since readdir
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    ::close(fd);
    if (n <= 0) continue;
    if (auto s = parse_proc_stat(std::string_view(buffer, static_cast<std::size_t>(n)))) out.push_back(std::move(*s));
  }
  ::closedir(dir);
  return out;
}

ProcessTree::ProcessTree(int root_pid, Scan scan) : root_pid_(root_pid), scan_(std::move(scan)) {}

// Members: the root and the members already known, when still the same process, then their
// descendants (a child starts no earlier than its parent, which rules out a reused parent pid).
std::unordered_set<int> ProcessTree::find_members(
    const std::unordered_map<int, const ProcStat*>& by_pid,
    const std::unordered_map<int, std::vector<const ProcStat*>>& children) {
  std::unordered_set<int> members;
  std::deque<const ProcStat*> queue;
  auto same_process = [&](int pid, std::uint64_t start) {
    const auto it = by_pid.find(pid);
    return it != by_pid.end() && it->second->starttime == start ? it->second : nullptr;
  };
  if (const auto it = by_pid.find(root_pid_);
      it != by_pid.end() && (!root_seen_ || it->second->starttime == root_start_)) {
    root_seen_ = true;
    root_start_ = it->second->starttime;
    queue.push_back(it->second);
  }
  for (const auto& [pid, t] : tracked_)
    if (t.alive)
      if (const ProcStat* s = same_process(pid, t.starttime)) queue.push_back(s);
  while (!queue.empty()) {
    const ProcStat* s = queue.front();
    queue.pop_front();
    if (!members.insert(s->pid).second) continue;
    const auto kids = children.find(s->pid);
    if (kids == children.end()) continue;
    for (const ProcStat* c : kids->second)
      if (c->starttime >= s->starttime && !members.contains(c->pid)) queue.push_back(c);
  }
  return members;
}

CpuSample ProcessTree::sample(double t_s, double interval_s, double ticks_per_s, bool full_interval) {
  ticks_per_s_ = ticks_per_s > 0 ? ticks_per_s : 100;
  const std::vector<ProcStat> scan = scan_();
  std::unordered_map<int, const ProcStat*> by_pid;
  std::unordered_map<int, std::vector<const ProcStat*>> children;
  for (const ProcStat& s : scan) {
    by_pid[s.pid] = &s;
    children[s.ppid].push_back(&s);
  }

  const std::unordered_set<int> members = find_members(by_pid, children);

  // Members that are gone (or whose pid now names another process): what was counted of each is
  // subtracted from the reaped growth of its nearest living ancestor, which holds its whole time
  // once it has reaped it.
  std::unordered_map<int, std::uint64_t> already_counted;
  std::unordered_map<int, std::vector<int>> exited_below;  // living ancestor -> exited processes below it
  for (auto& [pid, t] : tracked_) {
    if (!t.alive) continue;
    const bool still = members.contains(pid) && by_pid.at(pid)->starttime == t.starttime;
    if (still) continue;
    t.alive = false;
    int up = t.parent;
    for (int depth = 0; depth < kMaxTreeDepth; ++depth) {
      const auto a = tracked_.find(up);
      if (a == tracked_.end()) break;
      if (a->second.alive && members.contains(up) && by_pid.at(up)->starttime == a->second.starttime) {
        already_counted[up] += t.own + t.reaped;
        exited_below[up].push_back(pid);
        break;
      }
      up = a->second.parent;
    }
  }

  // New members enter the table; a reused pid replaces the exited process it named.
  std::vector<std::pair<int, std::uint64_t>> deltas;  // pid -> ticks this interval (own)
  std::vector<std::pair<int, std::uint64_t>> tails;   // pid of a living parent -> reaped ticks not yet counted
  std::vector<int> member_pids(members.begin(), members.end());
  std::sort(member_pids.begin(), member_pids.end());  // first seen in one scan: listed by pid
  for (int pid : member_pids) {
    const ProcStat& s = *by_pid.at(pid);
    auto it = tracked_.find(pid);
    if (it == tracked_.end() || it->second.starttime != s.starttime) {
      Tracked t;
      t.order = next_order_++;
      t.parent = s.ppid;
      t.starttime = s.starttime;
      t.first_seen_s = t_s;
      it = tracked_.insert_or_assign(pid, std::move(t)).first;
      // Born since the last sample: all its time (and its reaped children's) is this interval's.
      deltas.emplace_back(pid, s.own() + s.reaped());
    } else {
      deltas.emplace_back(pid, ticks_since(s.own(), it->second.own));
      const std::uint64_t grown = ticks_since(s.reaped(), it->second.reaped);
      const auto counted = already_counted.find(pid);
      const std::uint64_t known = counted == already_counted.end() ? 0 : counted->second;
      if (grown > known) tails.emplace_back(pid, grown - known);
    }
    Tracked& t = it->second;
    t.comm = s.comm;
    t.own = s.own();
    t.reaped = s.reaped();
    t.alive = true;
    t.last_seen_s = t_s;
  }
  assign_roles();

  CpuSample out;
  out.t_s = t_s;
  out.interval_s = interval_s;
  const double per_tick = interval_s > 0 ? 1.0 / (ticks_per_s_ * interval_s) : 0;
  for (const auto& [pid, ticks] : deltas) {
    Tracked& t = tracked_.at(pid);
    t.counted += ticks;
    const double cores = static_cast<double>(ticks) * per_tick;
    if (full_interval) t.peak_cores = std::max(t.peak_cores, cores);
    out.cores[static_cast<int>(t.role)] += cores;
    if (t.role == ProcessRole::kMain) out.busiest_main_cores = std::max(out.busiest_main_cores, cores);
    ++out.processes;
    if (t.role == ProcessRole::kWorkers) ++out.workers;
  }
  for (const auto& [pid, ticks] : tails) {
    // The time of processes this one reaped since the last sample, beyond what was counted of
    // them: credited to the exited process it came from when one is known, else to the
    // short-lived children no sample saw (role other).
    // When several exited in one interval only their sum is known: each gets an equal share.
    const auto exited = exited_below.find(pid);
    ProcessRole role = ProcessRole::kOther;
    if (exited != exited_below.end()) {
      const std::vector<int>& gone = exited->second;
      role = tracked_.at(gone.front()).role;
      const std::uint64_t share = ticks / gone.size();
      for (std::size_t i = 0; i < gone.size(); ++i)
        tracked_.at(gone[i]).counted += share + (i == 0 ? ticks - share * gone.size() : 0);
    } else {
      short_lived_ticks_ += ticks;
    }
    out.cores[static_cast<int>(role)] += static_cast<double>(ticks) * per_tick;
  }
  forget_exited();
  return out;
}

void ProcessTree::assign_roles() {
  // The parent chain of a process through the table (processes seen in the tree).
  auto ancestors_match = [&](const Tracked& t, auto&& predicate) {
    int up = t.parent;
    for (int depth = 0; depth < kMaxTreeDepth; ++depth) {
      const auto a = tracked_.find(up);
      if (a == tracked_.end()) return false;
      if (predicate(a->second)) return true;
      up = a->second.parent;
    }
    return false;
  };
  bool any_main = false;
  for (auto& [pid, t] : tracked_) {
    if (!t.alive) continue;
    const bool python_above = ancestors_match(t, [](const Tracked& a) { return is_python_comm(a.comm); });
    if (is_main_python_comm(t.comm) && !python_above) {
      t.role = ProcessRole::kMain;
      any_main = true;
    } else if (is_python_comm(t.comm) && python_above &&
               ancestors_match(t, [](const Tracked& a) { return is_main_python_comm(a.comm); })) {
      t.role = ProcessRole::kWorkers;
    } else {
      t.role = ProcessRole::kOther;
    }
  }
  // No Python in the tree: the command's own process is the main one.
  if (!any_main)
    if (auto root = tracked_.find(root_pid_); root != tracked_.end() && root->second.alive)
      root->second.role = ProcessRole::kMain;
}

void ProcessTree::forget_exited() {
  if (tracked_.size() <= kMaxTrackedProcesses) return;
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    if (!it->second.alive && it->first != root_pid_) {
      ++forgotten_;
      it = tracked_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<WatchedProcess> ProcessTree::processes() const {
  std::vector<std::pair<std::size_t, WatchedProcess>> ordered;
  for (const auto& [pid, t] : tracked_) {
    WatchedProcess p;
    p.pid = pid;
    p.parent = t.parent;
    p.comm = t.comm;
    p.role = t.role;
    p.cpu_s = static_cast<double>(t.counted) / ticks_per_s_;
    p.first_seen_s = t.first_seen_s;
    p.last_seen_s = t.last_seen_s;
    p.peak_cores = t.peak_cores;
    ordered.emplace_back(t.order, std::move(p));
  }
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<WatchedProcess> out;
  for (auto& [order, p] : ordered) out.push_back(std::move(p));
  return out;
}

std::vector<int> ProcessTree::alive_pids() const {
  std::vector<int> out;
  for (const auto& [pid, t] : tracked_)
    if (t.alive) out.push_back(pid);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ferret
