#include "ingest/allocator_snapshot_reader.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "base/input_error.h"
#include "ingest/byte_source.h"
#include "ingest/pickle_reader.h"
#include "ingest/trace_loader.h"

namespace ferret {

namespace {

class Converter {
 public:
  Converter(const PickleDocument& doc, AllocatorSnapshot& out, std::string name)
      : doc_(doc), out_(out), name_(std::move(name)), budget_(4 * doc.size() + 1'000'000) {}

  void run() {
    const std::string& name = name_;
    const PickleValue& root = doc_.root;
    if (root.kind != PickleKind::kDict)
      throw InputError(fmt::format("{}: not a torch memory snapshot: the pickle holds a {}, not a dict", name,
                                   pickle_kind_name(root.kind)));
    const PickleValue* segments = doc_.get(root, "segments");
    if (segments == nullptr || segments->kind != PickleKind::kList)
      throw InputError(name + ": not a torch memory snapshot: no \"segments\" list (torch.cuda.memory._snapshot())");
    for (const PickleValue& s : doc_.items(*segments)) segment(s);
    if (doc_.truncated_at) {
      out_.notes.push_back(fmt::format(
          "the file ends at byte {} before the pickle's end (cut short: the job may have died while writing it); "
          "read as far as it goes, {} half-written value{} left out",
          *doc_.truncated_at, doc_.dropped_partial, doc_.dropped_partial == 1 ? "" : "s"));
      if (doc_.incomplete(*segments))
        out_.notes.push_back(fmt::format("the segment list was cut after {} segment{}: the totals cover only those",
                                         out_.segments.size(), out_.segments.size() == 1 ? "" : "s"));
    }
    const PickleValue* traces = doc_.get(root, "device_traces");
    bool traces_cut = traces != nullptr && doc_.incomplete(*traces);
    if (traces != nullptr && traces->kind == PickleKind::kList)
      for (const PickleValue& device : doc_.items(*traces)) traces_cut = traces_cut || doc_.incomplete(device);
    // The device trace is walked back from the snapshot's end state: with its last events missing
    // every point of it would be wrong, so a cut trace is left out whole.
    if (traces_cut) {
      out_.notes.push_back("the device trace was cut: left out (its peaks and out-of-memory states need every event)");
      traces = nullptr;
    }
    for (const PickleValue& device : list_of(traces, "\"device_traces\"")) {
      spend();
      out_.device_traces.emplace_back();
      for (const PickleValue& e : list_of(&device, "device trace")) event(e, out_.device_traces.back());
    }
    if (const PickleValue* settings = doc_.get(root, "allocator_settings")) {
      if (settings->kind != PickleKind::kDict) issue("\"allocator_settings\" that is not a dict, ignored");
      for (const auto& [k, v] : doc_.entries(*settings)) {
        if (k.kind == PickleKind::kString)
          out_.settings.push_back({std::string(doc_.text(k)), scalar_text(v)});
        else
          issue("allocator setting whose name is not a string, ignored");
      }
    }
    // Notes name each kind of damage once; a stream inventing endless kinds gets a bounded list.
    std::size_t kinds = 0;
    std::uint64_t rest = 0;
    for (const auto& [what, count] : issues_) {
      if (++kinds <= kMaxNoteKinds)
        out_.notes.push_back(fmt::format("{} x {}", count, what));
      else
        rest += count;
    }
    if (kinds > kMaxNoteKinds)
      out_.notes.push_back(fmt::format("{} x damage of {} other kinds", rest, kinds - kMaxNoteKinds));
  }

