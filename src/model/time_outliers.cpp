#include "model/time_outliers.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

namespace ferret {

namespace {

constexpr std::uint32_t kNoGroup = 0xFFFFFFFFu;
constexpr std::int64_t kNsPerHour = std::int64_t{3600} * 1000000000;

// b - a for a <= b, exact for any pair of int64 (corrupted times reach both ends of the range).
std::uint64_t distance(std::int64_t a, std::int64_t b) {
  return static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
}

std::int64_t saturating_end(std::int64_t ts, std::int64_t dur) {
  std::int64_t end = 0;
  return __builtin_add_overflow(ts, dur, &end) ? std::numeric_limits<std::int64_t>::max() : end;
}

std::string far_text(std::uint64_t ns) {
  const double hours = static_cast<double>(ns) / static_cast<double>(kNsPerHour);
  if (hours >= 24 * 365.25) return fmt::format("{:.1f} years", hours / (24 * 365.25));
  if (hours >= 24) return fmt::format("{:.1f} days", hours / 24);
  return fmt::format("{:.1f} hours", hours);
}

// The recording within one group's sorted times: from the first to the last cluster of more than
// a handful of events (clusters split at gaps of kOutlierMinGapNs or more), the events inside it,
// and how far from it an event must lie to be an outlier. nullopt: no cluster is large enough to
// tell the recording apart.
struct Bulk {
  std::int64_t first = 0, last = 0;
  std::uint64_t events = 0;
  std::uint64_t far = 0;
  // Distance from [start, end] to the bulk, 0 when they meet.
  std::uint64_t distance_to(std::int64_t start, std::int64_t end) const {
    if (start > last) return distance(last, start);
    if (end < first) return distance(end, first);
    return 0;
  }
};

// Times of one group binned by whole hours (kOutlierMinGapNs) from the group's earliest start:
// two times in one bin are less than the gap apart, so clusters only split between bins, and the
// bins' first and last times decide where. Few bins even for long recordings (one per hour
// holding events), so this costs a map lookup per event, mostly the cached bin, instead of a sort.
struct Bin {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  std::uint64_t events = 0;
};
using Bins = std::map<std::uint64_t, Bin>;

std::optional<Bulk> find_bulk(const Bins& bins) {
  std::optional<Bulk> bulk;
  std::uint64_t bulk_begin = 0, bulk_end = 0;  // events before the bulk's first / after its last cluster
  std::uint64_t seen = 0;                      // events before the current cluster
  Bin cluster;
  auto close = [&] {
    if (cluster.events > kOutlierMaxRunEvents) {
      if (!bulk) {
        bulk = Bulk{cluster.first, cluster.last};
        bulk_begin = seen;
      }
      bulk->last = cluster.last;
      bulk_end = seen + cluster.events;
    }
    seen += cluster.events;
  };
  for (const auto& [hour, bin] : bins) {
    if (cluster.events > 0 && distance(cluster.last, bin.first) >= static_cast<std::uint64_t>(kOutlierMinGapNs)) {
      close();
      cluster = Bin{};
    }
    if (cluster.events == 0) cluster.first = bin.first;
    cluster.last = bin.last;
    cluster.events += bin.events;
  }
  if (cluster.events > 0) close();
  if (!bulk) return std::nullopt;
  bulk->events = bulk_end - bulk_begin;
  const double relative = kOutlierGapToSpan * static_cast<double>(distance(bulk->first, bulk->last));
  bulk->far = relative >= 1.8e19
                  ? std::numeric_limits<std::uint64_t>::max()
                  : std::max(static_cast<std::uint64_t>(kOutlierMinGapNs), static_cast<std::uint64_t>(relative));
  return bulk;
}

// Groups: GPU activity per device, other timed events per process.
class Groups {
 public:
  std::uint32_t of(const TraceModel& model, std::size_t e) {
    const EventKind k = model.kind[e];
    if (k == EventKind::kMetadata) return kNoGroup;
    const Key key{is_gpu_activity(k), model.pid[e]};
    if (key != last_key_ || last_id_ == kNoGroup) {
      last_id_ = ids_.try_emplace(key, static_cast<std::uint32_t>(ids_.size())).first->second;
      last_key_ = key;
    }
    return last_id_;
  }
  std::size_t size() const { return ids_.size(); }
  std::string describe(const TraceModel& model, std::size_t e) const {
    return fmt::format("{} {}", is_gpu_activity(model.kind[e]) ? "device" : "process", model.pid[e]);
  }

