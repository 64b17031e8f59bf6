#include "report/job/job_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/text_table.h"
#include "report/trace/analyze_report.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

// Per-step means of a rank.
struct RankRow {
  const RankResult* r = nullptr;
  double step_ms = 0, comm_ms = 0, exposed_ms = 0, wait_ms = 0, dataloader_ms = 0;
  std::uint64_t times_last = 0, calls = 0;
  double offset_ms = 0;
  bool aligned = false;
};

RankRow row_of(const JobAnalysis& job, std::size_t i) {
  RankRow row;
  const RankResult& r = job.ranks[i];
  row.r = &r;
  const double steps = static_cast<double>(std::max<std::size_t>(1, r.steps.size()));
  row.step_ms = ns_to_ms(r.mean_step_ns);
  row.comm_ms = ns_to_ms(r.comm_ns) / steps;
  row.exposed_ms = ns_to_ms(r.exposed_comm_ns) / steps;
  std::int64_t dl = 0;
  for (const RankStep& s : r.steps) dl += s.dataloader_ns;
  row.dataloader_ms = ns_to_ms(dl) / steps;
  if (i < job.stragglers.ranks.size()) {
    const RankLateness& l = job.stragglers.ranks[i];
    row.wait_ms = ns_to_ms(l.wait_ns) / steps;
    row.times_last = l.times_last;
    row.calls = l.calls;
  }
  if (i < job.matching.clocks.size()) {
    row.aligned = job.matching.clocks[i].aligned;
    row.offset_ms = ns_to_ms(job.matching.clocks[i].offset_ns);
  }
  return row;
}

// The ranks a table shows: all of them up to kJobTableRanks, else the slowest, the median and the
// fastest ones (by mean step), in rank order.
std::vector<std::size_t> shown_ranks(const JobAnalysis& job, std::size_t& hidden) {
  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < job.ranks.size(); ++i)
    if (job.ranks[i].error.empty()) ok.push_back(i);
  hidden = 0;
  if (ok.size() <= kJobTableRanks) return ok;
  std::vector<std::size_t> by_step = ok;
  std::stable_sort(by_step.begin(), by_step.end(),
                   [&](std::size_t a, std::size_t b) { return job.ranks[a].mean_step_ns > job.ranks[b].mean_step_ns; });
  std::vector<std::size_t> keep(by_step.begin(), by_step.begin() + 12);
  keep.push_back(by_step[by_step.size() / 2]);
  keep.insert(keep.end(), by_step.end() - 6, by_step.end());
  for (const Straggler& s : job.stragglers.stragglers) keep.push_back(static_cast<std::size_t>(s.rank_index));
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  hidden = ok.size() - keep.size();
  return keep;
}

std::string job_line(const JobAnalysis& job) {
  std::size_t ok = 0;
  for (const RankResult& r : job.ranks) ok += r.error.empty() ? 1 : 0;
  std::string line = fmt::format("{} rank{}", ok, ok == 1 ? "" : "s");
  if (job.world_size > 0) line += fmt::format(" of world size {}", job.world_size);
  std::string backend;
  for (const RankResult& r : job.ranks)
    if (!r.backend.empty()) {
      backend = r.backend;
      break;
    }
  if (!backend.empty()) line += " (" + backend + ")";
  if (job.median_step_ns > 0)
    line += fmt::format(", median step {}, slowest rank {} at {}", human_duration(job.median_step_ns),
                        job.ranks[static_cast<std::size_t>(job.slowest_rank_index)].rank,
                        human_duration(job.slowest_step_ns));
  return line;
}

std::string matching_line(const JobAnalysis& job) {
  const CollectiveMatching& m = job.matching;
  if (m.collectives == 0) return "No collectives recorded (NCCL kernels or gloo spans): nothing to match across ranks.";
  // Kernels on GPUs, gloo's spans on hosts: "recorded" fits both.
  std::string line = fmt::format("Collectives: {} recorded, {} matched in {} calls by {}", m.collectives,
                                 m.matched_collectives, m.calls.size(), match_method_name(m.method));
  if (m.mismatches_dropped > 0) line += fmt::format(", {} dropped (ends disagree)", m.mismatches_dropped);
  line += fmt::format("; {} clock group{}", m.clock_groups, m.clock_groups == 1 ? "" : "s");
  std::int64_t widest = 0;
  for (const RankClock& c : m.clocks)
    if (c.aligned) widest = std::max(widest, c.offset_ns < 0 ? -c.offset_ns : c.offset_ns);
  if (m.clock_groups > 1) line += fmt::format(" (offsets up to {})", human_duration(widest));
  return line + ".";
}

std::string last_text(const RankRow& row) {
  return row.calls > 0 ? fmt::format("{}/{}", row.times_last, row.calls) : std::string("-");
}

}  // namespace

