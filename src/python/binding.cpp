// ferret._ferret: the C++ library for Python (pybind11). Thin on purpose: each function is the call
// the command line makes (include/ferret/ferret.h) or, for load(), a copy of the model's columns
// into NumPy arrays; the package around it (src/python/ferret/) gives the Python API. The GIL is
// released while C++ works; exceptions carry the command line's messages.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ferret/ferret.h>

#include "base/input_error.h"
#include "base/terminal_text.h"
#include "benchmark/environment.h"
#include "benchmark/history_store.h"
#include "benchmark/model_runner.h"
#include "ingest/trace_loader.h"
#include "model/trace_model.h"
#include "report/bench/bench_report.h"
#include "report/trace/html_report.h"

namespace py = pybind11;

namespace ferret {
namespace {

py::dict reports_dict(Reports&& r) {
  py::dict d;
  d["json"] = py::str(r.json);
  d["text"] = py::str(r.text);
  d["markdown"] = py::str(r.markdown);
  d["notes"] = py::cast(r.notes);
  d["exit_code"] = r.exit_code;
  return d;
}

// A command's reports, computed with the GIL released (C++ works; Python threads run meanwhile).
template <typename Call>
py::dict reports_without_gil(Call call) {
  Reports r;
  {
    py::gil_scoped_release release;
    r = call();
  }
  return reports_dict(std::move(r));
}

py::dict py_analyze(const std::vector<std::string>& paths, int top, const std::string& steps, const std::string& window,
                    const std::string& time, int device, bool hta_timeline, unsigned threads,
                    const std::string& max_memory, const std::string& dataloaders, const std::string& host,
                    const std::string& peaks) {
  AnalyzeOptions options;
  options.peaks = peaks;
  options.dataloaders_json = dataloaders;
  options.host_json = host;
  options.top = top;
  options.steps = steps;
  options.window = window;
  options.time = time;
  options.device = device;
  options.hta_timeline = hta_timeline;
  options.threads = threads;
  options.max_memory = max_memory;
  return reports_without_gil([&] { return analyze_reports(paths, options); });
}

py::dict py_diff(const std::string& base, const std::string& next, int top, const std::string& steps, int device,
                 double fail_if_slower, unsigned threads, const std::string& max_memory) {
  DiffSettings settings;
  settings.top = top;
  settings.steps = steps;
  settings.device = device;
  settings.fail_if_slower_pct = fail_if_slower;
  settings.threads = threads;
  settings.max_memory = max_memory;
  return reports_without_gil([&] { return diff_reports(base, next, settings); });
}

// `ferret nccl`, `ferret smi` and `ferret memory`: the settings structs the command line fills
// from its flags, filled from Python's keywords.
py::dict py_nccl(const std::vector<std::string>& logs, const std::vector<std::string>& traces,
                 const std::string& max_bytes_without_progress, const std::string& max_memory, unsigned threads) {
  NcclSettings settings;
  settings.traces = traces;
  settings.max_bytes_without_progress = max_bytes_without_progress;
  settings.max_memory = max_memory;
  settings.threads = threads;
  return reports_without_gil([&] { return nccl_reports(logs, settings); });
}

py::dict py_smi(const std::vector<std::string>& logs, const std::vector<std::string>& traces,
                const std::string& columns, double interval, const std::string& utc_offset,
                const std::string& max_memory, unsigned threads) {
  SmiSettings settings;
  settings.traces = traces;
  settings.columns = columns;
  settings.interval = interval;
  settings.utc_offset = utc_offset;
  settings.max_memory = max_memory;
  settings.threads = threads;
  return reports_without_gil([&] { return smi_reports(logs, settings); });
}

py::dict py_memory(const std::vector<std::string>& files, const std::string& max_memory) {
  MemorySettings settings;
  settings.max_memory = max_memory;
  return reports_without_gil([&] { return memory_reports(files, settings); });
}

py::dict py_whatif(const std::string& trace, const std::vector<std::string>& remove,
                   const std::vector<std::string>& speedup, const std::string& fix, const std::string& steps,
                   int device, unsigned threads, const std::string& max_memory) {
  WhatIfSettings settings;
  settings.remove = remove;
  settings.speedup = speedup;
  settings.fix = fix;
  settings.steps = steps;
  settings.device = device;
  settings.threads = threads;
  settings.max_memory = max_memory;
  return reports_without_gil([&] { return whatif_reports(trace, settings); });
}

std::vector<std::string> py_annotate(const std::string& trace, const std::string& output, bool plain,
                                     const std::string& steps, const std::string& window, const std::string& time,
                                     int device, unsigned threads, const std::string& max_memory) {
  AnnotateSettings settings;
  settings.plain = plain;
  settings.steps = steps;
  settings.window = window;
  settings.time = time;
  settings.device = device;
  settings.threads = threads;
  settings.max_memory = max_memory;
  py::gil_scoped_release release;
  return annotate(trace, output, settings);
}

// A NumPy column filled from `n` values of `at(i)`: the model's columns are blocked and packed, so
// a contiguous array is always a copy.
template <typename T, typename At>
py::array_t<T> column(std::size_t n, At at) {
  py::array_t<T> out(static_cast<py::ssize_t>(n));
  T* data = out.mutable_data();
  for (std::size_t i = 0; i < n; ++i) data[i] = at(i);
  return out;
}

// Absent ids (kNoId) read as -1, as NumPy users expect of a missing index.
std::int64_t id_or_minus_one(std::int64_t v) { return v == kNoId ? -1 : v; }
std::int64_t index_or_minus_one(EventIndex e) { return e == kNoEvent ? -1 : static_cast<std::int64_t>(e); }

py::dict py_load(const std::string& path, unsigned threads) {
  auto model = std::make_unique<TraceModel>();
  {
    py::gil_scoped_release release;
    LoadOptions options;
    options.threads = threads;
    *model = load_trace(path, options);
  }
  const TraceModel& m = *model;
  const std::size_t n = m.size();
  py::dict events;
  events["kind"] = column<std::uint8_t>(n, [&](std::size_t i) { return static_cast<std::uint8_t>(m.kind[i]); });
  events["name_id"] = column<std::uint32_t>(n, [&](std::size_t i) { return m.name[i]; });
  events["category_id"] = column<std::uint16_t>(n, [&](std::size_t i) { return m.category[i]; });
  events["ts_ns"] = column<std::int64_t>(n, [&](std::size_t i) { return m.ts_ns[i]; });
  events["dur_ns"] = column<std::int64_t>(n, [&](std::size_t i) { return m.dur_ns[i]; });
  events["pid"] = column<std::int32_t>(n, [&](std::size_t i) { return m.pid[i]; });
  events["tid"] = column<std::int32_t>(n, [&](std::size_t i) { return m.tid[i]; });
  events["correlation"] = column<std::int64_t>(n, [&](std::size_t i) { return id_or_minus_one(m.correlation[i]); });
  events["external_id"] = column<std::int64_t>(n, [&](std::size_t i) { return id_or_minus_one(m.external_id[i]); });
  const Relations& rel = m.relations;
  if (rel.built && rel.parent.size() == n)
    events["parent"] = column<std::int64_t>(n, [&](std::size_t i) { return index_or_minus_one(rel.parent[i]); });

  const std::size_t kn = m.kernel_args.size();
  py::dict kernels;
  kernels["event"] = column<std::int64_t>(kn, [&](std::size_t i) { return std::int64_t{m.kernel_args[i].event}; });
  const char* axes[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    kernels[py::str(std::string("grid_") + axes[a])] =
        column<std::int32_t>(kn, [&](std::size_t i) { return m.kernel_args[i].grid[a]; });
    kernels[py::str(std::string("block_") + axes[a])] =
        column<std::int32_t>(kn, [&](std::size_t i) { return m.kernel_args[i].block[a]; });
  }
  kernels["registers_per_thread"] =
      column<std::int32_t>(kn, [&](std::size_t i) { return m.kernel_args[i].registers_per_thread; });
  kernels["shared_memory"] = column<std::int32_t>(kn, [&](std::size_t i) { return m.kernel_args[i].shared_memory; });
  kernels["est_occupancy_pct"] = column<float>(kn, [&](std::size_t i) { return m.kernel_args[i].est_occupancy_pct; });
  if (rel.built) {
    kernels["launcher"] = column<std::int64_t>(
        kn, [&](std::size_t i) { return index_or_minus_one(rel.launcher_of(m.kernel_args[i].event)); });
  }

  const std::size_t on = m.op_args.size();
  py::dict op_args;
  op_args["event"] = column<std::int64_t>(on, [&](std::size_t i) { return std::int64_t{m.op_args[i].event}; });
  op_args["input_dims_id"] = column<std::uint32_t>(on, [&](std::size_t i) { return m.op_args[i].input_dims; });
  op_args["input_types_id"] = column<std::uint32_t>(on, [&](std::size_t i) { return m.op_args[i].input_types; });
  op_args["sequence_number"] =
      column<std::int64_t>(on, [&](std::size_t i) { return id_or_minus_one(m.op_args[i].sequence_number); });

  const std::size_t sn = rel.steps.size();
  py::dict steps;
  steps["number"] = column<std::int64_t>(sn, [&](std::size_t i) { return rel.steps[i].number; });
  steps["event"] = column<std::int64_t>(sn, [&](std::size_t i) { return index_or_minus_one(rel.steps[i].event); });
  steps["start_ns"] = column<std::int64_t>(sn, [&](std::size_t i) { return rel.steps[i].start_ns; });
  steps["cpu_end_ns"] = column<std::int64_t>(sn, [&](std::size_t i) { return rel.steps[i].cpu_end_ns; });
  steps["end_ns"] = column<std::int64_t>(sn, [&](std::size_t i) { return rel.steps[i].end_ns; });
  steps["gpu_start_ns"] = column<std::int64_t>(sn, [&](std::size_t i) { return rel.steps[i].gpu_start_ns; });
  steps["gpu_end_ns"] = column<std::int64_t>(sn, [&](std::size_t i) { return rel.steps[i].gpu_end_ns; });
  steps["kernels"] = column<std::uint64_t>(sn, [&](std::size_t i) { return rel.steps[i].kernels; });

  // Strings once each; the columns above index them (NumPy fancy indexing turns ids into names).
  py::list strings(m.strings.size());
  for (std::size_t i = 0; i < m.strings.size(); ++i) {
    const std::string_view s = m.strings.view(static_cast<StrId>(i));
    strings[i] = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(s.data(), s.size(), "replace"));
  }
  py::list categories(m.categories.size());
  for (std::size_t i = 0; i < m.categories.size(); ++i) {
    const std::string_view s = m.categories.view(static_cast<StrId>(i));
    categories[i] = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(s.data(), s.size(), "replace"));
  }
  py::list kind_names;
  for (int k = 0; k < kEventKindCount; ++k) kind_names.append(event_kind_name(static_cast<EventKind>(k)));

