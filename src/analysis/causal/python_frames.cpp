#include "analysis/causal/python_frames.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/classify.h"
#include "base/text.h"

namespace ferret {

namespace {

// A directory of the path, as a whole component: "PIL" matches "PIL/Image.py" and
// "/usr/lib/python3/site-packages/PIL/Image.py", not "myPIL/x.py".
bool has_dir(std::string_view file, std::string_view dir) {
  for (std::size_t at = file.find(dir); at != std::string_view::npos; at = file.find(dir, at + 1)) {
    const bool starts = at == 0 || file[at - 1] == '/' || file[at - 1] == '\\';
    const std::size_t after = at + dir.size();
    if (starts && after < file.size() && (file[after] == '/' || file[after] == '\\')) return true;
  }
  return false;
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// The file and function of "file(42): function"; both empty for built-ins and module names.
std::pair<std::string_view, std::string_view> file_and_function(std::string_view name) {
  const std::size_t colon = name.find("): ");
  if (name.empty() || name.front() == '<' || colon == std::string_view::npos) return {};
  const std::size_t open = name.rfind('(', colon);
  if (open == std::string_view::npos) return {};
  return {name.substr(0, open), name.substr(colon + 3)};
}

// Caches per distinct name: its row key and its preprocessing kind.
class FrameNames {
 public:
  explicit FrameNames(const TraceModel& model) : model_(model), key_(model.strings.size(), kUnset) {}

  std::uint32_t key(StrId id) {
    if (key_[id] == kUnset) {
      const std::string_view name = model_.strings.view(id);
      std::string k = python_frame_key(name);
      auto [it, added] = by_key_.try_emplace(k, static_cast<std::uint32_t>(keys_.size()));
      if (added) {
        keys_.push_back(std::move(k));
        kinds_.push_back(preprocessing_kind(name));
      }
      key_[id] = it->second;
    }
    return key_[id];
  }
  const std::string& text(std::uint32_t key) const { return keys_[key]; }
  const char* kind(std::uint32_t key) const { return kinds_[key]; }
  std::size_t size() const { return keys_.size(); }

 private:
  static constexpr std::uint32_t kUnset = 0xFFFFFFFFu;
  const TraceModel& model_;
  std::vector<std::uint32_t> key_;
  std::unordered_map<std::string, std::uint32_t> by_key_;
  std::vector<std::string> keys_;
  std::vector<const char*> kinds_;
};

bool on_thread(const TraceModel& m, EventIndex e, std::int32_t pid, std::int32_t tid) {
  return m.pid[e] == pid && m.tid[e] == tid;
}

Interval clipped(const TraceModel& m, const TimeWindow& w, EventIndex e) {
  return {std::max(m.ts_ns[e], w.start), std::min(m.ts_ns[e] + std::max<std::int64_t>(0, m.dur_ns[e]), w.end)};
}

// Python frames overlapping the window, per thread.
std::map<std::pair<std::int32_t, std::int32_t>, std::vector<EventIndex>> frames_by_thread(const TraceModel& m,
                                                                                          const TimeWindow& w,
                                                                                          bool& recorded) {
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<EventIndex>> out;
  for (std::size_t i = 0; i < m.size(); ++i) {
    const EventIndex e = static_cast<EventIndex>(i);
    if (m.kind[e] != EventKind::kPythonFunction || m.phase[e] != 'X') continue;
    recorded = true;
    if (clipped(m, w, e).length() > 0) out[{m.pid[e], m.tid[e]}].push_back(e);
  }
  return out;
}

// GPU activity on the counted devices, clipped to the window and merged.
std::vector<Interval> gpu_busy(const TraceModel& m, const AnalysisContext& ctx, const TimeWindow& w) {
  std::vector<Interval> busy;
  for (EventIndex e : m.relations.gpu_events) {
    const EventKind k = m.kind[e];
    if ((k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset) && ctx.counts_gpu_event(m, e))
      busy.push_back(clipped(m, w, e));
  }
  merge_intervals(busy);
  return busy;
}

// On the thread: operators and runtime calls (time in them is not pure Python), and DataLoader
// spans (preprocessing inside them is the input pipeline's, which input-bound reports).
struct ThreadSpans {
  std::vector<Interval> ops, loading;
};
ThreadSpans thread_spans(const TraceModel& m, const TimeWindow& w, std::int32_t pid, std::int32_t tid) {
  ThreadSpans t;
  for (std::size_t i = 0; i < m.size(); ++i) {
    const EventIndex e = static_cast<EventIndex>(i);
    const EventKind k = m.kind[e];
    if (m.phase[e] != 'X' || !on_thread(m, e, pid, tid)) continue;
    if ((k == EventKind::kCpuOp || k == EventKind::kUserAnnotation) && is_dataloader_span(m.name_of(e)))
      t.loading.push_back(clipped(m, w, e));
    else if (k == EventKind::kCpuOp || is_launch_api(k))
      t.ops.push_back(clipped(m, w, e));
  }
  merge_intervals(t.ops);
  merge_intervals(t.loading);
  return t;
}

std::int64_t idle_in(const std::vector<Interval>& idle, const std::vector<Interval>& merged) {
  std::int64_t n = 0;
  for (const Interval& i : merged) n += covered_length(idle, i.start, i.end);
  return n;
}

// Each frame's caller among `frames` (sorted by start, outer first): the frame its "Python parent
// id" names when that frame is here, else the innermost frame enclosing it in time.
std::vector<std::uint32_t> callers(const TraceModel& m, const std::vector<EventIndex>& frames) {
  constexpr std::uint32_t kNone = 0xFFFFFFFFu;
  std::unordered_map<EventIndex, std::uint32_t> local;
  local.reserve(frames.size());
  for (std::uint32_t i = 0; i < frames.size(); ++i) local.emplace(frames[i], i);
  std::vector<std::uint32_t> parent(frames.size(), kNone);
  std::vector<std::uint32_t> stack;
  for (std::uint32_t i = 0; i < frames.size(); ++i) {
    const EventIndex e = frames[i];
    while (!stack.empty() && m.end_ns(frames[stack.back()]) <= m.ts_ns[e]) stack.pop_back();
    if (!stack.empty()) parent[i] = stack.back();
    if (const EventIndex p = m.python_parent_of(e); p != kNoEvent)
      if (auto it = local.find(p); it != local.end()) parent[i] = it->second;
    stack.push_back(i);
  }
  return parent;
}

// Rows by GPU idle (inclusive then self, or self then inclusive), at most `limit`, only frames
// that held some.
std::vector<PythonFrameStat> top_rows(std::vector<PythonFrameStat> rows, std::size_t limit, bool by_self = false) {
  std::erase_if(rows, [&](const PythonFrameStat& r) { return (by_self ? r.self_ns : r.inclusive_ns) <= 0; });
  std::sort(rows.begin(), rows.end(), [&](const PythonFrameStat& a, const PythonFrameStat& b) {
    const auto ka = by_self ? std::tie(a.self_ns, a.inclusive_ns) : std::tie(a.inclusive_ns, a.self_ns);
    const auto kb = by_self ? std::tie(b.self_ns, b.inclusive_ns) : std::tie(b.inclusive_ns, b.self_ns);
    if (ka != kb) return ka > kb;
    return a.frame < b.frame;
  });
  if (rows.size() > limit) rows.resize(limit);
  return rows;
}

}  // namespace

std::string python_frame_key(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  const auto [file, function] = file_and_function(name);
  if (!file.empty() || !function.empty()) {
    out.append(file);
    out += ": ";
    out.append(function);
    return out;
  }
  // "<built-in method view of Tensor object at 0x7bc8d80b5c20>": the address differs per object.
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name.substr(i).starts_with(" at 0x")) {
      std::size_t j = i + 6;
      while (j < name.size() && is_hex(name[j])) ++j;
      i = j - 1;
      continue;
    }
    out += name[i];
  }
  return out;
}

