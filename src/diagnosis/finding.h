// A finding: one diagnosed cause, with its evidence in numbers, concrete fixes, and the most
// that removing the cause could gain (an Amdahl bound).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/causal/step_graph.h"
#include "analysis/intervals.h"

namespace ferret {

enum class Dimension { kBenchmark, kCompute, kDataPipeline, kMemory, kDistributed };
enum class Layer { kMacro, kFramework, kOperator, kHardware };
enum class Severity { kInfo, kLow, kMedium, kHigh };

const char* dimension_name(Dimension d);  // "benchmark", "compute", "data_pipeline", "memory", "distributed"
const char* layer_name(Layer l);          // "macro", "framework", "operator", "hardware"
const char* severity_name(Severity s);    // "info", "low", "medium", "high"

struct Evidence {
  std::string name;  // e.g. "dataloader_share_pct"
  double value = 0;
  std::string unit;  // "%", "us", "ms", "count", "GB/s", "bytes", ""
};

// A fix a user can paste, and the facts of this trace that make it fit (`because`): clauses with
// numbers from the rule that wrote it (the op, shape or frame it targets) and from the checks that
// kept it (the device runs it, the trace shows it not yet done, the workload needs it). Every fix
// applies because of its finding; the JSON's applies_because leads with the finding's title.
struct Fix {
  std::string text;
  std::vector<std::string> because;
  Fix() = default;
  Fix(std::string t) : text(std::move(t)) {}  // NOLINT: a fix is written as its text
  Fix(const char* t) : text(t) {}             // NOLINT
  explicit Fix(std::string_view t) : text(t) {}
  Fix(std::string t, std::string why) : text(std::move(t)), because{std::move(why)} {}
  bool operator==(const Fix& o) const { return text == o.text; }
};

struct Finding {
  std::string id;     // stable, kebab-case: "input-bound", "launch-bound", ...
  std::string title;  // one line with the key number: "Input-bound: 33% of each step waits for data"
  Dimension dimension = Dimension::kCompute;
  Layer layer = Layer::kMacro;
  Severity severity = Severity::kInfo;
  std::string detail;  // a few sentences: what was measured and why it matters
  std::vector<Evidence> evidence;
  std::vector<Fix> fixes;  // concrete code or config a user can paste, best first
  // Fixes the rule wrote that do not fit this trace, each with why (the device cannot run it, the
  // trace shows it already in place, the workload is another): said, never offered.
  struct LeftOut {
    std::string fix;
    std::string because;
  };
  std::vector<LeftOut> fixes_left_out;
  // Share of the analysed wall time the cause accounts for (0..1), and the Amdahl bound on the
  // speed-up if the cause vanished: 1 / (1 - share). 1.0 when the gain cannot be bounded.
  double time_share = 0;
  double max_speedup = 1.0;
  // The step-time speed-up the what-if predicts for the fix (analysis/causal/whatif.h: each step
  // re-timed on its dependency graph without the cause), for causes the what-if can remove;
  // -1 when not predicted. It sits beside the bound: the bound is what the fix can give at most,
  // the prediction what the step's dependencies let through.
  double predicted_speedup = -1;
  // What the fix changes, for the what-if to re-time: the kernels or ops it speeds up (exact names)
  // or the waits it removes. Empty for a cause whose fix the step graph cannot express (a setting,
  // a transport); the four removals of `ferret whatif --remove` are set by the diagnosis from the id.
  RetimeChanges fix;
  std::string threshold;  // "DataLoader > 5% of step (TensorBoard plugin); >= 20% high (XProf)"
  // Rules that judge the same cause from different angles share this key (their registry rows'
  // cause_key; a job rule may key by subject, as a rank's stragglers); the diagnosis keeps
  // the higher-ranked finding and folds the other's evidence and fixes into it. Empty = the id.
  std::string cause;
  // Where the cause happens in the trace (its longest occurrences), for the timeline views; empty
  // when it is not one place in time (an operator's efficiency, a setting), then it spans the window.
  Occurrences where;
  // Sentences several findings of one cause would share, as flags: folding ORs them and the
  // diagnosis writes each into the detail once, after folding (say_python_frames).
  struct Notes {
    bool python_frames = false;  // the Python frames holding the host while the device idles
    bool record_stacks = false;  // no Python frames recorded: how to record them
    bool operator|=(const Notes& o) {
      python_frames = python_frames || o.python_frames;
      record_stacks = record_stacks || o.record_stacks;
      return true;
    }
  } notes;
};

// What a fix changes, for Finding::fix. `saved_ns` of `selected_ns` is the time the rule says the
// fix wins back on the events it selects: they run selected / (selected - saved) times faster
// (nothing is added when either is not positive or saved is not below selected).
using NamePredicate = std::function<bool(std::string_view)>;
void fix_speeds_up_device_work(Finding& f, std::string description, double selected_ns, double saved_ns,
                               NamePredicate selects, NamePredicate kernels = {});
void fix_speeds_up_device_events(Finding& f, std::string description, double selected_ns, double saved_ns,
                                 std::vector<EventIndex> events);
void fix_speeds_up_host_ops(Finding& f, std::string description, double selected_ns, double saved_ns,
                            NamePredicate selects);
// The very host ops (ascending), when the fix shortens some calls of a name only.
void fix_speeds_up_host_events(Finding& f, std::string description, double selected_ns, double saved_ns,
                               std::vector<EventIndex> events);

// Why a fix fits this trace, in one line: the finding's title, then the fix's own facts.
std::string applies_because(const Finding& f, const Fix& fix);
// The fixes' texts, in order.
std::vector<std::string> fix_texts(const Finding& f);
// Adds a fact to the fix's reasons, once.
void add_because(Fix& fix, std::string fact);

// Amdahl: removing `share` of the time speeds up by 1 / (1 - share). Capped to avoid infinity.
double amdahl_speedup(double share);
// part / whole, 0 when whole is not positive: a cause's share of the time it was measured over.
double share_of(std::int64_t part, std::int64_t whole);

}  // namespace ferret
