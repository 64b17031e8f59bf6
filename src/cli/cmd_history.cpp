// `ferret history`: the recorded benchmark runs, newest first, and each label's trend.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "benchmark/history_store.h"
#include "benchmark/run_record.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "report/bench/bench_compare_report.h"

namespace ferret::cli {

namespace {

struct HistoryOptions {
  std::string db;
  std::string label;
  std::size_t limit = 20;
  double alpha = stats::kDefaultAlpha;
  std::size_t width = 0;  // --width; 0: COLUMNS or 80
  bool json = false;
  bool markdown = false;
};

void run_history(const HistoryOptions& opt) {
  if (opt.json && opt.markdown) {
    usage_error("choose one of --json and --md");
  }
  HistoryReport report;
  report.database = opt.db.empty() ? default_history_path() : opt.db;
  report.label = opt.label;
  report.alpha = opt.alpha;
  try {
    const HistoryStore store = HistoryStore::open_existing(report.database);
    report.runs = store.list(opt.label, opt.limit, /*with_samples=*/true);
    for (const std::string& problem : store.skipped()) print_error("warning: " + problem);
  } catch (const StoreError& e) {
    print_error(e.what());
    throw ExitCode{2};
  }
  for (const RunRecord& run : report.runs) report.stats.push_back(summarize_run(run));
  report.trends = label_trends(report.runs, opt.alpha);
  for (RunRecord& run : report.runs) run.samples = {};  // summarized: the renderers do not need them

  if (opt.json)
    std::cout << history_json(report).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  else if (opt.markdown)
    print_report(history_markdown(report));
  else
    print_report(history_text(report, stdout_style(opt.width)));
  std::cout.flush();
}

}  // namespace

void register_history(CLI::App& app) {
  auto opt = std::make_shared<HistoryOptions>();
  CLI::App* cmd = app.add_subcommand(
      "history", "List recorded benchmark runs, newest first, with each label's trend (docs/HISTORY.md)");
  cmd->add_option("--db", opt->db, "History database (default .ferret/history.db)");
  cmd->add_option("--label", opt->label, "Only runs with this label");
  cmd->add_option("--limit", opt->limit, "Show at most N runs, newest first; 0 = all (default 20)");
  cmd->add_option("--alpha", opt->alpha, "Significance level of a trend step (default 0.05)")
      ->check(finite_range(1e-12, 0.5));
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.history/1, see docs/HISTORY.md)");
  add_width_option(*cmd, opt->width);
  cmd->add_flag("--md", opt->markdown, "Print Markdown to paste into a pull request");
  cmd->callback([opt] { run_history(*opt); });
}

}  // namespace ferret::cli
