// Cost of the time-outlier pass (model/time_outliers.h) on a loaded trace, next to building the
// relations it precedes. Usage: time_outliers_bench TRACE [TRACE...]
// The loader already ran the pass once; it is run again here on the same model (it finds nothing
// the second time, so each run measures detection, the part every trace pays), then once more
// after moving one kernel 115 days later (detection plus removal).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "ingest/trace_loader.h"
#include "model/relations.h"
#include "model/time_outliers.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    ferret::LoadOptions options;
    options.build_relations = false;
    const auto t0 = std::chrono::steady_clock::now();
    ferret::TraceModel model = ferret::load_trace(argv[i], options);
    const auto t1 = std::chrono::steady_clock::now();
    double best = 1e9;
    for (int run = 0; run < 3; ++run) {
      const auto s = std::chrono::steady_clock::now();
      ferret::set_aside_time_outliers(model);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
    }
    // Then the path that removes: the middle kernel moved 115 days later, set aside by
    // compacting every column and side table in place.
    double removal = 0;
    std::uint64_t set_aside = 0;
    for (std::size_t e = model.size() / 2; e < model.size(); ++e) {
      if (model.kind[e] != ferret::EventKind::kKernel) continue;
      model.ts_ns.set(e, model.ts_ns[e] + std::int64_t{115} * 86400 * 1000000000);
      const auto s = std::chrono::steady_clock::now();
      set_aside = ferret::set_aside_time_outliers(model).set_aside;
      removal = std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count();
      break;
    }
    const auto r0 = std::chrono::steady_clock::now();
    ferret::build_relations(model);
    const double relations = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
    fmt::print(
        "{}: {} events, load {:.2f} s, time outliers {:.3f} s (best of 3), {:.3f} s setting aside {} moved kernel, "
        "relations {:.2f} s\n",
        argv[i], model.size(), std::chrono::duration<double>(t1 - t0).count(), best, removal, set_aside, relations);
  }
  return 0;
}
