// `ferret compare A B`: is run B faster or slower than run A, and is the difference real?
// Exit status: 0, or 1 for a significant slowdown beyond --fail-if-slower; 2 for a bad reference
// or database.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "benchmark/history_store.h"
#include "benchmark/run_record.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "report/bench/bench_compare_report.h"

namespace ferret::cli {

namespace {

struct CompareOptions {
  std::string a, b;
  std::string db;
  double alpha = stats::kDefaultAlpha;
  double fail_if_slower_pct = 0;
  std::size_t width = 0;  // --width; 0: COLUMNS or 80
  bool json = false;
  bool markdown = false;
};

// What the user can write instead of a reference that matched nothing.
std::string reference_hint(const HistoryStore& store) {
  const std::vector<RunRecord> runs = store.list();
  if (runs.empty()) return "it holds no runs";
  std::vector<std::string> labels;
  for (const RunRecord& r : runs)
    if (!r.label.empty() && std::find(labels.begin(), labels.end(), r.label) == labels.end()) labels.push_back(r.label);
  std::string text = fmt::format("it holds runs #{} to #{}", runs.back().id, runs.front().id);
  if (!labels.empty()) {
    text += "; labels:";
    for (std::size_t i = 0; i < labels.size() && i < 10; ++i) text += (i ? ", " : " ") + labels[i];
    if (labels.size() > 10) text += fmt::format(" and {} more", labels.size() - 10);
  }
  return text + " (see `ferret history`)";
}

RunRecord find_run(const HistoryStore& store, const std::string& ref) {
  std::optional<RunRecord> run = store.find(ref);
  if (!run) throw StoreError(fmt::format("no run \"{}\" in {}: {}", ref, store.path(), reference_hint(store)));
  return std::move(*run);
}

void run_compare(const CompareOptions& opt, bool gate) {
  if (opt.json && opt.markdown) {
    usage_error("choose one of --json and --md");
  }
  CompareReport report;
  report.database = opt.db.empty() ? default_history_path() : opt.db;
  try {
    const HistoryStore store = HistoryStore::open_existing(report.database);
    show_progress_status(fmt::format("ferret: reading runs {} and {}", opt.a, opt.b));
    report.a = find_run(store, opt.a);
    report.b = find_run(store, opt.b);
    finish_progress_bar();
    for (const std::string& problem : store.skipped()) print_error("warning: " + problem);
  } catch (const StoreError& e) {
    finish_progress_bar();
    print_error(e.what());
    throw ExitCode{2};
  }
  finish_progress_bar();
  if (report.a.unit != report.b.unit) {
    print_error(fmt::format("cannot compare #{} and #{}: their samples are in different units ({}, {})", report.a.id,
                            report.b.id, report.a.unit, report.b.unit));
    throw ExitCode{2};
  }
  const std::size_t samples = report.a.samples.size() + report.b.samples.size();
  if (samples > kProgressMinSamples)
    show_progress_status(
        fmt::format("ferret: comparing {} and {} samples", report.a.samples.size(), report.b.samples.size()));
  report.comparison = compare_runs(report.a, report.b, opt.alpha);
  finish_progress_bar();
  report.a.samples = {};
  report.b.samples = {};
  if (gate) {
    report.fail_if_slower_pct = opt.fail_if_slower_pct;
    report.gate_failed = fails_slowdown_gate(report.comparison, opt.fail_if_slower_pct);
  }

  if (opt.json)
    std::cout << compare_json(report).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  else if (opt.markdown)
    print_report(compare_markdown(report));
  else
    print_report(compare_text(report, stdout_style(opt.width)));
  std::cout.flush();
  if (report.gate_failed) throw ExitCode{1};
}

}  // namespace

void register_compare(CLI::App& app) {
  auto opt = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Compare two recorded benchmark runs: the change, its confidence interval, a verdict");
  cmd->add_option("A", opt->a, "Baseline run: ID, #ID, LABEL (its newest run) or LABEL~N (N runs before it)")
      ->required();
  cmd->add_option("B", opt->b, "Run compared with the baseline, same forms")->required();
  cmd->add_option("--db", opt->db, "History database (default .ferret/history.db)");
  cmd->add_option("--alpha", opt->alpha, "Significance level of the Mann-Whitney U test (default 0.05)")
      ->check(finite_range(1e-12, 0.5));
  CLI::Option* gate = cmd->add_option("--fail-if-slower", opt->fail_if_slower_pct,
                                      "Exit 1 when B is significantly slower than A by more than PCT percent")
                          ->type_name("PCT")
                          ->check(finite_range(0, 1e6));
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.compare/1, see docs/HISTORY.md)");
  add_width_option(*cmd, opt->width);
  cmd->add_flag("--md", opt->markdown, "Print Markdown to paste into a pull request");
  cmd->callback([opt, gate] { run_compare(*opt, gate->count() > 0); });
}

}  // namespace ferret::cli