std::string job_text(const JobAnalysis& job, const JobDiagnosis& d, const Style& st) {
  const std::size_t width = st.width;
  std::string out = wrap(fmt::format("{}Job{}: {}", st.bold(), st.reset(), job_line(job)), width, "");
  out += wrap(matching_line(job), width, "");
  out += '\n';
  out += wrap(fmt::format("{}Verdict{}: {}", st.bold(), st.reset(), d.verdict.headline), width, "");

  std::size_t hidden = 0;
  const std::vector<std::size_t> shown = shown_ranks(job, hidden);
  out += fmt::format("\n{}Ranks{} (per step; GPU = kernels busy)\n", st.bold(), st.reset());
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i : shown) {
    const RankRow row = row_of(job, i);
    rows.push_back(
        {std::to_string(row.r->rank), fmt::format("{:.2f}", row.step_ms),
         row.r->gpu_utilization_pct < 0 ? std::string("n/a") : fmt::format("{:.1f}%", row.r->gpu_utilization_pct),
         fmt::format("{:.2f}", row.dataloader_ms), fmt::format("{:.2f}", row.comm_ms),
         fmt::format("{:.2f}", row.exposed_ms), fmt::format("{:.2f}", row.wait_ms), last_text(row)});
  }
  // Numbers two spaces apart when the width allows, one when it does not.
  const auto number = [](const char* header) { return TableColumn{header, 0, 0, true, 0, 2}; };
  out += TextTable({{"rank", 0, 0, true},
                    number("step ms"),
                    number("GPU"),
                    number("input ms"),
                    number("comm ms"),
                    number("exposed ms"),
                    number("wait ms"),
                    number("last")},
                   rows, 1, width)
             .render(rows);
  if (hidden > 0) out += fmt::format("  ... {} more ranks (--json lists every rank)\n", hidden);

  if (!job.costs.empty()) {
    out += '\n';
    out += wrap(fmt::format("{}Collectives{} (transfer = shortest duration across ranks; the rest is waiting)",
                            st.bold(), st.reset()),
                width + (st.enabled ? 8 : 0), "");
    std::vector<std::vector<std::string>> rows;
    for (std::size_t k = 0; k < job.costs.size() && k < 12; ++k) {
      const CollectiveCost& c = job.costs[k];
      rows.push_back(
          {collective_name(c.kind), size_bucket_label(c.bucket), std::to_string(c.calls),
           fmt::format("{:.3f}", ns_to_ms(c.mean_duration_ns)),
           fmt::format("{:.3f}", ns_to_ms(c.transfer_ns) / static_cast<double>(std::max<std::uint64_t>(1, c.calls))),
           fmt::format("{:.0f}%", 100 * c.wait_share),
           c.busbw_gbps < 0 ? std::string("n/a") : fmt::format("{:.1f}", c.busbw_gbps)});
    }
    // The bus bandwidth goes first on a narrow terminal: the transfer time says the same more plainly.
    out += TextTable({{"kind", 16},
                      {"size", 16, 0, false, 0, 2},
                      {"calls", 0, 0, true, 0, 2},
                      {"mean ms", 0, 0, true, 0, 2},
                      {"transfer ms", 0, 0, true, 0, 2},
                      {"wait", 0, 0, true, 0, 2},
                      {"busbw GB/s", 0, 0, true, 1, 2}},
                     rows, 1, width)
               .render(rows);
    if (!job.costs.empty() && job.costs.front().link_gbps > 0)
      out += fmt::format("  link: {} {:.0f} GB/s per direction\n", job.costs.front().link, job.costs.front().link_gbps);
  }

  if (job.matching.clock_groups > 1) {
    out += fmt::format("\n{}Clocks{}: offsets to rank {}'s clock, by group\n", st.bold(), st.reset(),
                       job.ranks.empty() ? 0 : job.ranks.front().rank);
    for (std::int32_t g = 0; g < job.matching.clock_groups && g < 16; ++g) {
      std::string members;
      std::int64_t offset = 0;
      int count = 0;
      for (std::size_t i = 0; i < job.ranks.size(); ++i)
        if (job.matching.clocks[i].clock_group == g) {
          if (count < 8) members += fmt::format("{}{}", members.empty() ? "" : ",", job.ranks[i].rank);
          if (count == 0) offset = job.matching.clocks[i].offset_ns;
          ++count;
        }
      out += fmt::format("  group {}: {:+.3f} ms, rank{} {}{}\n", g + 1, ns_to_ms(offset), count == 1 ? "" : "s",
                         members, count > 8 ? fmt::format(" and {} more", count - 8) : std::string());
    }
  }

  out += findings_text(d.findings, st, width);
  if (!d.rank_verdicts.empty()) {
    out += fmt::format("\n{}Each rank's own verdict{}\n", st.bold(), st.reset());
    for (std::size_t i = 0; i < d.rank_verdicts.size() && i < 6; ++i) {
      const auto& v = d.rank_verdicts[i];
      out += wrap(fmt::format("{} rank{}: {}", v.ranks.size(), v.ranks.size() == 1 ? "" : "s", v.title), width, "  ");
    }
  }
  if (!job.warnings.empty() || job.missing_rank_count > 0) {
    out += fmt::format("\n{}Warnings{}\n", st.bold(), st.reset());
    if (job.missing_rank_count > 0)
      out += wrap(
          fmt::format("{} of {} ranks not given: the cross-rank figures cover {} ranks only", job.missing_rank_count,
                      job.world_size, job.world_size - static_cast<int>(job.missing_rank_count)),
          width, "  ");
    for (const std::string& w : job.warnings) out += wrap(w, width, "  ");
  }
  return finish_text(out, st);
}

