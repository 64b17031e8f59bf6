#include "model/relations.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "model/graphs.h"

namespace ferret {

std::int64_t profiler_step_number(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return -1;
  std::int64_t n = 0;
  const std::string_view digits = name.substr(kPrefix.size());
  if (digits.empty() || digits.size() > 18) return -1;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

namespace {

// Nesting by interval containment per (pid, tid). Spans are visited by start time (longer
// first on ties); a stack holds the open ancestors. A child that ends after its parent keeps
// the parent (it started inside it) and is clamped to the parent's end for nesting purposes
// only - its recorded duration is untouched. Each such case is counted as a repair.
void build_nesting(TraceModel& model) {
  Relations& rel = model.relations;
  const std::size_t n = model.size();
  rel.parent.assign(n, kNoEvent);

  // Bucket host spans by thread (counting sort keeps file order within a thread).
  std::map<std::pair<std::int32_t, std::int32_t>, std::uint32_t> thread_ids;
  std::vector<std::uint32_t> thread_of;  // per host span, in file order
  std::vector<EventIndex> spans;
  std::pair<std::int32_t, std::int32_t> last_thread{0, 0};
  std::uint32_t last_id = 0xFFFFFFFFu;
  for (std::size_t e = 0; e < n; ++e) {
    if (model.phase[e] != 'X' || !is_host_span(model.kind[e])) continue;
    const std::pair<std::int32_t, std::int32_t> thread{model.pid[e], model.tid[e]};
    if (thread != last_thread || last_id == 0xFFFFFFFFu) {
      last_id = thread_ids.try_emplace(thread, static_cast<std::uint32_t>(thread_ids.size())).first->second;
      last_thread = thread;
    }
    thread_of.push_back(last_id);
    spans.push_back(static_cast<EventIndex>(e));
  }
  std::vector<std::size_t> begin(thread_ids.size() + 1, 0);
  for (std::uint32_t t : thread_of) ++begin[t + 1];
  for (std::size_t t = 0; t < thread_ids.size(); ++t) begin[t + 1] += begin[t];
  std::vector<EventIndex> by_thread(spans.size());
  {
    std::vector<std::size_t> fill(begin.begin(), begin.end() - 1);
    for (std::size_t i = 0; i < spans.size(); ++i) by_thread[fill[thread_of[i]]++] = spans[i];
  }
  std::vector<EventIndex>().swap(spans);
  std::vector<std::uint32_t>().swap(thread_of);

  struct Key {
    std::int64_t ts;
    std::int64_t neg_dur;  // longer spans first on equal start: they are the parents
    EventIndex event;
  };
  std::vector<Key> keys;
  struct Open {
    EventIndex event;
    std::int64_t end;  // nesting end: min(own end, parent's nesting end)
  };
  std::vector<Open> stack;
  std::string first_repair;
  for (std::size_t t = 0; t < thread_ids.size(); ++t) {
    keys.clear();
    keys.reserve(begin[t + 1] - begin[t]);  // exact: growth by doubling would peak at 2x (--max-memory counts 1x)
    for (std::size_t i = begin[t]; i < begin[t + 1]; ++i) {
      const EventIndex e = by_thread[i];
      keys.push_back({model.ts_ns[e], -model.dur_ns[e], e});
    }
    auto less = [](const Key& a, const Key& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.neg_dur != b.neg_dur) return a.neg_dur < b.neg_dur;
      return a.event < b.event;
    };
    if (!std::is_sorted(keys.begin(), keys.end(), less)) std::sort(keys.begin(), keys.end(), less);
    // A stack holds the open ancestors. A child that ends after its parent keeps the parent (it
    // started inside it) and is clamped to the parent's end for nesting only - its recorded
    // duration is untouched. Each such case is counted as a repair.
    stack.clear();
    for (const Key& k : keys) {
      const std::int64_t start = k.ts;
      std::int64_t end = k.ts - k.neg_dur;
      while (!stack.empty() && stack.back().end <= start) stack.pop_back();
      if (!stack.empty()) {
        rel.parent[k.event] = stack.back().event;
        if (end > stack.back().end) {
          if (rel.nesting_repairs++ == 0)
            first_repair = fmt::format("event #{} \"{}\"", k.event, model.name_of(k.event));
          end = stack.back().end;
        }
      }
      stack.push_back({k.event, end});
    }
  }
  if (rel.nesting_repairs > 0)
    model.report.repair("span outlives its parent: nested under the span it starts in", first_repair,
                        rel.nesting_repairs);
}

bool is_kernel_launch_name(std::string_view name) {
  return name.find("LaunchKernel") != std::string_view::npos || name.find("GraphLaunch") != std::string_view::npos ||
         name.find("LaunchCooperativeKernel") != std::string_view::npos ||
         name.find("ModuleLaunchKernel") != std::string_view::npos;
}

// Sorted (id, ordinal) pairs: half the memory of a hash map and cache-friendly to build.
class IdIndex {
 public:
  void add(std::int64_t id, std::uint32_t ordinal) { pairs_.emplace_back(id, ordinal); }
  void finish() {
    // Stable: with duplicate ids the first occurrence wins. Ids mostly arrive in order.
    auto less = [](const auto& a, const auto& b) { return a.first < b.first; };
    if (!std::is_sorted(pairs_.begin(), pairs_.end(), less)) std::stable_sort(pairs_.begin(), pairs_.end(), less);
  }
  const std::vector<std::pair<std::int64_t, std::uint32_t>>& pairs() const { return pairs_; }
  std::uint32_t find(std::int64_t id) const {
    auto it =
        std::lower_bound(pairs_.begin(), pairs_.end(), id, [](const auto& p, std::int64_t x) { return p.first < x; });
    return (it != pairs_.end() && it->first == id) ? it->second : kNone;
  }
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;

 private:
  std::vector<std::pair<std::int64_t, std::uint32_t>> pairs_;
};

// GPU work with no launch in the trace that was queued before profiling began: CUPTI and
// roctracer number API calls in increasing order within a process, so an activity whose
// correlation id is below every launch's in the trace, or that starts before the first launch
// call, cannot have been launched by the recorded host. Judged only when linking works in this
// trace (some activity matched a launch); unmatched work later on (a lost host event) stays in.
void mark_launched_before_trace(TraceModel& model, const std::vector<std::uint32_t>& launch_of_gpu) {
  Relations& rel = model.relations;
  constexpr std::uint32_t kUnmatched = 0xFFFFFFFFu;
  if (std::find_if(launch_of_gpu.begin(), launch_of_gpu.end(), [](std::uint32_t l) { return l != kUnmatched; }) ==
      launch_of_gpu.end())
    return;
  std::int64_t first_correlation = std::numeric_limits<std::int64_t>::max();
  std::int64_t first_launch_ns = std::numeric_limits<std::int64_t>::max();
  for (const EventIndex launch : rel.launches) {
    first_correlation = std::min(first_correlation, model.correlation[launch]);
    first_launch_ns = std::min(first_launch_ns, model.ts_ns[launch]);
  }
  for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
    const EventIndex e = rel.gpu_events[g];
    if (launch_of_gpu[g] != kUnmatched || model.kind[e] == EventKind::kSync) continue;
    const std::int64_t corr = model.correlation[e];
    if (!((corr != kNoId && corr < first_correlation) || model.ts_ns[e] < first_launch_ns)) continue;
    if (rel.launched_before_trace_bits.empty()) rel.launched_before_trace_bits.assign(model.size(), false);
    rel.launched_before_trace_bits[e] = true;
    ++rel.launched_before_trace;
    rel.launched_before_trace_ns += std::max<std::int64_t>(0, model.dur_ns[e]);
  }
}

void build_correlation(TraceModel& model) {
  Relations& rel = model.relations;
  const std::size_t n = model.size();
  IdIndex launch_by_corr;
  for (std::size_t e = 0; e < n; ++e) {
    if (is_launch_api(model.kind[e]) && model.correlation[e] != kNoId) {
      launch_by_corr.add(model.correlation[e], static_cast<std::uint32_t>(rel.launches.size()));
      rel.launches.push_back(static_cast<EventIndex>(e));
    }
  }
  launch_by_corr.finish();
  // Match GPU activity to launches by a merge join of the two id-sorted lists: binary searches
  // into a million launches cost a cache miss per step and dominated this function.
  IdIndex gpu_by_corr;
  for (std::size_t e = 0; e < n; ++e) {
    const EventKind k = model.kind[e];
    if (k != EventKind::kKernel && k != EventKind::kMemcpy && k != EventKind::kMemset && k != EventKind::kSync)
      continue;
    if (model.correlation[e] != kNoId)
      gpu_by_corr.add(model.correlation[e], static_cast<std::uint32_t>(rel.gpu_events.size()));
    rel.gpu_events.push_back(static_cast<EventIndex>(e));
  }
  gpu_by_corr.finish();
  std::vector<std::uint32_t> launch_of_gpu(rel.gpu_events.size(), IdIndex::kNone);
  {
    const auto& launch_pairs = launch_by_corr.pairs();
    std::size_t li = 0;
    for (const auto& [corr, g] : gpu_by_corr.pairs()) {
      while (li < launch_pairs.size() && launch_pairs[li].first < corr) ++li;
      if (li < launch_pairs.size() && launch_pairs[li].first == corr) launch_of_gpu[g] = launch_pairs[li].second;
    }
  }
  mark_launched_before_trace(model, launch_of_gpu);
  std::vector<std::uint32_t> count(rel.launches.size() + 1, 0);
  rel.gpu_launcher.resize(rel.gpu_events.size());
  for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
    const std::uint32_t li = launch_of_gpu[g];
    if (li != IdIndex::kNone)
      ++count[li];
    else if (model.kind[rel.gpu_events[g]] != EventKind::kSync)
      ++rel.unmatched_gpu;
    rel.gpu_launcher[g] = li != IdIndex::kNone ? rel.launches[li] : kNoEvent;
  }
  // CSR of launch -> GPU activities.
  rel.launch_gpu_begin.assign(rel.launches.size() + 1, 0);
  for (std::size_t i = 0; i < rel.launches.size(); ++i)
    rel.launch_gpu_begin[i + 1] = rel.launch_gpu_begin[i] + count[i];
  rel.launch_gpu.assign(rel.launch_gpu_begin.back(), kNoEvent);
  std::vector<std::uint32_t> fill(rel.launch_gpu_begin.begin(), rel.launch_gpu_begin.end() - 1);
  for (std::size_t g = 0; g < rel.gpu_events.size(); ++g)
    if (launch_of_gpu[g] != IdIndex::kNone) rel.launch_gpu[fill[launch_of_gpu[g]]++] = rel.gpu_events[g];
  for (std::size_t i = 0; i < rel.launches.size(); ++i)
    if (count[i] == 0 && is_kernel_launch_name(model.name_of(rel.launches[i]))) ++rel.launches_without_gpu;