const char* preprocessing_kind(std::string_view name) {
  const auto [file, function] = file_and_function(name);
  if (file.empty()) return nullptr;
  const bool transformers = has_dir(file, "transformers");
  if (transformers && contains(file, "pipelines") &&
      (function == "preprocess" || function == "postprocess" || function.starts_with("_sanitize")))
    return "pipeline pre/post-processing";
  if (has_dir(file, "tokenizers") || has_dir(file, "sentencepiece") || has_dir(file, "tiktoken") ||
      (transformers && contains(file, "tokenization_")))
    return "tokenization";
  if (has_dir(file, "PIL") || contains(file, "torchvision/io/") || has_dir(file, "av") || has_dir(file, "decord") ||
      has_dir(file, "imageio") || has_dir(file, "cv2") || has_dir(file, "torchcodec") || has_dir(file, "librosa") ||
      has_dir(file, "soundfile"))
    return "image/video/audio decoding";
  if (has_dir(file, "scipy") || has_dir(file, "skimage") || has_dir(file, "numpy") ||
      contains(file, "torchvision/transforms/") ||
      (transformers &&
       (contains(file, "image_processing") || contains(file, "image_transforms") || contains(file, "image_utils") ||
        contains(file, "video_processing") || contains(file, "video_utils") || contains(file, "feature_extraction"))))
    return "resizing/array work";
  return nullptr;
}

