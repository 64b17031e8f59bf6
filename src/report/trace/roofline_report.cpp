#include "report/trace/roofline_report.h"

#include <fmt/format.h>

#include "report/text_table.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

json figure(const std::optional<double>& f) { return f ? json(round3(*f)) : json(nullptr); }
json known(double v, double (*round)(double)) { return v < 0 ? json(nullptr) : json(round(v)); }

json dtype_figures(const DtypeFigures& f) {
  json out = json::object();
  for (std::size_t i = 0; i < kDtypeCount; ++i) out[dtype_name(static_cast<Dtype>(i))] = figure(f[i]);
  return out;
}

std::string number(double v, const char* spec) { return v < 0 ? std::string("-") : fmt::format(fmt::runtime(spec), v); }

std::string dims_of(const RooflineGroup& g) { return g.input_dims.empty() ? std::string() : " " + g.input_dims; }

std::string device_line(const RooflineResult& r) {
  const DevicePeaks& p = r.peaks;
  std::string line = fmt::format("device {} {}", r.device, p.device.empty() ? std::string("(unnamed)") : p.device);
  if (!p.model.empty()) line += fmt::format(", ceilings of the {} datasheet", p.model);
  if (!p.peaks_file.empty()) line += fmt::format(", --peaks {}", p.peaks_file);
  if (!r.device_known) line += ": ceilings unknown, no bound is given";
  if (!p.note.empty()) line += fmt::format(" ({})", p.note);
  return line;
}

std::size_t shown_rows(const RooflineResult& r, std::size_t top) {
  std::size_t n = 0;
  while (n < r.groups.size() && n < top && r.groups[n].kernel_ns > 0) ++n;
  return n;
}

}  // namespace

json roofline_json(const RooflineResult& r) {
  const DevicePeaks& p = r.peaks;
  json groups = json::array();
  for (const RooflineGroup& g : r.groups)
    groups.push_back({{"op", g.op},
                      {"input_dims", g.input_dims},
                      {"dtype", dtype_name(g.dtype)},
                      {"kind", op_kind_name(g.kind)},
                      {"calls", g.calls},
                      {"kernels", g.kernels},
                      {"flops_per_call", g.flops_per_call < 0 ? json(nullptr) : json(g.flops_per_call)},
                      {"bytes_per_call", g.bytes_per_call < 0 ? json(nullptr) : json(g.bytes_per_call)},
                      {"kernel_us", round3(ns_to_us(static_cast<double>(g.kernel_ns)))},
                      {"tflops_per_s", known(g.tflops_per_s, round3)},
                      {"tb_per_s", known(g.tb_per_s, round3)},
                      {"matrix_units", g.matrix_units},
                      {"bound", bound_name(g.bound)},
                      {"peak_pct", known(g.peak_pct, round2)},
                      {"peak_source", g.peak_source},
                      {"roofline_us", g.roofline_ns < 0 ? json(nullptr) : json(round3(ns_to_us(g.roofline_ns)))},
                      {"note", g.note}});
  return {{"device", r.device < 0 ? json(nullptr) : json(r.device)},
          {"device_name", p.device},
          {"ceilings",
           {{"model", p.model.empty() ? json(nullptr) : json(p.model)},
            {"source", p.source},
            {"peaks_file", p.peaks_file.empty() ? json(nullptr) : json(p.peaks_file)},
            {"sm_scale", round3(p.sm_scale)},
            {"hbm_tb_per_s", figure(p.hbm_tb_per_s)},
            {"matrix_tflop_per_s", dtype_figures(p.matrix_tflops)},
            {"vector_tflop_per_s", dtype_figures(p.vector_tflops)},
            {"note", p.note}}},
          {"kernel_us", round3(ns_to_us(static_cast<double>(r.kernel_ns)))},
          {"modelled_us", round3(ns_to_us(static_cast<double>(r.modelled_ns)))},
          {"groups", groups}};
}

std::string roofline_text(const RooflineResult& r, std::size_t top, const Style& st) {
  const std::size_t n = shown_rows(r, top);
  if (n == 0) return {};
  std::string out =
      fmt::format("\n{}Operators against the roofline{} (top {} by GPU time)\n", st.bold(), st.reset(), n);
  out += wrap(device_line(r), st.width, "  ");
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < n; ++i) {
    const RooflineGroup& g = r.groups[i];
    rows.push_back({g.op + dims_of(g), dtype_name(g.dtype), std::to_string(g.calls), human_duration(g.kernel_ns),
                    number(g.tflops_per_s, "{:.1f}"), number(g.tb_per_s, "{:.2f}"), bound_name(g.bound),
                    number(g.peak_pct, "{:.0f}%")});
  }
  const auto num = [](const char* header, int drop) { return TableColumn{header, 0, 0, true, drop, 2}; };
  out += TextTable({{"operator (input dims)", 60, 12},
                    {"dtype", 0, 0, false, 3, 2},
                    num("calls", 2),
                    num("GPU time", 0),
                    num("TFLOP/s", 1),
                    num("TB/s", 1),
                    {"bound", 0, 0, false, 0, 2},
                    num("of peak", 0)},
                   rows, 2, st.width)
             .render(rows);
  return finish_text(out, st);
}

std::string roofline_markdown(const RooflineResult& r, std::size_t top) {
  const std::size_t n = shown_rows(r, top);
  if (n == 0) return {};
  std::string out = fmt::format("**Operators against the roofline**: {}\n\n", escape_markdown(device_line(r), false));
  out +=
      "| operator | input dims | dtype | calls | GPU time | TFLOP/s | TB/s | bound | of peak |\n"
      "|---|---|---|---:|---:|---:|---:|---|---:|\n";
  for (std::size_t i = 0; i < n; ++i) {
    const RooflineGroup& g = r.groups[i];
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", escape_markdown(g.op),
                       escape_markdown(g.input_dims), dtype_name(g.dtype), g.calls, human_duration(g.kernel_ns),
                       number(g.tflops_per_s, "{:.1f}"), number(g.tb_per_s, "{:.2f}"), bound_name(g.bound),
                       number(g.peak_pct, "{:.0f}%"));
  }
  return finish_text(out + "\n");
}

}  // namespace ferret