 private:
  std::string scalar_text(const PickleValue& v) const {
    switch (v.kind) {
      case PickleKind::kNone: return "None";
      case PickleKind::kBool: return v.i ? "True" : "False";
      case PickleKind::kInt: return std::to_string(v.i);
      case PickleKind::kFloat: return fmt::format("{}", v.f);
      case PickleKind::kString:
      case PickleKind::kBytes: return std::string(doc_.text(v));
      default: return pickle_kind_name(v.kind);
    }
  }
  void issue(const std::string& what) { ++issues_[what]; }
  // The items of a list or tuple; anything else there is counted and read as empty.
  const std::vector<PickleValue>& list_of(const PickleValue* v, std::string_view what) {
    static const std::vector<PickleValue> kNone;
    if (v == nullptr) return kNone;
    if (v->kind != PickleKind::kList && v->kind != PickleKind::kTuple) {
      issue(fmt::format("{} of type {}, not a list, ignored", what, pickle_kind_name(v->kind)));
      return kNone;
    }
    return doc_.items(*v);
  }
  // A byte count: an int (or a float) from 0 to kMaxSnapshotBytes. Larger is no device's memory,
  // and sums of such values would overflow int64, so it is counted and taken as unreadable.
  std::int64_t bytes_or(const PickleValue* v, std::int64_t fallback, std::string_view key, const char* what) {
    std::int64_t n = doc_.int_or(v, -1);
    if (v != nullptr && (v->big || n > kMaxSnapshotBytes)) {
      issue(fmt::format("{} \"{}\" over 2^50 bytes, not a device's memory (taken as unreadable)", what, key));
      n = -1;
    }
    return n < 0 ? fallback : n;
  }
  std::int64_t size_field(const PickleValue& d, std::string_view key, const char* what) {
    const std::int64_t v = bytes_or(doc_.get(d, key), -1, key, what);
    if (v < 0) issue(fmt::format("{} without a readable \"{}\" (taken as 0)", what, key));
    return v < 0 ? 0 : v;
  }
  std::vector<SnapshotFrameId> frames(const PickleValue* list) {
    std::vector<SnapshotFrameId> out;
    if (list == nullptr) return out;
    for (const PickleValue& f : list_of(list, "frames")) {
      if (out.size() >= kSnapshotFramesKept) break;
      spend();
      if (f.kind != PickleKind::kDict) {
        issue("frame that is not a dict, skipped");
        continue;
      }
      out.push_back(frame_id(f));
    }
    return out;
  }
  // Each distinct frame once in out_.frames: by the pickle's dict (the memo shares one dict among
  // many lists), then by content (torch writes a fresh dict per frame).
  SnapshotFrameId frame_id(const PickleValue& f) {
    if (const auto it = frame_by_dict_.find(f.ref); it != frame_by_dict_.end()) return it->second;
    SnapshotFrame frame{doc_.string_or(doc_.get(f, "filename"), "?"), doc_.int_or(doc_.get(f, "line"), -1),
                        doc_.string_or(doc_.get(f, "name"), "?")};
    std::string key = fmt::format("{}\n{}\n{}", frame.filename, frame.line, frame.name);
    const auto [it, added] = frame_by_content_.try_emplace(std::move(key), out_.frames.size());
    if (added) out_.frames.push_back(std::move(frame));
    frame_by_dict_.emplace(f.ref, it->second);
    return it->second;
  }
  // A memo can make one list appear in many places; a snapshot never does, so the work to convert
  // is bounded by what the stream built, and a stream that repeats itself past that is refused.
  void spend() {
    if (++work_ > budget_)
      throw InputError(
          fmt::format("{}: not a plausible snapshot: its memo repeats the same data over {} times", name_, budget_));
  }
  void segment(const PickleValue& s) {
    spend();
    if (s.kind != PickleKind::kDict) {
      issue("segment that is not a dict, skipped");
      return;
    }
    SnapshotSegment seg;
    const PickleValue* device = doc_.get(s, "device");
    const std::int64_t device_index = doc_.int_or(device, device == nullptr ? 0 : -1);
    if (device_index < 0 || device_index > kMaxSnapshotDevice || (device != nullptr && device->big)) {
      issue(fmt::format("segment whose \"device\" is not an index from 0 to {}, skipped", kMaxSnapshotDevice));
      return;
    }
    seg.device = static_cast<int>(device_index);
    seg.address = doc_.int_or(doc_.get(s, "address"), 0);
    seg.total_size = size_field(s, "total_size", "segment");
    seg.stream = doc_.int_or(doc_.get(s, "stream"), 0);
    seg.segment_type = doc_.string_or(doc_.get(s, "segment_type"), "");
    seg.expandable = doc_.int_or(doc_.get(s, "is_expandable"), 0) != 0;
    if (const PickleValue* pool = doc_.get(s, "segment_pool_id")) {
      for (const PickleValue& part : list_of(pool, "\"segment_pool_id\""))
        seg.pool += (seg.pool.empty() ? "" : ",") + std::to_string(doc_.int_or(&part, 0));
    }
    if (seg.pool.empty()) seg.pool = "0,0";
    for (const PickleValue& b : list_of(doc_.get(s, "blocks"), "\"blocks\"")) {
      spend();
      if (b.kind != PickleKind::kDict) {
        issue("block that is not a dict, skipped");
        continue;
      }
      SnapshotBlock block;
      block.address = doc_.int_or(doc_.get(b, "address"), 0);
      block.size = size_field(b, "size", "block");
      block.requested_size = bytes_or(doc_.get(b, "requested_size"), -1, "requested_size", "block");
      const std::string state = doc_.string_or(doc_.get(b, "state"), "");
      block.state = state == "active_allocated"      ? BlockState::kActiveAllocated
                    : state == "active_pending_free" ? BlockState::kActivePendingFree
                    : state == "inactive"            ? BlockState::kInactive
                                                     : BlockState::kUnknown;
      if (block.state == BlockState::kUnknown) issue("block of unknown state \"" + state.substr(0, 40) + "\"");
      block.frames = frames(doc_.get(b, "frames"));
      // torch 1.13 kept the frames in a per-block history.
      if (block.frames.empty())
        if (const PickleValue* history = doc_.get(b, "history"))
          if (!doc_.items(*history).empty()) block.frames = frames(doc_.get(doc_.items(*history).back(), "frames"));
      seg.blocks.push_back(std::move(block));
    }
    out_.segments.push_back(std::move(seg));
  }
  void event(const PickleValue& e, std::vector<AllocatorEvent>& into) {
    spend();
    if (e.kind != PickleKind::kDict) {
      issue("device trace entry that is not a dict, skipped");
      return;
    }
    static const std::map<std::string, AllocatorAction, std::less<>> kActions = {
        {"alloc", AllocatorAction::kAlloc},
        {"free_requested", AllocatorAction::kFreeRequested},
        {"free_completed", AllocatorAction::kFreeCompleted},
        {"segment_alloc", AllocatorAction::kSegmentAlloc},
        {"segment_free", AllocatorAction::kSegmentFree},
        {"segment_map", AllocatorAction::kSegmentMap},
        {"segment_unmap", AllocatorAction::kSegmentUnmap},
        {"snapshot", AllocatorAction::kSnapshot},
        {"oom", AllocatorAction::kOom},
    };
    AllocatorEvent ev;
    const std::string action = doc_.string_or(doc_.get(e, "action"), "");
    const auto it = kActions.find(action);
    ev.action = it == kActions.end() ? AllocatorAction::kOther : it->second;
    if (ev.action == AllocatorAction::kOther)
      issue("device trace action \"" + action.substr(0, 40) + "\" not known, ignored");
    ev.addr = doc_.int_or(doc_.get(e, "addr"), 0);
    ev.size = bytes_or(doc_.get(e, "size"), 0, "size", "device trace entry");
    ev.time_us = doc_.int_or(doc_.get(e, "time_us"), -1);
    ev.device_free = bytes_or(doc_.get(e, "device_free"), -1, "device_free", "device trace entry");
    ev.frames = frames(doc_.get(e, "frames"));
    into.push_back(std::move(ev));
  }