  // Launch -> the CPU op it serves: innermost enclosing cpu_op, else the op with the same
  // External id, else the innermost user annotation (other than the step marker).
  rel.launch_op.assign(rel.launches.size(), kNoEvent);
  std::vector<std::size_t> unresolved;
  std::vector<EventIndex> annotation_of(rel.launches.size(), kNoEvent);
  // (nearest cpu_op, innermost non-step annotation below it) above each non-op span walked through,
  // memoised: launches nested in launches (thousands of identical runtime spans) made every walk
  // climb the whole chain, quadratic in its depth. Most launches sit right under an op and never
  // reach the map.
  std::unordered_map<EventIndex, std::pair<EventIndex, EventIndex>> above;
  std::vector<EventIndex> path;
  for (std::size_t i = 0; i < rel.launches.size(); ++i) {
    EventIndex op = kNoEvent, annotation = kNoEvent;
    path.clear();
    for (EventIndex p = rel.parent[rel.launches[i]]; p != kNoEvent; p = rel.parent[p]) {
      if (model.kind[p] == EventKind::kCpuOp) {
        op = p;
        break;
      }
      if (const auto known = above.find(p); known != above.end()) {
        std::tie(op, annotation) = known->second;
        break;
      }
      path.push_back(p);
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) {  // outermost first: inner annotations win
      if (model.kind[*it] == EventKind::kUserAnnotation && profiler_step_number(model.name_of(*it)) < 0)
        annotation = *it;
      above.emplace(*it, std::make_pair(op, annotation));
    }
    rel.launch_op[i] = op;
    annotation_of[i] = annotation;
    if (op == kNoEvent) unresolved.push_back(i);
  }
  if (unresolved.empty()) return;
  // Few launches lack an enclosing op: index only the External ids they need.
  IdIndex wanted;
  for (std::size_t i : unresolved)
    if (model.external_id[rel.launches[i]] != kNoId) wanted.add(model.external_id[rel.launches[i]], 0);
  wanted.finish();
  IdIndex op_by_external;
  for (std::size_t e = 0; e < n; ++e)
    if (model.kind[e] == EventKind::kCpuOp && model.external_id[e] != kNoId &&
        wanted.find(model.external_id[e]) != IdIndex::kNone)
      op_by_external.add(model.external_id[e], static_cast<std::uint32_t>(e));
  op_by_external.finish();
  for (std::size_t i : unresolved) {
    const std::int64_t ext = model.external_id[rel.launches[i]];
    const std::uint32_t op = ext != kNoId ? op_by_external.find(ext) : IdIndex::kNone;
    rel.launch_op[i] = op != IdIndex::kNone ? op : annotation_of[i];
  }
}

