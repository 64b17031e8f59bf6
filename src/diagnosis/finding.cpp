#include "diagnosis/finding.h"

#include <algorithm>
#include <memory>

namespace ferret {

const char* dimension_name(Dimension d) {
  switch (d) {
    case Dimension::kBenchmark: return "benchmark";
    case Dimension::kCompute: return "compute";
    case Dimension::kDataPipeline: return "data_pipeline";
    case Dimension::kMemory: return "memory";
    case Dimension::kDistributed: return "distributed";
  }
  return "compute";
}

const char* layer_name(Layer l) {
  switch (l) {
    case Layer::kMacro: return "macro";
    case Layer::kFramework: return "framework";
    case Layer::kOperator: return "operator";
    case Layer::kHardware: return "hardware";
  }
  return "macro";
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kLow: return "low";
    case Severity::kMedium: return "medium";
    case Severity::kHigh: return "high";
  }
  return "info";
}

double share_of(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

namespace {

void add_speedup(Finding& f, std::string description, double selected_ns, double saved_ns, NamePredicate selects,
                 NamePredicate kernels, RetimeChanges::Speedup::Scope scope) {
  if (!(selected_ns > 0) || !(saved_ns > 0) || saved_ns >= selected_ns) return;
  RetimeChanges::Speedup s;
  s.pattern = std::move(description);
  s.factor = selected_ns / (selected_ns - saved_ns);
  s.selects = std::move(selects);
  s.kernels = std::move(kernels);
  s.scope = scope;
  f.fix.speedups.push_back(std::move(s));
}

}  // namespace

void fix_speeds_up_device_work(Finding& f, std::string description, double selected_ns, double saved_ns,
                               NamePredicate selects, NamePredicate kernels) {
  add_speedup(f, std::move(description), selected_ns, saved_ns, std::move(selects), std::move(kernels),
              RetimeChanges::Speedup::Scope::kDevice);
}

namespace {

void add_event_speedup(Finding& f, std::string description, double selected_ns, double saved_ns,
                       std::vector<EventIndex> events, RetimeChanges::Speedup::Scope scope) {
  if (events.empty()) return;
  const std::size_t before = f.fix.speedups.size();
  add_speedup(f, std::move(description), selected_ns, saved_ns, {}, {}, scope);
  if (f.fix.speedups.size() > before)
    f.fix.speedups.back().events = std::make_shared<const std::vector<EventIndex>>(std::move(events));
}

}  // namespace

void fix_speeds_up_device_events(Finding& f, std::string description, double selected_ns, double saved_ns,
                                 std::vector<EventIndex> events) {
  add_event_speedup(f, std::move(description), selected_ns, saved_ns, std::move(events),
                    RetimeChanges::Speedup::Scope::kDevice);
}

void fix_speeds_up_host_events(Finding& f, std::string description, double selected_ns, double saved_ns,
                               std::vector<EventIndex> events) {
  add_event_speedup(f, std::move(description), selected_ns, saved_ns, std::move(events),
                    RetimeChanges::Speedup::Scope::kHost);
}

void fix_speeds_up_host_ops(Finding& f, std::string description, double selected_ns, double saved_ns,
                            NamePredicate selects) {
  add_speedup(f, std::move(description), selected_ns, saved_ns, std::move(selects), {},
              RetimeChanges::Speedup::Scope::kHost);
}

std::string applies_because(const Finding& f, const Fix& fix) {
  std::string out = f.title;
  for (const std::string& b : fix.because) out += "; " + b;
  return out;
}

std::vector<std::string> fix_texts(const Finding& f) {
  std::vector<std::string> out;
  out.reserve(f.fixes.size());
  for (const Fix& fix : f.fixes) out.push_back(fix.text);
  return out;
}

void add_because(Fix& fix, std::string fact) {
  if (fact.empty() || std::find(fix.because.begin(), fix.because.end(), fact) != fix.because.end()) return;
  fix.because.push_back(std::move(fact));
}

double amdahl_speedup(double share) {
  share = std::clamp(share, 0.0, 0.99);
  return 1.0 / (1.0 - share);
}

}  // namespace ferret
