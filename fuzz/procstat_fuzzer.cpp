// libFuzzer harness for `ferret watch`'s /proc reading: bytes -> /proc/PID/stat lines (a blank
// line ends one scan of /proc) -> the process tree rooted at the first line's pid, sampled once
// per scan -> summary -> rules -> all three renderers. Must never crash or hang whatever the
// lines say (parent cycles, reused pids, counters going backwards, names with control bytes),
// and the text and Markdown must be terminal-safe (process names are copied from the input).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/watch/watch_summary.h"
#include "diagnosis/watch/rules_watch.h"
#include "ingest/proc/proc_stat.h"
#include "ingest/proc/process_tree.h"
#include "report/watch/watch_report.h"
#include "terminal_oracle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::vector<ferret::ProcStat>> scans(1);
  int root = 0;
  std::size_t start = 0;
  while (start <= text.size() && scans.size() <= 64) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) {
      scans.emplace_back();
      continue;
    }
    if (auto s = ferret::parse_proc_stat(line)) {
      if (root == 0) root = s->pid;
      scans.back().push_back(std::move(*s));
    }
  }
  std::size_t next = 0;
  ferret::ProcessTree tree(root, [&] { return scans[std::min(next++, scans.size() - 1)]; });
  ferret::WatchSeries series;
  series.command = {"fuzz"};
  series.interval_s = 0.5;
  series.cores_available = 2;
  series.gpu_note = "fuzz";
  for (std::size_t i = 0; i < scans.size(); ++i) series.cpu.push_back(tree.sample(0.5 * (i + 1), 0.5, 100));
  series.processes = tree.processes();
  ferret::WatchReportInput in;
  in.command = series.command;
  in.interval_s = series.interval_s;
  in.summary = ferret::summarize_watch(series);
  ferret::rules_watch(in.summary, in.findings);
  ferret::fuzz::require_terminal_safe(ferret::watch_text(in, ferret::Style{}), "watch text");
  ferret::fuzz::require_terminal_safe(ferret::watch_markdown(in), "watch markdown");
  (void)ferret::watch_json(in).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  (void)ferret::watch_samples_csv(series);
  return 0;
}
