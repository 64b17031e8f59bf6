// Ingestion benchmark: loads traces in child processes and reports uncompressed MB/s, events/s
// and peak RSS for each, next to Python's json.load on the same plain file as the baseline.
//
// Usage: ingest_bench [--python PY] [--runs N] [--analyze FERRET] TRACE...
// Each run is a fresh process (so peak RSS is that run's own); the best time of N runs is shown.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "base/huge_pages.h"
#include "ingest/trace_loader.h"

namespace {

struct RunResult {
  bool ok = false;
  double seconds = 0;
  std::uint64_t json_bytes = 0;
  std::uint64_t events = 0;
  long peak_rss_kb = 0;
};

// Runs `work` in a child process; the child writes its figures to a pipe.
template <class Work>
RunResult in_child(Work work) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    RunResult r = work();
    if (::write(fds[1], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) _exit(3);
    _exit(r.ok ? 0 : 1);
  }
  ::close(fds[1]);
  RunResult r;
  if (::read(fds[0], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) r.ok = false;
  ::close(fds[0]);
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  r.peak_rss_kb = usage.ru_maxrss;
  return r;
}

RunResult ferret_load(const std::string& path, unsigned threads) {
  return in_child([&] {
    RunResult r;
    const auto t0 = std::chrono::steady_clock::now();
    ferret::LoadOptions options;
    options.threads = threads;
    ferret::TraceModel model = ferret::load_trace(path, options);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.json_bytes = model.info.json_bytes;
    r.events = model.size();
    r.ok = true;
    return r;
  });
}

RunResult command_run(const std::string& command, std::uint64_t json_bytes) {
  return in_child([&] {
    RunResult r;
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = std::system(command.c_str());
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.json_bytes = json_bytes;
    r.ok = rc == 0;
    return r;
  });
}

void print_row(const std::string& label, const RunResult& r, std::uint64_t reference_bytes) {
  if (!r.ok) {
    fmt::print("{:<34} failed\n", label);
    return;
  }
  const double mb = static_cast<double>(r.json_bytes) / 1e6;
  fmt::print("{:<34} {:>8.2f} s {:>9.1f} MB/s {:>10} {:>9.0f} MB {:>6.2f}x\n", label, r.seconds, mb / r.seconds,
             r.events ? fmt::format("{:.2f} M/s", static_cast<double>(r.events) / r.seconds / 1e6) : std::string("-"),
             static_cast<double>(r.peak_rss_kb) / 1024.0,
             static_cast<double>(r.peak_rss_kb) * 1024.0 / static_cast<double>(reference_bytes));
}

RunResult best_of(int runs, const std::function<RunResult()>& once) {
  RunResult best;
  for (int i = 0; i < runs; ++i) {
    RunResult r = once();
    if (r.ok && (!best.ok || r.seconds < best.seconds)) {
      const long rss = std::max(best.peak_rss_kb, r.peak_rss_kb);
      best = r;
      best.peak_rss_kb = rss;
    }
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  ferret::reexec_with_huge_pages(argv);  // measure what the ferret binary does
  std::string python;
  std::string analyze_binary;
  int runs = 3;
  std::vector<std::string> traces;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--python" && i + 1 < argc)
      python = argv[++i];
    else if (a == "--runs" && i + 1 < argc)
      runs = std::atoi(argv[++i]);
    else if (a == "--analyze" && i + 1 < argc)
      analyze_binary = argv[++i];
    else if (a.starts_with("-")) {
      std::fprintf(stderr,
                   "usage: ingest_bench [--runs N] [--analyze FERRET] [--python PYTHON] TRACE...\n"
                   "  loads each trace in fresh child processes (best of N) against `ferret analyze` and json.load\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    } else
      traces.push_back(a);
  }
  if (traces.empty()) {
    std::fprintf(stderr, "usage: ingest_bench [--python PY] [--runs N] [--analyze FERRET] TRACE...\n");
    return 2;
  }
  fmt::print("{:<34} {:>10} {:>14} {:>10} {:>12} {:>7}\n", "run", "time", "JSON MB/s", "events", "peak RSS", "RSS/in");
  std::uint64_t plain_bytes = 0;
  std::string plain_path;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (const std::string& path : traces) {
    const RunResult all = best_of(runs, [&] { return ferret_load(path, 0); });
    const std::string name = path.substr(path.find_last_of('/') + 1);
    print_row(fmt::format("ferret load {} ({} cores)", name, cores), all, all.json_bytes);
    const RunResult one = best_of(runs, [&] { return ferret_load(path, 1); });
    print_row(fmt::format("ferret load {} (1 parser)", name), one, one.json_bytes);
    if (!analyze_binary.empty()) {
      const RunResult analyze = best_of(runs, [&] {
        return command_run(fmt::format("'{}' analyze '{}' > /dev/null", analyze_binary, path), all.json_bytes);
      });
      print_row(fmt::format("ferret analyze {} (end to end)", name), analyze, all.json_bytes);
      if (all.ok && analyze.ok)
        fmt::print("{:<34} {:>8.2f}x the load alone (target <= 1.5x)\n", "  analyze / load",
                   analyze.seconds / all.seconds);
    }
    if (path.size() < 3 || path.compare(path.size() - 3, 3, ".gz") != 0) {
      plain_bytes = all.json_bytes;
      plain_path = path;
    }
  }
  if (!python.empty() && !plain_path.empty()) {
    // Baseline: what HTA and most Python tools do first. One run: it is slow and memory-hungry.
    const std::string cmd =
        fmt::format("'{}' -c 'import json,sys; json.load(open(sys.argv[1]))' '{}'", python, plain_path);
    const RunResult py = command_run(cmd, plain_bytes);
    print_row("python json.load (baseline)", py, plain_bytes);
  }
  return 0;
}