  const PickleDocument& doc_;
  AllocatorSnapshot& out_;
  std::string name_;
  std::uint64_t budget_;
  std::uint64_t work_ = 0;
  std::map<std::string, std::uint64_t> issues_;
  std::unordered_map<std::uint32_t, SnapshotFrameId> frame_by_dict_;
  std::unordered_map<std::string, SnapshotFrameId> frame_by_content_;
  static constexpr std::size_t kMaxNoteKinds = 32;
};

}  // namespace

AllocatorSnapshot read_allocator_snapshot_bytes(const std::string& bytes, const std::string& name,
                                                std::uint64_t max_bytes) {
  PickleLimits limits;
  limits.max_bytes = max_bytes > 0 ? max_bytes : default_max_memory_bytes();
  limits.keep_truncated = true;  // a job killed while writing its snapshot leaves a sound prefix
  const PickleDocument doc = read_pickle(bytes, name, limits);
  AllocatorSnapshot out;
  out.source = name;
  Converter(doc, out, name).run();
  return out;
}

AllocatorSnapshot read_allocator_snapshot(const std::string& path, std::uint64_t max_bytes) {
  const std::uint64_t bound = max_bytes > 0 ? max_bytes : default_max_memory_bytes();
  OpenedSource in = open_byte_source(path);
  std::string bytes;
  std::vector<char> buffer(std::size_t{1} << 20);
  for (;;) {
    const std::size_t n = in.source->read(buffer.data(), buffer.size());
    if (n == 0) break;
    bytes.append(buffer.data(), n);
    if (bytes.size() > bound)
      throw InputError(fmt::format("{}: over the {} MiB memory bound; raise --max-memory", path, bound >> 20));
  }
  const std::string damage = in.source->damage();
  AllocatorSnapshot out = read_allocator_snapshot_bytes(bytes, path, bound);
  if (!damage.empty()) out.notes.push_back(damage);
  return out;
}

}  // namespace ferret