// Iterations of a trace without ProfilerStep#N. Top-level spans (operators and annotations with no
// operator or annotation around them) per thread, in time order, are what a loop repeats.
constexpr std::size_t kMinIterations = 3;          // fewer repeats are no loop to average over
constexpr std::size_t kMaxPeriodCandidates = 256;  // periods tried for a repeating operator sequence
constexpr std::size_t kMaxSequenceOps = 1'000'000;

using ThreadKey = std::pair<std::int32_t, std::int32_t>;

std::map<ThreadKey, std::vector<EventIndex>> top_level_spans(const TraceModel& model) {
  const Relations& rel = model.relations;
  std::map<ThreadKey, std::vector<EventIndex>> out;
  for (std::size_t i = 0; i < model.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    const EventKind k = model.kind[e];
    if (model.phase[e] != 'X' || (k != EventKind::kCpuOp && k != EventKind::kUserAnnotation)) continue;
    bool top = true;
    for (EventIndex p = rel.parent[e]; p != kNoEvent && top; p = rel.parent[p])
      top = model.kind[p] != EventKind::kCpuOp && model.kind[p] != EventKind::kUserAnnotation;
    if (top) out[{model.pid[e], model.tid[e]}].push_back(e);
  }
  for (auto& [thread, spans] : out)
    std::stable_sort(spans.begin(), spans.end(),
                     [&](EventIndex a, EventIndex b) { return model.ts_ns[a] < model.ts_ns[b]; });
  return out;
}

