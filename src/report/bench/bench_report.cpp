#include "report/bench/bench_report.h"

#include <cmath>

#include <fmt/format.h>

#include "base/terminal_text.h"

namespace ferret {

namespace {

using bench::BenchResult;

// A latency in seconds as "512.345 us"; "n/a" when not finite.
std::string latency(double seconds) {
  if (!std::isfinite(seconds)) return "n/a";
  return human_duration(static_cast<std::int64_t>(std::llround(seconds * 1e9)));
}

std::string items_per_second(double v) {
  if (!std::isfinite(v)) return "n/a";
  return v >= 100 ? fmt::format("{:.0f} items/s", v) : fmt::format("{:.3g} items/s", v);
}

std::string inputs_text(const BenchResult& r) {
  if (r.inputs.empty()) return "none";
  return bench::input_specs_text(r.inputs);
}

std::string threads_text(int threads) { return fmt::format("{} thread{}", threads, threads == 1 ? "" : "s"); }

std::string warmup_text(const BenchResult& r) {
  const bench::WarmupReport& w = r.warmup;
  std::string how;
  if (!w.automatic)
    how = "fixed count";
  else if (w.steady)
    how = fmt::format("auto: steady over the last {} calls", bench::kAutoWarmupWindow);
  else
    how = "auto: cap reached before a steady state";
  return fmt::format("{} call{} discarded, {} ({})", w.calls, w.calls == 1 ? "" : "s", latency(w.seconds), how);
}

std::string outliers_text(const stats::TukeyOutliers& o) {
  if (o.total() == 0) return "none beyond Tukey's fences";
  return fmt::format("{} (Tukey: {} high, {} of them extreme; {} low, {} extreme)", o.total(),
                     o.high_mild + o.high_extreme, o.high_extreme, o.low_mild + o.low_extreme, o.low_extreme);
}

// Greedy word wrap to `width` columns; continuation lines are indented by `indent` spaces. The
// spacing inside a line is kept (reports align columns with runs of spaces).
std::string wrap_at_indent(const std::string& untrusted, std::size_t width, std::size_t indent) {
  const std::string text = terminal_safe(untrusted, {.keep_colour = true});  // notes quote paths and errors
  std::string out, line;
  bool line_has_word = false;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t word_start = text.find_first_not_of(' ', at);
    if (word_start == std::string::npos) break;
    std::size_t word_end = text.find(' ', word_start);
    if (word_end == std::string::npos) word_end = text.size();
    const std::string gap = text.substr(at, word_start - at);
    const std::string word = text.substr(word_start, word_end - word_start);
    if (line_has_word && line.size() + gap.size() + word.size() > width) {
      out += line + "\n";
      line = std::string(indent, ' ') + word;
    } else {
      line += gap + word;
    }
    line_has_word = true;
    at = word_end;
  }
  return out + line + "\n";
}

// A JSON number, or null when not finite (JSON has no NaN).
nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
}

}  // namespace

std::string bench_noise_warning(const BenchResult& r) {
  if (!r.noisy) return "";
  return fmt::format(
      "noisy run: the IQR is {} of the median (more than {:.0f}%), so small differences are not "
      "trustworthy. Close other programs, pin --threads, or take more calls.",
      percent_text(r.relative_iqr), stats::kNoisyRelativeIqr * 100);
}

