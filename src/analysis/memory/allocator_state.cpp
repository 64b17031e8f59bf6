#include "analysis/memory/allocator_state.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace ferret {

namespace {

void add_segment(PoolState& p, const SnapshotSegment& s) {
  ++p.segments;
  p.reserved = saturating_add(p.reserved, s.total_size);
  bool requested_known = true;
  std::int64_t requested = 0;
  for (const SnapshotBlock& b : s.blocks) {
    ++p.blocks;
    switch (b.state) {
      case BlockState::kActiveAllocated:
        p.allocated = saturating_add(p.allocated, b.size);
        p.active = saturating_add(p.active, b.size);
        if (b.requested_size >= 0)
          requested = saturating_add(requested, b.requested_size);
        else
          requested_known = false;
        break;
      case BlockState::kActivePendingFree: p.active = saturating_add(p.active, b.size); break;
      case BlockState::kInactive:
        p.inactive = saturating_add(p.inactive, b.size);
        ++p.free_blocks;
        p.largest_free = std::max(p.largest_free, b.size);
        break;
      case BlockState::kUnknown: break;
    }
  }
  if (requested_known) p.requested = saturating_add(p.requested < 0 ? 0 : p.requested, requested);
}

void merge_into(PoolState& into, const PoolState& p) {
  into.segments += p.segments;
  into.blocks += p.blocks;
  into.reserved = saturating_add(into.reserved, p.reserved);
  into.allocated = saturating_add(into.allocated, p.allocated);
  into.active = saturating_add(into.active, p.active);
  if (p.requested >= 0) into.requested = saturating_add(into.requested < 0 ? 0 : into.requested, p.requested);
  into.inactive = saturating_add(into.inactive, p.inactive);
  into.free_blocks += p.free_blocks;
  into.largest_free = std::max(into.largest_free, p.largest_free);
}

std::string frame_text(const std::vector<SnapshotFrame>& table, const std::vector<SnapshotFrameId>& frames) {
  // The innermost frame in user code; else the innermost past the recording's machinery.
  const SnapshotFrame* pick = nullptr;
  for (const SnapshotFrameId id : frames)
    if (is_user_frame(table[id])) {
      pick = &table[id];
      break;
    }
  for (std::size_t i = 0; pick == nullptr && i < frames.size(); ++i)
    if (!is_allocator_machinery_frame(table[frames[i]])) pick = &table[frames[i]];
  if (pick == nullptr && !frames.empty()) pick = &table[frames.front()];
  return pick == nullptr ? "" : fmt::format("{}:{} in {}", pick->filename, pick->line, pick->name);
}

PinningSegment pinning_of(const SnapshotSegment& s, const std::vector<SnapshotFrame>& table) {
  PinningSegment p;
  p.device = s.device;
  p.address = s.address;
  p.total_size = s.total_size;
  std::vector<const SnapshotBlock*> active;
  for (const SnapshotBlock& b : s.blocks) {
    if (b.state == BlockState::kInactive) {
      p.free_bytes = saturating_add(p.free_bytes, b.size);
      ++p.free_blocks;
    } else if (b.state != BlockState::kUnknown) {
      p.active_bytes = saturating_add(p.active_bytes, b.size);
      active.push_back(&b);
    }
  }
  std::sort(active.begin(), active.end(), [](const SnapshotBlock* a, const SnapshotBlock* b) {
    return a->size != b->size ? a->size > b->size : a->address < b->address;
  });
  for (std::size_t i = 0; i < active.size() && i < 3; ++i)
    p.splitters.push_back({active[i]->size, frame_text(table, active[i]->frames)});
  return p;
}

// Walks the device trace back from the snapshot's totals: before each action, the totals it
// changed were what they were minus its effect.
void walk_trace(const std::vector<AllocatorEvent>& trace, const std::vector<SnapshotFrame>& table,
                DeviceAllocatorState& d) {
  d.trace_entries = trace.size();
  std::int64_t active = d.total.active, reserved = d.total.reserved;
  d.peak_active = active;
  d.peak_reserved = reserved;
  d.reserved_at_peak = reserved;
  std::vector<OomState> ooms;
  // Segment bytes by the site that asked for them: the segment's own frames, else those of the
  // allocation right after it (the one it was made for; walking back, the one seen last).
  std::map<std::string, std::int64_t> grown;
  const std::vector<SnapshotFrameId>* next_alloc_frames = nullptr;
  for (auto it = trace.rbegin(); it != trace.rend(); ++it) {
    const AllocatorEvent& e = *it;
    // The totals just after e are (active, reserved); undo e for the state before it.
    switch (e.action) {
      case AllocatorAction::kAlloc:
        ++d.allocs;
        active = saturating_sub(active, e.size);
        next_alloc_frames = &e.frames;
        break;
      case AllocatorAction::kFreeCompleted:
        ++d.frees;
        active = saturating_add(active, e.size);
        break;
      case AllocatorAction::kSegmentAlloc:
      case AllocatorAction::kSegmentMap: {
        ++d.segment_allocs;
        reserved = saturating_sub(reserved, e.size);
        d.segment_alloc_bytes = saturating_add(d.segment_alloc_bytes, e.size);
        const auto& asked = !e.frames.empty() || next_alloc_frames == nullptr ? e.frames : *next_alloc_frames;
        std::int64_t& site = grown[frame_text(table, asked)];
        site = saturating_add(site, e.size);
        break;
      }
      case AllocatorAction::kSegmentFree:
      case AllocatorAction::kSegmentUnmap:
        ++d.segment_frees;
        reserved = saturating_add(reserved, e.size);
        break;
      case AllocatorAction::kOom: {
        OomState o;
        o.requested = e.size;
        o.allocated = active;
        o.reserved = reserved;
        o.device_free = e.device_free;
        o.time_us = e.time_us;
        o.frame = frame_text(table, e.frames);
        ooms.push_back(o);
        break;
      }
      default: break;
    }
    if (active > d.peak_active) {
      d.peak_active = active;
      d.reserved_at_peak = reserved;
    }
    d.peak_reserved = std::max(d.peak_reserved, reserved);
  }
  d.ooms.assign(ooms.rbegin(), ooms.rend());  // in time order
  for (const auto& [frame, bytes] : grown) d.growth_sites.push_back({bytes, frame});
  std::sort(d.growth_sites.begin(), d.growth_sites.end(), [](const Splitter& a, const Splitter& b) {
    return a.size != b.size ? a.size > b.size : a.frame < b.frame;
  });
  if (d.growth_sites.size() > 3) d.growth_sites.resize(3);
}

}  // namespace