json job_json(const JobAnalysis& job, const JobDiagnosis& d) {
  json ranks = json::array();
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const RankResult& r = job.ranks[i];
    json row = {{"rank", r.rank}, {"rank_source", rank_source_name(r.rank_source)}, {"source", r.source}};
    if (!r.error.empty()) {
      row["error"] = r.error;
      ranks.push_back(std::move(row));
      continue;
    }
    const RankRow rr = row_of(job, i);
    json breakdown = json::object();
    for (int c = 0; c < kStepCategoryCount; ++c)
      breakdown[step_category_key(static_cast<StepCategory>(c))] = round3(r.breakdown_pct[static_cast<std::size_t>(c)]);
    row["steps"] = r.steps.size();
    row["mean_step_us"] = round3(ns_to_us(r.mean_step_ns));
    row["breakdown_pct"] = breakdown;
    row["gpu_utilization_pct"] = r.gpu_utilization_pct < 0 ? json(nullptr) : json(round3(r.gpu_utilization_pct));
    row["input_us_per_step"] = round3(rr.dataloader_ms * 1e3);
    row["communication_us_per_step"] = round3(rr.comm_ms * 1e3);
    row["exposed_communication_us_per_step"] = round3(rr.exposed_ms * 1e3);
    row["collective_wait_us_per_step"] = round3(rr.wait_ms * 1e3);
    row["matched_calls"] = rr.calls;
    row["times_last"] = rr.times_last;
    const RankClock& clock = job.matching.clocks[i];
    row["clock"] = {{"aligned", clock.aligned},
                    {"offset_us", round3(ns_to_us(clock.offset_ns))},
                    {"shared_calls", clock.shared_calls},
                    {"spread_us", round3(ns_to_us(clock.spread_ns))},
                    {"group", clock.clock_group}};
    row["verdict"] = r.verdict;
    json findings = json::array();
    for (const RankFinding& f : r.findings)
      findings.push_back({{"id", f.id},
                          {"title", f.title},
                          {"severity", severity_name(f.severity)},
                          {"max_speedup", std::round(f.max_speedup * 100) / 100}});
    row["findings"] = findings;
    row["repairs"] = r.repairs;
    row["skips"] = r.skips;
    ranks.push_back(std::move(row));
  }
  json costs = json::array();
  for (const CollectiveCost& c : job.costs) {
    json per_rank = json::array();
    for (std::int64_t v : c.rank_mean_duration_ns)
      per_rank.push_back(v < 0 ? json(nullptr) : json(round3(ns_to_us(v))));
    costs.push_back({{"kind", collective_name(c.kind)},
                     {"size_bucket", size_bucket_label(c.bucket)},
                     {"group_size", c.group_size < 0 ? json(nullptr) : json(c.group_size)},
                     {"calls", c.calls},
                     {"bytes", c.bytes},
                     {"mean_duration_us", round3(ns_to_us(c.mean_duration_ns))},
                     {"transfer_us", round3(ns_to_us(c.transfer_ns))},
                     {"mean_wait_us", round3(ns_to_us(c.mean_wait_ns))},
                     {"wait_share_pct", round3(100 * c.wait_share)},
                     {"algbw_gbps", c.algbw_gbps < 0 ? json(nullptr) : json(round3(c.algbw_gbps))},
                     {"busbw_gbps", c.busbw_gbps < 0 ? json(nullptr) : json(round3(c.busbw_gbps))},
                     {"link", c.link},
                     {"link_gbps", c.link_gbps < 0 ? json(nullptr) : json(c.link_gbps)},
                     {"rank_mean_duration_us", per_rank}});
  }
  json stragglers = json::array();
  for (const Straggler& s : job.stragglers.stragglers) {
    json activities = json::array();
    for (const ActivityExcess& a : s.activities)
      activities.push_back({{"activity", straggler_cause_name(a.cause)},
                            {"rank_us_per_step", round3(ns_to_us(a.rank_ns))},
                            {"others_median_us_per_step", round3(ns_to_us(a.others_median_ns))}});
    stragglers.push_back({{"rank", job.ranks[static_cast<std::size_t>(s.rank_index)].rank},
                          {"times_last", s.times_last},
                          {"calls", s.calls},
                          {"last_share_pct", round3(100 * s.last_share)},
                          {"mean_lateness_us", round3(ns_to_us(s.mean_lateness_ns))},
                          {"lateness_us_per_step", round3(ns_to_us(s.lateness_per_step_ns))},
                          {"cost_us_per_step", round3(ns_to_us(s.cost_per_step_ns))},
                          {"step_share_pct", round3(100 * s.step_share)},
                          {"cause", straggler_cause_name(s.cause)},
                          {"host_syncs_per_step", std::round(s.host_syncs_per_step * 1000) / 1000},
                          {"others_host_syncs_per_step", std::round(s.others_host_syncs_per_step * 1000) / 1000},
                          {"activities", activities}});
  }
  json findings = json::array();
  for (const Finding& f : d.findings) findings.push_back(finding_json(f));
  json verdicts = json::array();
  for (const auto& v : d.rank_verdicts)
    verdicts.push_back({{"finding_id", v.finding_id}, {"title", v.title}, {"ranks", v.ranks}});
  return {{"schema", "ferret.job/1"},
          {"ranks_given", job.ranks.size()},
          {"world_size", job.world_size < 0 ? json(nullptr) : json(job.world_size)},
          {"missing_ranks", job.missing_ranks},
          {"missing_rank_count", job.missing_rank_count},
          {"median_step_us", round3(ns_to_us(job.median_step_ns))},
          {"verdict",
           {{"headline", d.verdict.headline},
            {"finding_id", d.verdict.finding_id},
            {"max_speedup", std::round(d.verdict.max_speedup * 100) / 100}}},
          {"matching",
           {{"method", match_method_name(job.matching.method)},
            {"collectives", job.matching.collectives},
            {"matched", job.matching.matched_collectives},
            {"calls", job.matching.calls.size()},
            {"dropped", job.matching.mismatches_dropped},
            {"clock_groups", job.matching.clock_groups}}},
          {"ranks", ranks},
          {"collectives", costs},
          {"stragglers", stragglers},
          {"findings", findings},
          {"rank_verdicts", verdicts},
          {"warnings", job.warnings}};
}