std::string bench_text(const BenchResult& r, const std::optional<BenchRecorded>& recorded, const Style& st) {
  const stats::Summary& s = r.summary;
  std::string out;
  out += fit_width(fmt::format("{}ferret bench{}  {}", st.bold(), st.reset(), r.record.subject),
                   st.width + std::string(st.bold()).size() + std::string(st.reset()).size()) +
         "\n";
  out += wrap_at_indent(fmt::format("  torch {} on {}, {}; inputs {}; batch {:g}", r.torch_version, r.device,
                                    threads_text(r.threads), inputs_text(r), r.record.batch_size),
                        st.width, 4);
  out += wrap_at_indent(fmt::format("  warm-up  {}", warmup_text(r)), st.width, 11);
  out += wrap_at_indent(
      fmt::format("  timed    {} calls in {} (rule: {}); {}", s.n, latency(r.timed_seconds), r.run_rule, r.timing),
      st.width, 11);

  out += fmt::format("\n{}Latency per call{} ({} samples)\n", st.bold(), st.reset(), s.n);
  out += fmt::format("  median  {:>12}   {:.0f}% CI {} .. {}\n", latency(s.median), r.median_ci.confidence * 100,
                     latency(r.median_ci.low), latency(r.median_ci.high));
  out += fmt::format("  mean    {:>12}   stddev {}\n", latency(s.mean), latency(s.stddev));
  out += fmt::format("  p90     {:>12}   p95 {}   p99 {}\n", latency(s.p90), latency(s.p95), latency(s.p99));
  out += fmt::format("  p99.9   {:>12}   min {}   max {}\n", latency(s.p999), latency(s.min), latency(s.max));
  out += fmt::format("  IQR     {:>12}   {} of the median\n", latency(s.iqr), percent_text(r.relative_iqr));
  out += wrap_at_indent(fmt::format("  outliers {}", outliers_text(r.outliers)), st.width, 11);
  if (r.noisy)
    out +=
        wrap_at_indent(fmt::format("  {}warning{}: {}", st.yellow(), st.reset(), bench_noise_warning(r)), st.width, 4);

  out += "\n";
  out += fmt::format("{}Throughput{}  {} (batch {:g} / median)\n", st.bold(), st.reset(),
                     items_per_second(r.items_per_second), r.record.batch_size);
  out += fmt::format("{}Memory{}      peak RSS {}\n", st.bold(), st.reset(),
                     r.peak_rss_bytes > 0 ? human_bytes(r.peak_rss_bytes) + " (process high-water mark, VmHWM)"
                                          : std::string("unknown (no /proc/self/status)"));
  if (r.allocator.measured)
    out += wrap_at_indent(
        fmt::format("            {} allocator peak {} allocated, {} reserved ({} extra calls)",
                    r.allocator.device == "cuda" ? "CUDA" : "CPU", human_bytes(r.allocator.allocated_bytes),
                    human_bytes(r.allocator.reserved_bytes), r.allocator.calls),
        st.width, 12);
  if (!r.profile_path.empty()) {
    out += wrap_at_indent(fmt::format("{}Profile{}     {} extra calls after the timed ones, not in the statistics: {}",
                                      st.bold(), st.reset(), r.profile_calls, r.profile_path),
                          st.width + std::string(st.bold()).size() + std::string(st.reset()).size(), 12);
    out += wrap_at_indent("            explain it with: ferret analyze " + r.profile_path, st.width, 12);
  }
  if (recorded)
    out += wrap_at_indent(fmt::format("{}Recorded{}    run #{} \"{}\" in {}", st.bold(), st.reset(), recorded->id,
                                      recorded->label, recorded->database),
                          st.width + std::string(st.bold()).size() + std::string(st.reset()).size(), 12);
  for (const std::string& note : r.notes) out += wrap_at_indent("note: " + note, st.width, 6);

  if (!r.record.environment.fields.empty()) {
    out += fmt::format("\n{}Environment{}\n", st.bold(), st.reset());
    for (const auto& [key, value] : r.record.environment.fields)
      out += fit_width(fmt::format("  {:<22} {}", key, value), st.width) + "\n";
  }
  return finish_text(out, st);
}

std::string bench_markdown(const BenchResult& r, const std::optional<BenchRecorded>& recorded) {
  const stats::Summary& s = r.summary;
  std::string out;
  out += fmt::format("### ferret bench: {}\n\n", escape_markdown(r.record.subject));
  out += escape_markdown(fmt::format("torch {} on {}, {}; inputs {}; batch {:g}; {} timed calls (rule: {}); {}",
                                     r.torch_version, r.device, threads_text(r.threads), inputs_text(r),
                                     r.record.batch_size, s.n, r.run_rule, r.timing)) +
         "\n\n";
  out += fmt::format("Warm-up: {}\n\n", escape_markdown(warmup_text(r)));
  if (r.noisy) out += fmt::format("**Warning:** {}\n\n", escape_markdown(bench_noise_warning(r)));
  out += "| statistic | latency per call |\n|---|---:|\n";
  out += fmt::format("| median | {} |\n", latency(s.median));
  out += fmt::format("| {:.0f}% CI of the median | {} .. {} |\n", r.median_ci.confidence * 100,
                     latency(r.median_ci.low), latency(r.median_ci.high));
  out += fmt::format("| mean ± stddev | {} ± {} |\n", latency(s.mean), latency(s.stddev));
  out += fmt::format("| p90 / p95 | {} / {} |\n", latency(s.p90), latency(s.p95));
  out += fmt::format("| p99 / p99.9 | {} / {} |\n", latency(s.p99), latency(s.p999));
  out += fmt::format("| min / max | {} / {} |\n", latency(s.min), latency(s.max));
  out += fmt::format("| IQR | {} ({} of the median) |\n", latency(s.iqr), percent_text(r.relative_iqr));
  out += fmt::format("| outliers | {} |\n", escape_markdown(outliers_text(r.outliers)));
  out += fmt::format("| throughput | {} |\n", items_per_second(r.items_per_second));
  if (r.peak_rss_bytes > 0) out += fmt::format("| peak RSS | {} |\n", human_bytes(r.peak_rss_bytes));
  if (r.allocator.measured)
    out += fmt::format("| {} allocator peak | {} allocated, {} reserved |\n",
                       r.allocator.device == "cuda" ? "CUDA" : "CPU", human_bytes(r.allocator.allocated_bytes),
                       human_bytes(r.allocator.reserved_bytes));
  out += "\n";
  if (!r.profile_path.empty())
    out += fmt::format("Profile: {} extra calls after the timed ones (not in the statistics) in {}\n\n",
                       r.profile_calls, escape_markdown(r.profile_path));
  if (recorded)
    out += fmt::format("Recorded as run \\#{} {} in {}\n\n", recorded->id, escape_markdown(recorded->label),
                       escape_markdown(recorded->database));
  for (const std::string& note : r.notes) out += fmt::format("Note: {}\n\n", escape_markdown(note));
  if (!r.record.environment.fields.empty()) {
    out += "| environment | |\n|---|---|\n";
    for (const auto& [key, value] : r.record.environment.fields)
      out += fmt::format("| {} | {} |\n", escape_markdown(key), escape_markdown(value));
  }
  return finish_text(out);
}