PythonFramesResult analyze_python_frames(const TraceModel& model, const AnalysisContext& ctx, std::int32_t pid,
                                         std::int32_t tid) {
  PythonFramesResult r;
  const TimeWindow w = ctx.window();
  r.window_ns = ctx.window_ns();
  r.steps = ctx.has_steps ? ctx.steps.size() : 0;
  auto by_thread = frames_by_thread(model, w, r.recorded);
  const std::vector<Interval> busy = gpu_busy(model, ctx, w);
  r.has_gpu = !busy.empty();
  const std::vector<Interval> idle = subtract({{w.start, w.end}}, busy);
  r.gpu_idle_ns = total_length(idle);
  if (by_thread.empty()) return r;
  auto chosen = by_thread.find({pid, tid});
  if (chosen == by_thread.end())
    chosen = std::max_element(by_thread.begin(), by_thread.end(),
                              [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  r.pid = chosen->first.first;
  r.tid = chosen->first.second;
  std::vector<EventIndex>& frames = chosen->second;
  std::sort(frames.begin(), frames.end(), [&](EventIndex a, EventIndex b) {
    if (model.ts_ns[a] != model.ts_ns[b]) return model.ts_ns[a] < model.ts_ns[b];
    if (model.dur_ns[a] != model.dur_ns[b]) return model.dur_ns[a] > model.dur_ns[b];
    return a < b;
  });
  r.frames = frames.size();

  // Self time: a frame's idle time outside its callees.
  const std::vector<std::uint32_t> parent = callers(model, frames);
  std::vector<std::vector<Interval>> children(frames.size());
  std::vector<int> depth(frames.size(), 0);
  for (std::uint32_t i = 0; i < frames.size(); ++i)
    if (parent[i] != 0xFFFFFFFFu) {
      children[parent[i]].push_back(clipped(model, w, frames[i]));
      if (parent[i] < i) depth[i] = depth[parent[i]] + 1;  // callers start first: already known
    }

  FrameNames names(model);
  std::vector<std::vector<Interval>> spans_by_key;
  std::vector<PythonFrameStat> rows;
  std::vector<Interval> all, preprocessing;
  std::map<std::string, std::vector<Interval>> by_kind;
  for (std::uint32_t i = 0; i < frames.size(); ++i) {
    const EventIndex e = frames[i];
    const std::uint32_t key = names.key(model.name[e]);
    if (key >= rows.size()) {
      rows.resize(names.size());
      spans_by_key.resize(names.size());
    }
    const Interval span = clipped(model, w, e);
    merge_intervals(children[i]);
    const std::int64_t inner = idle_in(idle, clip(children[i], span.start, span.end));
    PythonFrameStat& row = rows[key];
    row.depth = row.calls == 0 ? depth[i] : std::min(row.depth, depth[i]);
    ++row.calls;
    row.self_ns += covered_length(idle, span.start, span.end) - inner;
    spans_by_key[key].push_back(span);
    all.push_back(span);
    if (const char* kind = names.kind(key)) {
      preprocessing.push_back(span);
      by_kind[kind].push_back(span);
      r.preprocessing_events.push_back(e);
    }
  }
  for (std::uint32_t key = 0; key < rows.size(); ++key) {
    merge_intervals(spans_by_key[key]);
    rows[key].frame = names.text(key);
    rows[key].preprocessing = names.kind(key);
    rows[key].inclusive_ns = idle_in(idle, spans_by_key[key]);
    rows[key].host_ns = total_length(spans_by_key[key]);
  }
  const ThreadSpans thread = thread_spans(model, w, r.pid, r.tid);
  merge_intervals(all);
  merge_intervals(preprocessing);
  preprocessing = subtract(preprocessing, thread.loading);
  // As the time above: frames inside a DataLoader wait are that wait's, not the loop's.
  std::erase_if(r.preprocessing_events, [&](EventIndex e) {
    const Interval span = clipped(model, w, e);
    return covered_length(thread.loading, span.start, span.end) >= span.end - span.start;
  });
  std::sort(r.preprocessing_events.begin(), r.preprocessing_events.end());
  const std::vector<Interval> python_idle = intersect(all, idle);
  r.python_idle_ns = total_length(python_idle);
  r.python_only_idle_ns = total_length(subtract(python_idle, thread.ops));
  r.preprocessing_ns = total_length(preprocessing);
  r.preprocessing_idle_ns = idle_in(idle, preprocessing);

  std::vector<std::pair<std::int64_t, std::string>> kinds;
  for (auto& [kind, spans] : by_kind) {
    merge_intervals(spans);
    if (const std::int64_t n = idle_in(idle, subtract(spans, thread.loading)); n > 0) kinds.push_back({n, kind});
  }
  std::sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& k : kinds) r.preprocessing_kinds.push_back(k.second);

  const std::size_t top = static_cast<std::size_t>(std::max(0, ctx.options.top_k));
  std::vector<PythonFrameStat> pre;
  for (const PythonFrameStat& row : rows)
    if (row.preprocessing) pre.push_back(row);
  r.top_self = top_rows(rows, top, /*by_self=*/true);
  r.top = top_rows(std::move(rows), top);
  r.preprocessing = top_rows(std::move(pre), top);
  return r;
}

}  // namespace ferret