  py::list notes;
  for (const std::string& line : m.report.lines()) notes.append(terminal_safe(line));

  py::dict out;
  out["source"] = m.info.source;
  out["events"] = events;
  out["kernels"] = kernels;
  out["op_args"] = op_args;
  out["steps"] = steps;
  out["strings"] = strings;
  out["categories"] = categories;
  out["kind_names"] = kind_names;
  out["notes"] = notes;
  out["base_time_ns"] = m.info.base_time_ns ? py::object(py::int_(*m.info.base_time_ns)) : py::object(py::none());
  {
    // The model is freed without the GIL: a large trace's columns take a while to release.
    py::gil_scoped_release release;
    model.reset();
  }
  return out;
}

// ferret.bench(): Python times the calls (the model is a Python callable); the warm-up and stopping
// rules, the statistics, the store and the reports are the command line's.
struct BenchPlan {
  bench::BenchOptions options;
  bench::WarmupTracker warmup;
  BenchPlan(bench::BenchOptions o) : options(std::move(o)), warmup(options) {}
};

std::unique_ptr<BenchPlan> make_bench_plan(const std::string& warmup, std::size_t runs, double time_seconds) {
  bench::BenchOptions o;
  bench::parse_warmup(warmup, o);
  if (runs > 0 && time_seconds > 0) throw bench::BenchError("choose one of runs and time");
  if (runs > bench::kMaxRuns) throw bench::BenchError("runs: at most " + std::to_string(bench::kMaxRuns));
  if (!std::isfinite(time_seconds) || time_seconds < 0)
    throw bench::BenchError("time: expected a positive number of seconds");
  o.runs = runs;
  o.time_seconds = runs == 0 && time_seconds == 0 ? bench::kDefaultTimeSeconds : time_seconds;
  return std::make_unique<BenchPlan>(std::move(o));
}