 private:
  using Key = std::pair<bool, std::int32_t>;
  std::map<Key, std::uint32_t> ids_;
  Key last_key_{false, 0};
  std::uint32_t last_id_ = kNoGroup;
};

// Bins held at once, over all groups (about 64 bytes each): a recording occupies a few hours, so
// only hostile input (events scattered over a million separate hours) reaches it; then nothing is
// judged and a note says so, rather than the bins outgrowing the model.
constexpr std::size_t kMaxBins = std::size_t{1} << 20;

// Per suspect group, the bulk of the chosen time (start or end) of its events; `origin[g]` is at
// or before every such time of group g. Empty when the events occupy more than kMaxBins hours.
template <class Time>
std::vector<std::optional<Bulk>> bulks_of(const TraceModel& model, const std::vector<std::uint32_t>& suspect_of,
                                          const std::vector<std::int64_t>& origin, Time time) {
  std::size_t total_bins = 0;
  std::vector<Bins> bins(origin.size());
  std::vector<Bins::iterator> cached(origin.size());
  for (std::size_t g = 0; g < bins.size(); ++g) cached[g] = bins[g].end();
  for (std::size_t e = 0; e < model.size(); ++e) {
    const std::uint32_t g = suspect_of[e];
    if (g == kNoGroup) continue;
    const std::int64_t t = time(e);
    const std::uint64_t hour =
        t <= origin[g] ? 0 : distance(origin[g], t) / static_cast<std::uint64_t>(kOutlierMinGapNs);
    if (cached[g] == bins[g].end() || cached[g]->first != hour) {
      const auto [at, added] = bins[g].try_emplace(hour);
      if (added && ++total_bins > kMaxBins) return {};
      cached[g] = at;
    }
    Bin& bin = cached[g]->second;
    bin.first = std::min(bin.first, t);
    bin.last = std::max(bin.last, t);
    ++bin.events;
  }
  std::vector<std::optional<Bulk>> bulks(origin.size());
  for (std::size_t g = 0; g < bins.size(); ++g) bulks[g] = find_bulk(bins[g]);
  return bulks;
}

// Marks the events `far` picks in each group, unless the group's bulk is not kOutlierEvidenceRatio
// times their number. Returns the marked events in index order.
template <class Far>
std::vector<EventIndex> outliers_with_evidence(const TraceModel& model, const std::vector<std::uint32_t>& suspect_of,
                                               const std::vector<std::optional<Bulk>>& bulks, Far far) {
  std::vector<std::uint64_t> count(bulks.size(), 0);
  for (std::size_t e = 0; e < model.size(); ++e)
    if (const std::uint32_t g = suspect_of[e]; g != kNoGroup && bulks[g] && far(e, *bulks[g])) ++count[g];
  std::vector<EventIndex> marked;
  if (std::all_of(count.begin(), count.end(), [](std::uint64_t c) { return c == 0; })) return marked;
  for (std::size_t e = 0; e < model.size(); ++e) {
    const std::uint32_t g = suspect_of[e];
    if (g == kNoGroup || !bulks[g] || count[g] == 0 || bulks[g]->events < kOutlierEvidenceRatio * count[g]) continue;
    if (far(e, *bulks[g])) marked.push_back(static_cast<EventIndex>(e));
  }
  return marked;
}

template <class T>
void compact_column(T& column, const std::vector<EventIndex>& removed) {
  std::size_t write = removed.front();
  auto next = removed.begin();
  for (std::size_t e = removed.front(); e < column.size(); ++e) {
    if (next != removed.end() && *next == e) {
      ++next;
      continue;
    }
    if constexpr (std::is_same_v<T, PackedInt64Column>)
      column.set(write++, column[e]);
    else
      column[write++] = column[e];
  }
  column.truncate(write);
}

// Side tables name events by index: drop the rows of removed events, renumber the others.
template <class Table>
void compact_side_table(Table& table, const std::vector<EventIndex>& removed) {
  std::size_t write = 0;
  for (std::size_t i = 0; i < table.size(); ++i) {
    auto row = table[i];
    const auto at = std::lower_bound(removed.begin(), removed.end(), row.event);
    if (at != removed.end() && *at == row.event) continue;
    row.event -= static_cast<EventIndex>(at - removed.begin());
    table[write++] = row;
  }
  table.truncate(write);
}

void remove_events(TraceModel& m, const std::vector<EventIndex>& removed) {
  compact_column(m.kind, removed);
  compact_column(m.phase, removed);
  compact_column(m.category, removed);
  compact_column(m.name, removed);
  compact_column(m.ts_ns, removed);
  compact_column(m.dur_ns, removed);
  compact_column(m.pid, removed);
  compact_column(m.tid, removed);
  compact_column(m.correlation, removed);
  compact_column(m.external_id, removed);
  compact_side_table(m.kernel_args, removed);
  compact_side_table(m.copy_args, removed);
  compact_side_table(m.op_args, removed);
  compact_side_table(m.collective_args, removed);
  compact_side_table(m.memory_args, removed);
  compact_side_table(m.counters, removed);
  compact_side_table(m.graph_nodes, removed);
  compact_side_table(m.inductor_kernels, removed);
  compact_side_table(m.python_frames, removed);
}

}  // namespace

TimeOutlierResult set_aside_time_outliers(TraceModel& model) {
  TimeOutlierResult result;
  const std::size_t n = model.size();
  // One pass over every event: a group whose events all lie within kOutlierMinGapNs of each other
  // has no gap that large, so no outlier; only the rest (none, in nearly every trace) is sorted.
  struct Extent {
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    std::int64_t last = std::numeric_limits<std::int64_t>::min();
    std::uint64_t events = 0;
  };
  Groups groups;
  std::vector<Extent> extents;
  for (std::size_t e = 0; e < n; ++e) {
    const std::uint32_t g = groups.of(model, e);
    if (g == kNoGroup) continue;
    if (g >= extents.size()) extents.resize(g + 1);
    Extent& x = extents[g];
    const std::int64_t ts = model.ts_ns[e];
    x.first = std::min(x.first, ts);
    x.last = std::max({x.last, ts, saturating_end(ts, model.dur_ns[e])});
    ++x.events;
  }
  std::vector<std::uint32_t> suspect_id(extents.size(), kNoGroup);
  std::vector<std::int64_t> origin;  // per suspect group: its earliest start, before every end too
  for (std::size_t g = 0; g < extents.size(); ++g)
    if (extents[g].events > kOutlierEvidenceRatio &&
        distance(extents[g].first, extents[g].last) >= static_cast<std::uint64_t>(kOutlierMinGapNs)) {
      suspect_id[g] = static_cast<std::uint32_t>(origin.size());
      origin.push_back(extents[g].first);
    }
  if (origin.empty()) return result;

  std::vector<std::uint32_t> suspect_of(n, kNoGroup);
  for (std::size_t e = 0; e < n; ++e)
    if (const std::uint32_t g = groups.of(model, e); g != kNoGroup) suspect_of[e] = suspect_id[g];

  // Starts: an event whose whole span lies far before or after the recording is set aside. A
  // span that starts far earlier but reaches into the recording (an annotation around it) stays.
  auto start_of = [&](std::size_t e) { return model.ts_ns[e]; };
  auto end_of = [&](std::size_t e) { return saturating_end(model.ts_ns[e], model.dur_ns[e]); };
  const auto start_bulks = bulks_of(model, suspect_of, origin, start_of);
  if (start_bulks.empty()) {
    model.report.notes.push_back(fmt::format(
        "time outliers not looked for: the events are scattered over more than {} separate hours", kMaxBins));
    return result;
  }
  const std::vector<EventIndex> removed = outliers_with_evidence(
      model, suspect_of, start_bulks,
      [&](std::size_t e, const Bulk& bulk) { return bulk.distance_to(start_of(e), end_of(e)) >= bulk.far; });
  if (!removed.empty()) {
    const EventIndex e = removed.front();
    const Bulk& bulk = *start_bulks[suspect_of[e]];
    model.report.skip(kTimeOutlierSkip,
                      fmt::format("event #{} \"{}\" ({}, {}) at ts {} ns, {} {} the rest", e, model.name_of(e),
                                  event_kind_name(model.kind[e]), groups.describe(model, e), model.ts_ns[e],
                                  far_text(bulk.distance_to(start_of(e), end_of(e))),
                                  model.ts_ns[e] > bulk.last ? "after" : "before"),
                      removed.size());
    for (const EventIndex r : removed) suspect_of[r] = kNoGroup;
  }

  // Ends of the events kept: a duration that reaches far past every other event's end is a
  // broken clock value; the start is sound, so the event stays with a duration of 0.
  auto end_bulks = bulks_of(model, suspect_of, origin, end_of);
  if (end_bulks.empty()) end_bulks.resize(origin.size());  // ends too scattered: durations stay
  const std::vector<EventIndex> zeroed =
      outliers_with_evidence(model, suspect_of, end_bulks, [&](std::size_t e, const Bulk& bulk) {
        const std::int64_t end = end_of(e);
        return end > bulk.last && distance(bulk.last, end) >= bulk.far;
      });
  if (!zeroed.empty()) {
    const EventIndex e = zeroed.front();
    model.report.repair(kTimeOutlierDurationRepair,
                        fmt::format("event #{} \"{}\" ({}, {}) at ts {} ns: its dur of {} ends {} after the rest", e,
                                    model.name_of(e), event_kind_name(model.kind[e]), groups.describe(model, e),
                                    model.ts_ns[e], far_text(static_cast<std::uint64_t>(model.dur_ns[e])),
                                    far_text(distance(end_bulks[suspect_of[e]]->last, end_of(e)))),
                        zeroed.size());
    for (const EventIndex z : zeroed) model.dur_ns.set(z, 0);
  }
  if (!removed.empty()) remove_events(model, removed);
  result.set_aside = removed.size();
  result.durations_zeroed = zeroed.size();
  return result;
}

}  // namespace ferret