constexpr int kMaxWrapperDepth = 3;
constexpr std::size_t kMaxUnsyncedLoopOps = 3;  // as analysis/timeline/window_activity.h's micro-benchmark

// The operators and annotations directly under `span` (no operator or annotation between), in time
// order.
std::vector<EventIndex> child_spans(const TraceModel& model, EventIndex span) {
  const Relations& rel = model.relations;
  std::vector<EventIndex> out;
  for (std::size_t i = 0; i < model.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    const EventKind k = model.kind[e];
    if (e == span || model.phase[e] != 'X' || (k != EventKind::kCpuOp && k != EventKind::kUserAnnotation)) continue;
    if (model.pid[e] != model.pid[span] || model.tid[e] != model.tid[span]) continue;
    EventIndex p = rel.parent[e];
    while (p != kNoEvent && model.kind[p] != EventKind::kCpuOp && model.kind[p] != EventKind::kUserAnnotation)
      p = rel.parent[p];
    if (p == span) out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(), [&](EventIndex a, EventIndex b) { return model.ts_ns[a] < model.ts_ns[b]; });
  return out;
}

Step iteration(const TraceModel& model, std::int64_t number, EventIndex first, std::int64_t cpu_end) {
  Step s;
  s.number = number;
  s.event = first;
  s.start_ns = model.ts_ns[first];
  s.cpu_end_ns = s.end_ns = std::max(cpu_end, s.start_ns);
  return s;
}