nlohmann::ordered_json bench_json(const BenchResult& r, const std::optional<BenchRecorded>& recorded) {
  using json = nlohmann::ordered_json;
  const stats::Summary& s = r.summary;
  json doc;
  doc["schema"] = "ferret.bench/1";
  doc["model"] = r.record.subject;
  doc["created_at"] = r.record.created_at;
  doc["torch_version"] = r.torch_version;
  doc["device"] = r.device;
  doc["threads"] = r.threads;
  json inputs = json::array();
  for (const bench::InputSpec& in : r.inputs)
    inputs.push_back({{"spec", in.text()}, {"shape", in.shape}, {"dtype", std::string(bench::dtype_name(in.dtype))}});
  doc["inputs"] = inputs;
  doc["batch_size"] = r.record.batch_size;
  doc["timing"] = r.timing;
  doc["warmup"] = {{"mode", r.warmup.automatic ? "auto" : "fixed"},
                   {"calls", r.warmup.calls},
                   {"seconds", r.warmup.seconds},
                   {"steady", r.warmup.steady}};
  doc["runs"] = {{"rule", r.run_rule}, {"calls", s.n}, {"seconds", r.timed_seconds}};
  doc["latency_s"] = {{"n", s.n},
                      {"min", number(s.min)},
                      {"max", number(s.max)},
                      {"mean", number(s.mean)},
                      {"stddev", number(s.stddev)},
                      {"median", number(s.median)},
                      {"q1", number(s.q1)},
                      {"q3", number(s.q3)},
                      {"iqr", number(s.iqr)},
                      {"p50", number(s.p50)},
                      {"p90", number(s.p90)},
                      {"p95", number(s.p95)},
                      {"p99", number(s.p99)},
                      {"p99_9", number(s.p999)}};
  doc["median_ci"] = {{"low", number(r.median_ci.low)},
                      {"high", number(r.median_ci.high)},
                      {"confidence", number(r.median_ci.confidence)},
                      {"resamples", r.median_ci.resamples},
                      {"method", "percentile bootstrap"}};
  doc["noise"] = {
      {"relative_iqr", number(r.relative_iqr)}, {"threshold", stats::kNoisyRelativeIqr}, {"noisy", r.noisy}};
  const stats::TukeyOutliers& o = r.outliers;
  doc["outliers"] = {{"low_mild", o.low_mild},
                     {"high_mild", o.high_mild},
                     {"low_extreme", o.low_extreme},
                     {"high_extreme", o.high_extreme},
                     {"total", o.total()},
                     {"lower_inner", number(o.lower_inner)},
                     {"upper_inner", number(o.upper_inner)},
                     {"lower_outer", number(o.lower_outer)},
                     {"upper_outer", number(o.upper_outer)}};
  doc["throughput"] = {{"items_per_second", number(r.items_per_second)}, {"basis", "batch_size / median"}};
  json memory = {{"peak_rss_bytes", r.peak_rss_bytes > 0 ? json(r.peak_rss_bytes) : json()}};
  memory["allocator_peak"] = r.allocator.measured ? json{{"device", r.allocator.device},
                                                         {"allocated_bytes", r.allocator.allocated_bytes},
                                                         {"reserved_bytes", r.allocator.reserved_bytes},
                                                         {"calls", r.allocator.calls}}
                                                  : json();
  doc["memory"] = memory;
  doc["profile"] = r.profile_path.empty()
                       ? json()
                       : json{{"path", r.profile_path}, {"calls", r.profile_calls}, {"in_statistics", false}};
  doc["recorded"] =
      recorded ? json{{"id", recorded->id}, {"label", recorded->label}, {"database", recorded->database}} : json();
  json env = json::object();
  for (const auto& [key, value] : r.record.environment.fields) env[key] = value;
  doc["environment"] = env;
  doc["notes"] = r.notes;
  json samples = json::array();
  for (double v : r.record.samples) samples.push_back(number(v));
  doc["samples_s"] = samples;
  return doc;
}

}  // namespace ferret