std::string job_markdown(const JobAnalysis& job, const JobDiagnosis& d) {
  std::string out = fmt::format("### ferret job: {}\n\n", escape_markdown(job_line(job)));
  out += fmt::format("**{}**\n\n{}\n\n", escape_markdown(d.verdict.headline), escape_markdown(matching_line(job)));
  std::size_t hidden = 0;
  out +=
      "| rank | step ms | GPU util | input ms | comm ms | exposed ms | wait ms | last |\n"
      "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (std::size_t i : shown_ranks(job, hidden)) {
    const RankRow row = row_of(job, i);
    out += fmt::format(
        "| {} | {:.2f} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} |\n", row.r->rank, row.step_ms,
        row.r->gpu_utilization_pct < 0 ? std::string("n/a") : fmt::format("{:.1f}%", row.r->gpu_utilization_pct),
        row.dataloader_ms, row.comm_ms, row.exposed_ms, row.wait_ms, last_text(row));
  }
  if (hidden > 0) out += fmt::format("\n{} more ranks in `--json`.\n", hidden);
  if (!job.costs.empty()) {
    out +=
        "\n| collective | size | calls | mean ms | transfer ms | wait | busbw GB/s "
        "|\n|---|---|---:|---:|---:|---:|---:|\n";
    for (std::size_t k = 0; k < job.costs.size() && k < 12; ++k) {
      const CollectiveCost& c = job.costs[k];
      out +=
          fmt::format("| {} | {} | {} | {:.3f} | {:.3f} | {:.0f}% | {} |\n", collective_name(c.kind),
                      size_bucket_label(c.bucket), c.calls, ns_to_ms(c.mean_duration_ns),
                      ns_to_ms(c.transfer_ns) / static_cast<double>(std::max<std::uint64_t>(1, c.calls)),
                      100 * c.wait_share, c.busbw_gbps < 0 ? std::string("n/a") : fmt::format("{:.1f}", c.busbw_gbps));
    }
  }
  out += '\n';
  out += findings_markdown(d.findings);
  for (const std::string& w : job.warnings) out += fmt::format("\n> {}\n", escape_markdown(w));
  return finish_text(out);
}

}  // namespace ferret