// Spans named by `marks` on their most frequent thread, in time order.
std::vector<EventIndex> marker_spans(const TraceModel& model, const std::map<ThreadKey, std::vector<EventIndex>>& top,
                                     bool (*marks)(std::string_view)) {
  std::vector<EventIndex> best;
  for (const auto& [thread, spans] : top) {
    std::vector<EventIndex> found;
    for (EventIndex e : spans)
      if (marks(model.name_of(e))) found.push_back(e);
    if (found.size() > best.size()) best = std::move(found);
  }
  return best;
}

bool is_optimizer_step(std::string_view name) { return name.starts_with("Optimizer.step#"); }
bool is_dataloader_next(std::string_view name) { return name.starts_with("enumerate(DataLoader)#"); }

std::vector<Step> infer_iterations(TraceModel& model) {
  Relations& rel = model.relations;
  const auto top = top_level_spans(model);
  std::vector<Step> steps;
  // The optimizer's steps end each iteration: an iteration runs from the thread's first top-level
  // span after the previous optimizer step to the end of its own (the first from the thread's first).
  if (const std::vector<EventIndex> opt = marker_spans(model, top, is_optimizer_step); opt.size() >= kMinIterations) {
    const std::vector<EventIndex>& spans = top.at({model.pid[opt[0]], model.tid[opt[0]]});
    std::size_t next = 0;
    for (std::size_t k = 0; k < opt.size(); ++k) {
      const std::int64_t after = k == 0 ? INT64_MIN : model.end_ns(opt[k - 1]);
      while (next < spans.size() && model.ts_ns[spans[next]] < after) ++next;
      if (next >= spans.size() || model.ts_ns[spans[next]] > model.ts_ns[opt[k]]) continue;
      steps.push_back(iteration(model, static_cast<std::int64_t>(steps.size()) + 1, spans[next], model.end_ns(opt[k])));
    }
    rel.step_marker_kind = StepMarker::kOptimizer;
    rel.step_marker = std::string(model.name_of(opt[0]));
    return steps;
  }
  // The DataLoader hands out each batch at an iteration's start: iterations run from one batch to
  // the next (the last, with no next batch to end it, is left out).
  if (const std::vector<EventIndex> dl = marker_spans(model, top, is_dataloader_next); dl.size() > kMinIterations) {
    for (std::size_t k = 0; k + 1 < dl.size(); ++k)
      steps.push_back(iteration(model, static_cast<std::int64_t>(k) + 1, dl[k], model.ts_ns[dl[k + 1]]));
    rel.step_marker_kind = StepMarker::kDataLoader;
    rel.step_marker = std::string(model.name_of(dl[0]));
    return steps;
  }
  // A sequence of top-level operators that repeats whole, from the thread's first one: the thread
  // that starts first drives the work (the autograd engine's thread starts later, when backward runs).
  const std::vector<EventIndex>* driver = nullptr;
  for (const auto& [thread, spans] : top)
    if (!spans.empty() && (driver == nullptr || model.ts_ns[spans[0]] < model.ts_ns[(*driver)[0]])) driver = &spans;
  if (driver == nullptr) return steps;
  // One span around everything (a benchmark's or server's annotation of the whole run): the loop is
  // inside it, among its children.
  std::vector<EventIndex> seq = *driver;
  for (int depth = 0; depth < kMaxWrapperDepth && !seq.empty() && seq.size() < kMinIterations; ++depth) {
    const EventIndex wrapper = *std::max_element(
        seq.begin(), seq.end(), [&](EventIndex a, EventIndex b) { return model.dur_ns[a] < model.dur_ns[b]; });
    seq = child_spans(model, wrapper);
  }
  if (seq.size() < kMinIterations || seq.size() > kMaxSequenceOps) return steps;
  // The loop is the longest periodic tail of the sequence (setup comes first: tensors made,
  // weights loaded): for each period p whose last names repeat, how far back seq[i] == seq[i + p]
  // holds. The longest such stretch with at least three whole periods wins (the shorter period on
  // a tie), if it covers at least half the sequence's time.
  const std::size_t n = seq.size();
  auto name = [&](std::size_t i) { return model.name[seq[i]]; };
  std::size_t best_p = 0, best_start = n;
  std::size_t tried = 0;
  for (std::size_t p = 1; p <= n / kMinIterations && tried < kMaxPeriodCandidates; ++p) {
    if (name(n - 1) != name(n - 1 - p)) continue;
    ++tried;
    std::size_t start = n - p;
    while (start > 0 && name(start - 1) == name(start - 1 + p)) --start;
    const std::size_t whole = (n - start) / p;
    if (whole < kMinIterations + 1) continue;  // each iteration ends where the next begins
    start = n - whole * p;                     // whole periods, ending with the sequence
    if (n - start > n - best_start) best_p = p, best_start = start;
  }
  if (best_p == 0) return steps;
  const std::int64_t seq_span = model.end_ns(seq[n - 1]) - model.ts_ns[seq[0]];
  const std::int64_t loop_span = model.end_ns(seq[n - 1]) - model.ts_ns[seq[best_start]];
  if (2 * loop_span < seq_span) return steps;
  // Each iteration runs to the next one's start (what the loop does between its operators - a
  // sync, Python - belongs to it); the last, with no next to end it, is left out.
  const std::size_t count = (n - best_start) / best_p;
  // A longer repeating sequence may be a model's layers in one forward pass, not a loop: a loop's
  // iterations each wait for the device (a sync, .item()). A loop of a few operators (a
  // micro-benchmark) needs none.
  if (best_p > kMaxUnsyncedLoopOps) {
    std::vector<std::int64_t> syncs;
    for (std::size_t i = 0; i < model.size(); ++i) {
      const auto e = static_cast<EventIndex>(i);
      if (model.pid[e] != model.pid[seq[0]] || model.tid[e] != model.tid[seq[0]] || model.phase[e] != 'X') continue;
      const std::string_view nm = model.name_of(e);
      if ((is_launch_api(model.kind[e]) && nm.find("Synchronize") != std::string_view::npos) ||
          nm == "aten::_local_scalar_dense" || nm == "aten::item")
        syncs.push_back(model.ts_ns[e]);
    }
    std::sort(syncs.begin(), syncs.end());
    for (std::size_t k = 0; k + 1 < count; ++k) {
      const std::int64_t from = model.ts_ns[seq[best_start + k * best_p]];
      const std::int64_t to = model.ts_ns[seq[best_start + (k + 1) * best_p]];
      auto it = std::lower_bound(syncs.begin(), syncs.end(), from);
      if (it == syncs.end() || *it >= to) return steps;
    }
  }
  for (std::size_t k = 0; k + 1 < count; ++k) {
    const std::size_t first = best_start + k * best_p;
    steps.push_back(iteration(model, static_cast<std::int64_t>(k) + 1, seq[first], model.ts_ns[seq[first + best_p]]));
  }
  rel.step_marker_kind = StepMarker::kRepeatedOps;
  rel.step_marker = std::string(model.name_of(seq[best_start]));
  rel.step_marker_ops = best_p;
  return steps;
}

