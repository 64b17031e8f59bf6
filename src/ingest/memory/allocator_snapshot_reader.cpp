#include "ingest/memory/allocator_snapshot_reader.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "base/input_error.h"
#include "ingest/byte_source.h"
#include "ingest/load_options.h"
#include "ingest/memory/pickle_reader.h"

namespace ferret {

namespace {

// Longest text kept of one value: a real segment type is "large" or "small", a pool id two ints,
// a setting's value a number or a word, a frame a source path and a function name. The memo lets a
// 1 MB stream name one 1 MiB string thousands of times; each copy is cut to these and counted.
constexpr std::size_t kMaxSegmentTypeBytes = 32;
constexpr std::size_t kMaxPoolParts = 4;
constexpr std::size_t kMaxSettingBytes = 256;
constexpr std::size_t kMaxFrameTextBytes = 1024;

class Converter {
 public:
  // `max_bytes`: what the converter may create (the memory bound less the input and its values).
  Converter(const PickleDocument& doc, AllocatorSnapshot& out, std::string name, std::uint64_t max_bytes,
            std::uint64_t bound)
      : doc_(doc),
        out_(out),
        name_(std::move(name)),
        budget_(4 * doc.size() + 1'000'000),
        max_bytes_(max_bytes),
        bound_(bound) {}

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
        spend();
        if (k.kind == PickleKind::kString)
          out_.settings.push_back({capped(doc_.text(k), kMaxSettingBytes, "allocator setting name"),
                                   capped(v, kMaxSettingBytes, "allocator setting value")});
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
      case PickleKind::kBytes: return {};  // read by capped() from the arena, never copied whole
      default: return pickle_kind_name(v.kind);
    }
  }
  std::string capped(const PickleValue& v, std::size_t max, const char* what) {
    if (v.kind == PickleKind::kString || v.kind == PickleKind::kBytes) return capped(doc_.text(v), max, what);
    return capped(scalar_text(v), max, what);
  }
  // A copy of at most `max` bytes of `text` (cut at a UTF-8 boundary, "..." added), charged to the
  // memory bound; longer text is counted in the notes.
  std::string capped(std::string_view text, std::size_t max, const char* what) {
    std::string out;
    if (text.size() <= max) {
      out.assign(text);
    } else {
      std::size_t cut = max;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
      out.assign(text.substr(0, cut));
      out += "...";
      issue(fmt::format("{} over {} bytes, cut", what, max));
    }
    charge(out.size() + sizeof(std::string));
    return out;
  }
  // Every byte the converter creates counts against the memory bound, as the pickle's own do.
  void charge(std::uint64_t bytes) {
    created_ += bytes;
    if (created_ > max_bytes_)
      throw InputError(fmt::format(
          "{}: not a plausible snapshot: converting it needs more than the {} MiB memory bound (its memo repeats "
          "the same data; raise --max-memory if it is real)",
          name_, bound_ >> 20));
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
    // The innermost frames past the recording's machinery; once they are full, only the first user
    // frame, when none of them is one (deep module nesting puts torch's frames first).
    bool user = false;
    for (const PickleValue& f : list_of(list, "frames")) {
      spend();
      if (f.kind != PickleKind::kDict) {
        issue("frame that is not a dict, skipped");
        continue;
      }
      const SnapshotFrameId id = frame_id(f);
      const SnapshotFrame& frame = out_.frames[id];
      if (is_allocator_machinery_frame(frame)) continue;
      const bool is_user = is_user_frame(frame);
      if (out.size() >= kSnapshotFramesKept && (user || !is_user)) {
        if (user) break;
        continue;
      }
      charge(sizeof(SnapshotFrameId));
      out.push_back(id);
      user = user || is_user;
    }
    return out;
  }
  // Each distinct frame once in out_.frames: by the pickle's dict (the memo shares one dict among
  // many lists), then by content (torch writes a fresh dict per frame) compared by the strings' text
  // ids, so a long file name shared by many frames is hashed once.
  SnapshotFrameId frame_id(const PickleValue& f) {
    if (const auto it = frame_by_dict_.find(f.ref); it != frame_by_dict_.end()) return it->second;
    const PickleValue* filename = doc_.get(f, "filename");
    const PickleValue* name = doc_.get(f, "name");
    const std::int64_t line = doc_.int_or(doc_.get(f, "line"), -1);
    const auto key = std::make_tuple(filename ? doc_.text_id(*filename) : PickleDocument::kNotAString, line,
                                     name ? doc_.text_id(*name) : PickleDocument::kNotAString);
    const auto [it, added] = frame_by_content_.try_emplace(key, static_cast<SnapshotFrameId>(out_.frames.size()));
    if (added) {
      charge(sizeof(SnapshotFrame) + 64);
      out_.frames.push_back({frame_text(filename, "frame file name"), line, frame_text(name, "frame function name")});
    }
    frame_by_dict_.emplace(f.ref, it->second);
    charge(32);  // the two map entries
    return it->second;
  }
  std::string frame_text(const PickleValue* v, const char* what) {
    if (v == nullptr || doc_.text_id(*v) == PickleDocument::kNotAString) return "?";
    return capped(doc_.text(*v), kMaxFrameTextBytes, what);
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
    charge(sizeof(SnapshotSegment));
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
    if (const PickleValue* type = doc_.get(s, "segment_type"); type != nullptr && doc_.is_string(*type))
      seg.segment_type = capped(doc_.text(*type), kMaxSegmentTypeBytes, "segment \"segment_type\"");
    seg.expandable = doc_.int_or(doc_.get(s, "is_expandable"), 0) != 0;
    if (const PickleValue* pool = doc_.get(s, "segment_pool_id")) {
      // A pool id is a pair of ints (torch's MempoolId_t); a stream may share a list of millions.
      const std::vector<PickleValue>& parts = list_of(pool, "\"segment_pool_id\"");
      for (std::size_t k = 0; k < parts.size() && k < kMaxPoolParts; ++k)
        seg.pool += (seg.pool.empty() ? "" : ",") + std::to_string(doc_.int_or(&parts[k], 0));
      if (parts.size() > kMaxPoolParts) {
        seg.pool += ",...";
        issue(fmt::format("segment \"segment_pool_id\" of over {} parts, cut", kMaxPoolParts));
      }
      charge(seg.pool.size());
    }
    if (seg.pool.empty()) seg.pool = "0,0";
    for (const PickleValue& b : list_of(doc_.get(s, "blocks"), "\"blocks\"")) {
      spend();
      if (b.kind != PickleKind::kDict) {
        issue("block that is not a dict, skipped");
        continue;
      }
      charge(sizeof(SnapshotBlock));
      SnapshotBlock block;
      block.address = doc_.int_or(doc_.get(b, "address"), 0);
      block.size = size_field(b, "size", "block");
      block.requested_size = bytes_or(doc_.get(b, "requested_size"), -1, "requested_size", "block");
      const PickleValue* state_value = doc_.get(b, "state");
      const std::string_view state = state_value ? doc_.text(*state_value) : std::string_view();
      block.state = state == "active_allocated"      ? BlockState::kActiveAllocated
                    : state == "active_pending_free" ? BlockState::kActivePendingFree
                    : state == "inactive"            ? BlockState::kInactive
                                                     : BlockState::kUnknown;
      if (block.state == BlockState::kUnknown) issue(fmt::format("block of unknown state \"{}\"", state.substr(0, 40)));
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
    charge(sizeof(AllocatorEvent));
    AllocatorEvent ev;
    const PickleValue* action_value = doc_.get(e, "action");
    const std::string_view action = action_value ? doc_.text(*action_value) : std::string_view();
    const auto it = kActions.find(action);
    ev.action = it == kActions.end() ? AllocatorAction::kOther : it->second;
    if (ev.action == AllocatorAction::kOther)
      issue(fmt::format("device trace action \"{}\" not known, ignored", action.substr(0, 40)));
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
  std::uint64_t max_bytes_;
  std::uint64_t bound_;
  std::uint64_t created_ = 0;
  std::map<std::string, std::uint64_t> issues_;
  std::unordered_map<std::uint32_t, SnapshotFrameId> frame_by_dict_;
  std::map<std::tuple<std::uint32_t, std::int64_t, std::uint32_t>, SnapshotFrameId> frame_by_content_;
  static constexpr std::size_t kMaxNoteKinds = 32;
};

}  // namespace

AllocatorSnapshot read_allocator_snapshot_bytes(const std::string& bytes, const std::string& name,
                                                std::uint64_t max_bytes) {
  // One bound for all of it: the input held in memory, the pickle's values, what the converter makes.
  const std::uint64_t bound = max_bytes > 0 ? max_bytes : default_max_memory_bytes();
  const std::uint64_t held = std::min<std::uint64_t>(bytes.capacity(), bound - 1);
  PickleLimits limits;
  limits.max_bytes = bound - held;
  limits.keep_truncated = true;  // a job killed while writing its snapshot leaves a sound prefix
  const PickleDocument doc = read_pickle(bytes, name, limits);
  AllocatorSnapshot out;
  out.source = name;
  Converter(doc, out, name, limits.max_bytes - std::min(doc.bytes, limits.max_bytes - 1), bound).run();
  return out;
}

std::string read_snapshot_bytes(ByteSource& source, std::string first, const std::string& path, std::uint64_t bound) {
  // The first 64 KiB are parsed as soon as they are in: a bad opcode there is refused before the
  // rest is read (a prefix that fails fails whole; one only cut short proves nothing). A pipe
  // hands over a few bytes at a time, so this waits for 64 KiB rather than for the first read.
  constexpr std::size_t kPrefixBytes = 64 << 10;
  bool checked = false;
  const auto check_prefix = [&](const std::string& bytes) {
    if (checked || bytes.size() < kPrefixBytes) return;
    checked = true;
    PickleLimits prefix;
    prefix.max_bytes = bound;
    prefix.keep_truncated = true;
    read_pickle(std::string_view(bytes).substr(0, kPrefixBytes), path, prefix);
  };
  // At most half the bound for the bytes; the values built from them get the rest. Grown by hand
  // so that the string's doubling never reserves more than that.
  const std::uint64_t most = bound / 2;
  std::string bytes = std::move(first);
  check_prefix(bytes);
  std::vector<char> buffer(kSnapshotReadChunk);
  for (;;) {
    const std::size_t n = source.read(buffer.data(), buffer.size());
    if (n == 0) break;
    if (bytes.size() + n > most)
      throw InputError(
          fmt::format("{}: over half the {} MiB memory bound ({} MiB of the file read); raise --max-memory", path,
                      bound >> 20, (bytes.size() + n) >> 20));
    if (bytes.size() + n > bytes.capacity())
      bytes.reserve(std::min<std::uint64_t>(std::max<std::uint64_t>(2 * bytes.capacity(), bytes.size() + n), most));
    bytes.append(buffer.data(), n);
    check_prefix(bytes);
  }
  return bytes;
}

AllocatorSnapshot read_allocator_snapshot(const std::string& path, std::uint64_t max_bytes) {
  const std::uint64_t bound = max_bytes > 0 ? max_bytes : default_max_memory_bytes();
  OpenedSource in = open_byte_source(path);
  std::string first(kSnapshotReadChunk, '\0');
  first.resize(in.source->read(first.data(), first.size()));
  const std::string bytes = read_snapshot_bytes(*in.source, std::move(first), path, bound);
  const std::string damage = in.source->damage();
  AllocatorSnapshot out = read_allocator_snapshot_bytes(bytes, path, bound);
  if (!damage.empty()) out.notes.push_back(damage);
  return out;
}

}  // namespace ferret