py::dict py_bench_report(const BenchPlan& plan, const std::vector<double>& samples, double timed_seconds,
                         double batch_size, const std::string& subject, const std::string& device,
                         const std::string& timing, const std::string& torch_version, int threads,
                         const std::vector<std::pair<std::string, std::string>>& settings, std::uint64_t peak_rss,
                         const std::string& label, const std::string& database) {
  if (samples.empty()) throw bench::BenchError("no timed call");
  bench::BenchResult r;
  r.record.kind = "bench";
  r.record.subject = subject;
  r.record.samples = samples;
  r.record.warmup = plan.warmup.calls();
  r.record.batch_size = batch_size > 0 ? batch_size : 1.0;
  r.record.settings = settings;
  if (peak_rss > 0) r.record.metrics.push_back({"peak_rss_bytes", static_cast<double>(peak_rss)});
  r.warmup = {plan.warmup.automatic(), plan.warmup.calls(), plan.warmup.seconds(), plan.warmup.steady()};
  r.run_rule = bench::run_rule_text(plan.options);
  r.timed_seconds = timed_seconds;
  r.peak_rss_bytes = peak_rss;
  r.device = device;
  r.timing = timing;
  r.threads = threads;
  r.torch_version = torch_version;
  py::dict out;
  {
    py::gil_scoped_release release;
    r.record.environment = capture_environment(torch_version, device);
    bench::summarize_samples(r);
    std::optional<BenchRecorded> recorded;
    if (!label.empty()) {
      HistoryStore store = HistoryStore::open(database.empty() ? default_history_path() : database);
      r.record.label = label;
      r.record.id = store.record(r.record);
      recorded = BenchRecorded{r.record.id, label, store.path()};
    }
    Reports reports;
    reports.json = bench_json(r, recorded).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + '\n';
    reports.text = terminal_safe(bench_text(r, recorded, Style{}), {.keep_line_breaks = true});
    reports.markdown = terminal_safe(bench_markdown(r, recorded), {.keep_line_breaks = true});
    reports.notes = r.notes;
    py::gil_scoped_acquire acquire;
    out = reports_dict(std::move(reports));
  }
  return out;
}

}  // namespace
}  // namespace ferret