void build_steps(TraceModel& model) {
  Relations& rel = model.relations;
  std::vector<Step> steps;
  for (std::size_t e = 0; e < model.size(); ++e) {
    if (model.phase[e] != 'X' || !is_host_span(model.kind[e])) continue;
    const std::int64_t number = profiler_step_number(model.name_of(static_cast<EventIndex>(e)));
    if (number < 0) continue;
    Step s;
    s.number = number;
    s.event = static_cast<EventIndex>(e);
    s.start_ns = model.ts_ns[e];
    s.cpu_end_ns = s.end_ns = model.end_ns(static_cast<EventIndex>(e));
    steps.push_back(s);
  }
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
  // A step span of no duration is one whose duration was broken (and repaired to 0): kept as a 0 us
  // step it would move the mean. The profiler's steps follow each other, so it ends where the next
  // begins; the last one, with nothing after it, is left out. Either way, said.
  std::size_t ended_at_next = 0;
  const std::int64_t left_out =
      !steps.empty() && steps.back().cpu_end_ns <= steps.back().start_ns ? steps.back().number : -1;
  if (left_out >= 0) steps.pop_back();
  for (std::size_t i = 0; i + 1 < steps.size(); ++i) {
    if (steps[i].cpu_end_ns > steps[i].start_ns) continue;
    steps[i].cpu_end_ns = steps[i].end_ns = steps[i + 1].start_ns;
    ++ended_at_next;
  }
  if (ended_at_next > 0)
    model.report.notes.push_back(fmt::format(
        "{} ProfilerStep span{} without a duration (a broken one, repaired to 0) ended at the next step's start",
        ended_at_next, ended_at_next == 1 ? "" : "s"));
  if (left_out >= 0)
    model.report.notes.push_back(
        fmt::format("last step ProfilerStep#{} has no duration (a broken one, repaired to 0): left out", left_out));
  if (steps.empty()) steps = infer_iterations(model);
  if (steps.empty()) return;
  // GPU work belongs to the step whose CPU span contains its launch call.
  for (std::size_t i = 0; i < rel.launches.size(); ++i) {
    const EventIndex launch = rel.launches[i];
    const std::int64_t t = model.ts_ns[launch];
    auto it =
        std::upper_bound(steps.begin(), steps.end(), t, [](std::int64_t x, const Step& s) { return x < s.start_ns; });
    if (it == steps.begin()) continue;
    Step& step = *(it - 1);
    if (t >= step.cpu_end_ns) continue;
    for (std::uint32_t g = rel.launch_gpu_begin[i]; g < rel.launch_gpu_begin[i + 1]; ++g) {
      const EventIndex gpu = rel.launch_gpu[g];
      step.end_ns = std::max(step.end_ns, model.end_ns(gpu));
      if (model.kind[gpu] == EventKind::kKernel) ++step.kernels;
      if (model.kind[gpu] == EventKind::kSync) continue;  // a wait, not work
      step.gpu_start_ns = step.gpu_end_ns == 0 ? model.ts_ns[gpu] : std::min(step.gpu_start_ns, model.ts_ns[gpu]);
      step.gpu_end_ns = std::max(step.gpu_end_ns, model.end_ns(gpu));
    }
  }
  // torch 2.x writes a GPU-side copy of each step (gpu_user_annotation ProfilerStep#N): Kineto's
  // own span of the step's GPU work. It wins over the launch-derived span and extends the step.
  for (std::size_t e = 0; e < model.size() && rel.step_marker_kind == StepMarker::kProfilerStep; ++e) {
    if (model.kind[e] != EventKind::kGpuUserAnnotation || model.phase[e] != 'X') continue;
    const std::int64_t number = profiler_step_number(model.name_of(static_cast<EventIndex>(e)));
    if (number < 0) continue;
    for (Step& step : steps) {
      if (step.number != number) continue;
      if (!step.gpu_span_from_annotation) {
        step.gpu_start_ns = model.ts_ns[e];
        step.gpu_end_ns = model.end_ns(static_cast<EventIndex>(e));
        step.gpu_span_from_annotation = true;
      } else {  // one copy per device: their union
        step.gpu_start_ns = std::min(step.gpu_start_ns, model.ts_ns[e]);
        step.gpu_end_ns = std::max(step.gpu_end_ns, model.end_ns(static_cast<EventIndex>(e)));
      }
      step.end_ns = std::max(step.end_ns, step.gpu_end_ns);
      break;
    }
  }
  // Steps never overlap: a step starts no earlier than the previous one's (GPU-extended) end,
  // as in the TensorBoard plugin, so per-step times sum to the wall time they cover.
  for (std::size_t i = 1; i < steps.size(); ++i) {
    steps[i].start_ns = std::max(steps[i].start_ns, steps[i - 1].end_ns);
    steps[i].end_ns = std::max(steps[i].end_ns, steps[i].start_ns);
  }
  if (steps.size() >= 2) {
    const Step& last = steps.back();
    const Step& prev = steps[steps.size() - 2];
    if (static_cast<double>(last.kernels) < kIncompleteStepKernelShare * static_cast<double>(prev.kernels)) {
      rel.dropped_step = last;
      model.report.notes.push_back(
          fmt::format("last {}{} launched {} kernels, under 80% of the previous step's {}: "
                      "excluded as incomplete",
                      rel.step_marker_kind == StepMarker::kProfilerStep ? "step ProfilerStep#" : "iteration ",
                      last.number, last.kernels, prev.kernels));
      steps.pop_back();
    }
  }
  rel.steps = std::move(steps);
}