AllocatorStateResult analyze_allocator_state(const AllocatorSnapshot& snapshot) {
  AllocatorStateResult r;
  r.settings = snapshot.settings;
  r.notes = snapshot.notes;
  std::map<int, DeviceAllocatorState> devices;
  std::map<std::pair<int, std::string>, PoolState> pools;
  std::map<int, std::vector<PinningSegment>> pinning;
  for (const SnapshotSegment& s : snapshot.segments) {
    DeviceAllocatorState& d = devices[s.device];
    d.device = s.device;
    if (s.expandable) d.expandable_segments = true;
    PoolState& p = pools[{s.device, s.pool}];
    p.device = s.device;
    p.pool = s.pool;
    add_segment(p, s);
    PinningSegment pin = pinning_of(s, snapshot.frames);
    if (pin.free_bytes > 0 && pin.active_bytes > 0) pinning[s.device].push_back(std::move(pin));
  }
  for (std::size_t dev = 0; dev < snapshot.device_traces.size(); ++dev)
    if (!snapshot.device_traces[dev].empty()) devices[static_cast<int>(dev)].device = static_cast<int>(dev);
  for (auto& [key, p] : pools) {
    DeviceAllocatorState& d = devices[key.first];
    d.pools.push_back(p);
    d.total.device = key.first;
    d.total.pool = "all";
    merge_into(d.total, p);
  }
  for (auto& [dev, d] : devices) {
    auto& pins = pinning[dev];
    std::sort(pins.begin(), pins.end(), [](const PinningSegment& a, const PinningSegment& b) {
      return a.free_bytes != b.free_bytes ? a.free_bytes > b.free_bytes : a.address < b.address;
    });
    if (pins.size() > kPinningSegmentsKept) pins.resize(kPinningSegmentsKept);
    d.pinning = std::move(pins);
    static const std::vector<AllocatorEvent> kNoTrace;
    const bool traced = dev >= 0 && static_cast<std::size_t>(dev) < snapshot.device_traces.size();
    walk_trace(traced ? snapshot.device_traces[static_cast<std::size_t>(dev)] : kNoTrace, snapshot.frames, d);
    r.devices.push_back(std::move(d));
  }
  return r;
}

}  // namespace ferret