PYBIND11_MODULE(_ferret, m) {
  m.doc() = "ferret's C++ library (use the ferret package, not this module)";
  py::register_exception<ferret::InputError>(m, "InputError", PyExc_ValueError);
  py::register_exception<ferret::OptionError>(m, "OptionError", PyExc_ValueError);
  m.def("version", &ferret::version);
  m.def("analyze", &ferret::py_analyze, py::arg("paths"), py::arg("top"), py::arg("steps"), py::arg("window"),
        py::arg("time"), py::arg("device"), py::arg("hta_timeline"), py::arg("threads"), py::arg("max_memory"),
        py::arg("dataloaders"), py::arg("host") = "", py::arg("peaks") = "");
  m.def("diff", &ferret::py_diff, py::arg("base"), py::arg("new"), py::arg("top"), py::arg("steps"), py::arg("device"),
        py::arg("fail_if_slower"), py::arg("threads"), py::arg("max_memory"));
  m.def("nccl", &ferret::py_nccl, py::arg("logs"), py::arg("traces"), py::arg("max_bytes_without_progress"),
        py::arg("max_memory"), py::arg("threads"));
  m.def("smi", &ferret::py_smi, py::arg("logs"), py::arg("traces"), py::arg("columns"), py::arg("interval"),
        py::arg("utc_offset"), py::arg("max_memory"), py::arg("threads"));
  m.def("memory", &ferret::py_memory, py::arg("files"), py::arg("max_memory"));
  m.def("whatif", &ferret::py_whatif, py::arg("trace"), py::arg("remove"), py::arg("speedup"), py::arg("fix"),
        py::arg("steps"), py::arg("device"), py::arg("threads"), py::arg("max_memory"));
  m.def("annotate", &ferret::py_annotate, py::arg("trace"), py::arg("output"), py::arg("plain"), py::arg("steps"),
        py::arg("window"), py::arg("time"), py::arg("device"), py::arg("threads"), py::arg("max_memory"));
  m.def(
      "html_page", [](const std::string& json, const std::string& title) { return ferret::html_page(json, title); },
      py::arg("json"), py::arg("title"));
  m.def("load", &ferret::py_load, py::arg("path"), py::arg("threads"));
  py::register_exception<ferret::bench::BenchError>(m, "BenchError", PyExc_ValueError);
  py::register_exception<ferret::StoreError>(m, "StoreError", PyExc_RuntimeError);
  py::class_<ferret::BenchPlan>(m, "BenchPlan")
      .def(py::init(&ferret::make_bench_plan), py::arg("warmup"), py::arg("runs"), py::arg("time_seconds"))
      .def("warmup_add", [](ferret::BenchPlan& p, double seconds) { return p.warmup.add(seconds); })
      .def_property_readonly("warmup_done", [](const ferret::BenchPlan& p) { return p.warmup.done(); })
      .def("timed_done", [](const ferret::BenchPlan& p, std::size_t calls, double elapsed) {
        return ferret::bench::timed_runs_done(p.options, calls, elapsed);
      });
  m.def("bench_report", &ferret::py_bench_report, py::arg("plan"), py::arg("samples"), py::arg("timed_seconds"),
        py::arg("batch_size"), py::arg("subject"), py::arg("device"), py::arg("timing"), py::arg("torch_version"),
        py::arg("threads"), py::arg("settings"), py::arg("peak_rss"), py::arg("label"), py::arg("database"));
}