// Index of `id` in `ids` (sorted ascending), searched outward from position `near`: a frame's
// caller is usually a few frames back, so this costs a few cached compares, not a binary search
// over every frame. ids.size() when absent.
std::size_t find_sorted_near(const std::vector<std::int64_t>& ids, std::size_t near, std::int64_t id) {
  std::size_t lo = near, hi = near + 1;
  std::size_t step = 1;
  if (ids[near] >= id) {
    while (step <= near && ids[near - step] > id) step *= 2;
    lo = step <= near ? near - step : 0;
  } else {
    while (near + step < ids.size() && ids[near + step] < id) step *= 2;
    hi = std::min(ids.size(), near + step + 1);
  }
  const auto it = std::lower_bound(ids.begin() + static_cast<std::ptrdiff_t>(lo),
                                   ids.begin() + static_cast<std::ptrdiff_t>(hi), id);
  return (it != ids.begin() + static_cast<std::ptrdiff_t>(hi) && *it == id) ? static_cast<std::size_t>(it - ids.begin())
                                                                            : ids.size();
}

// Python call tree from the frames' own ids, not from nesting: a frame's "Python parent id" names
// its caller even when clock skew or a missing span would break interval containment.
void build_python_tree(TraceModel& model) {
  Relations& rel = model.relations;
  const std::size_t frames = model.python_frames.size();
  rel.python_parent.assign(frames, kNoEvent);
  if (frames == 0) return;
  std::vector<std::int64_t> ids(frames);
  for (std::size_t i = 0; i < frames; ++i) ids[i] = model.python_frames[i].id;
  // torch numbers frames as they start and writes them in that order, so the ids are usually
  // sorted already; then a frame's position is its row. Otherwise sort (id, row) pairs.
  const bool in_row_order = std::is_sorted(ids.begin(), ids.end());
  IdIndex frame_by_id;
  if (!in_row_order) {
    for (std::size_t i = 0; i < frames; ++i)
      if (ids[i] != kNoId) frame_by_id.add(ids[i], static_cast<std::uint32_t>(i));
    frame_by_id.finish();
  }
  for (std::size_t i = 0; i < frames; ++i) {
    const std::int64_t parent_id = model.python_frames[i].parent_id;
    if (parent_id == kNoId) continue;  // a root
    std::size_t parent = frames;
    if (in_row_order) {
      parent = find_sorted_near(ids, i, parent_id);
    } else if (const std::uint32_t row = frame_by_id.find(parent_id); row != IdIndex::kNone) {
      parent = row;
    }
    if (parent == frames || parent == i) {
      ++rel.python_orphans;  // its caller started before the profiler did, or was not recorded
      continue;
    }
    rel.python_parent[i] = model.python_frames[parent].event;
  }
}

}  // namespace

void build_relations(TraceModel& model) {
  model.relations = Relations{};
  build_nesting(model);
  build_correlation(model);
  build_graph_relations(model);
  build_steps(model);
  build_python_tree(model);
  model.relations.built = true;
}

}  // namespace ferret
