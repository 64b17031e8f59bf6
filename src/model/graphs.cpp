#include "model/graphs.h"
#include "base/text.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

namespace ferret {

namespace {

enum NameClass : std::uint8_t { kUnclassified, kOther, kBeginCapture, kEndCapture, kGraphLaunch, kCapturable };

NameClass classify(std::string_view name) {
  if (contains(name, "StreamBeginCapture")) return kBeginCapture;
  if (contains(name, "StreamEndCapture")) return kEndCapture;
  if (is_graph_launch_name(name)) return kGraphLaunch;
  // What becomes a graph node when issued on a capturing stream: kernel launches of every API,
  // asynchronous copies and fills.
  if (contains(name, "LaunchKernel") || contains(name, "LaunchCooperativeKernel")) return kCapturable;
  if ((contains(name, "Memcpy") || contains(name, "Memset")) && contains(name, "Async")) return kCapturable;
  return kOther;
}

// A capture while it is being built: the thread and time range that bound its launch calls.
struct Region {
  GraphCapture capture;
  std::int32_t pid = 0, tid = 0;
  std::int64_t start = 0, stop = 0;
  std::vector<EventIndex> launches;
};

// A capture begin or end call.
struct Mark {
  std::int32_t pid, tid;
  std::int64_t ts;
  EventIndex event;
};

std::vector<Region> find_regions(const TraceModel& model, const std::vector<std::uint8_t>& cls,
                                 std::vector<Mark>& marks) {
  std::sort(marks.begin(), marks.end(), [](const Mark& a, const Mark& b) {
    return std::tie(a.pid, a.tid, a.ts, a.event) < std::tie(b.pid, b.tid, b.ts, b.event);
  });
  std::vector<Region> regions;
  Region open;
  bool is_open = false;
  auto close = [&](EventIndex end, std::int64_t stop) {
    open.capture.end = end;
    open.stop = stop;
    regions.push_back(std::move(open));
    open = Region{};
    is_open = false;
  };
  for (std::size_t i = 0; i < marks.size(); ++i) {
    const Mark& m = marks[i];
    if (is_open && (m.pid != open.pid || m.tid != open.tid)) close(kNoEvent, std::numeric_limits<std::int64_t>::max());
    if (cls[model.name[m.event]] == kBeginCapture) {
      // A second begin before an end: the first capture's end is not in the trace.
      if (is_open) close(kNoEvent, m.ts);
      open.capture.begin = m.event;
      open.pid = m.pid;
      open.tid = m.tid;
      open.start = m.ts;
      is_open = true;
    } else if (is_open) {
      close(m.event, model.end_ns(m.event));
    }
  }
  if (is_open) close(kNoEvent, std::numeric_limits<std::int64_t>::max());
  return regions;
}

const GraphNodeArgs* graph_node_with_id(const TraceModel& model, EventIndex e) {
  const GraphNodeArgs* g = model.graph_nodes.size() > 0 ? model.graph_node_of(e) : nullptr;
  return g != nullptr && g->graph_id != kNoId ? g : nullptr;
}

// Launch calls inside each region on its thread. A launch whose GPU work ran without a graph id
// ran there and then (another stream, or capture-relaxed work): it was not captured.
void assign_captured_launches(const TraceModel& model, const std::vector<std::uint8_t>& cls,
                              std::vector<Region>& regions) {
  const Relations& rel = model.relations;
  auto by_thread_start = [](const Region& a, const Region& b) {
    return std::tie(a.pid, a.tid, a.start) < std::tie(b.pid, b.tid, b.start);
  };
  std::sort(regions.begin(), regions.end(), by_thread_start);
  for (std::size_t i = 0; i < rel.launches.size(); ++i) {
    const EventIndex e = rel.launches[i];
    if (cls[model.name[e]] != kCapturable) continue;
    Region key;
    key.pid = model.pid[e];
    key.tid = model.tid[e];
    key.start = model.ts_ns[e];
    auto it = std::upper_bound(regions.begin(), regions.end(), key, by_thread_start);
    if (it == regions.begin()) continue;
    Region& r = *(it - 1);
    if (r.pid != key.pid || r.tid != key.tid || key.start >= r.stop) continue;
    bool ran = false;
    for (std::uint32_t g = rel.launch_gpu_begin[i]; g < rel.launch_gpu_begin[i + 1] && !ran; ++g) {
      const EventIndex gpu = rel.launch_gpu[g];
      ran = is_device_work(model.kind[gpu]) && graph_node_with_id(model, gpu) == nullptr;
    }
    if (!ran) r.launches.push_back(e);
  }
  for (Region& r : regions)
    std::sort(r.launches.begin(), r.launches.end(),
              [&](EventIndex a, EventIndex b) { return std::pair(model.ts_ns[a], a) < std::pair(model.ts_ns[b], b); });
  std::sort(regions.begin(), regions.end(), [](const Region& a, const Region& b) {
    return std::pair(a.start, a.capture.begin) < std::pair(b.start, b.capture.begin);
  });
}

// The (graph id, node id) a captured launch was given: on the call itself, else on GPU work the
// profiler recorded for it.
std::pair<std::int64_t, std::int64_t> captured_node(const TraceModel& model, EventIndex launch) {
  if (const GraphNodeArgs* g = graph_node_with_id(model, launch)) return {g->graph_id, g->node_id};
  if (model.graph_nodes.size() == 0) return {kNoId, kNoId};
  for (EventIndex gpu : model.relations.gpu_of_launch(launch))
    if (const GraphNodeArgs* g = graph_node_with_id(model, gpu)) return {g->graph_id, g->node_id};
  return {kNoId, kNoId};
}

// Pairs captures with the replayed graphs (see graphs.h); returns the region index per graph id.
std::map<std::int64_t, std::size_t> match_captures(std::vector<Region>& regions,
                                                   const std::map<std::int64_t, std::vector<std::int64_t>>& nodes_of,
                                                   const std::vector<std::int64_t>& capture_side_graph) {
  std::map<std::int64_t, std::size_t> region_of;
  std::vector<std::size_t> free_regions;
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const std::int64_t g = capture_side_graph[i];
    if (g == kNoId) {
      free_regions.push_back(i);
      continue;
    }
    regions[i].capture.graph_id = g;
    if (nodes_of.count(g) != 0) region_of.try_emplace(g, i);
  }
  std::vector<std::int64_t> free_graphs;
  for (const auto& [g, nodes] : nodes_of)
    if (region_of.count(g) == 0) free_graphs.push_back(g);
  auto fits = [&](std::size_t r, std::int64_t g) {
    const std::size_t n = nodes_of.at(g).size();
    return n > 0 && regions[r].launches.size() == n;
  };
  auto pair_up = [&](std::size_t r, std::int64_t g) {
    regions[r].capture.graph_id = g;
    region_of.emplace(g, r);
  };
  if (!free_regions.empty() && free_regions.size() == free_graphs.size()) {
    for (std::size_t k = 0; k < free_regions.size(); ++k)
      if (fits(free_regions[k], free_graphs[k])) pair_up(free_regions[k], free_graphs[k]);
    return region_of;
  }
  // Unequal numbers (captures never replayed, or replays of graphs captured before the trace):
  // only a node count that singles out one capture and one graph is trusted.
  for (std::int64_t g : free_graphs) {
    std::size_t candidate = regions.size(), candidates = 0;
    for (std::size_t r : free_regions)
      if (fits(r, g)) candidate = r, ++candidates;
    if (candidates != 1) continue;
    std::size_t rivals = 0;
    for (std::int64_t other : free_graphs) rivals += fits(candidate, other) ? 1 : 0;
    if (rivals == 1) pair_up(candidate, g);
  }
  return region_of;
}

}  // namespace

bool is_graph_launch_name(std::string_view name) { return contains(name, "GraphLaunch"); }

void build_graph_relations(TraceModel& model) {
  Relations& rel = model.relations;
  rel.graph_captures.clear();
  rel.captured_launches.clear();
  rel.graph_replays.clear();
  // One pass over the runtime calls: classify their names (once per name) and note capture marks.
  std::vector<std::uint8_t> cls(model.strings.size(), kUnclassified);
  std::vector<Mark> marks;
  for (std::size_t e = 0; e < model.size(); ++e) {
    if (!is_launch_api(model.kind[e])) continue;
    std::uint8_t& c = cls[model.name[e]];
    if (c == kUnclassified) c = classify(model.strings.view(model.name[e]));
    if ((c == kBeginCapture || c == kEndCapture) && model.phase[e] == 'X')
      marks.push_back({model.pid[e], model.tid[e], model.ts_ns[e], static_cast<EventIndex>(e)});
  }

  // Replays: GPU work and the graph-node side table are both in event order; walk them together.
  std::size_t row = 0;
  const std::size_t rows = model.graph_nodes.size();
  for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
    const EventIndex e = rel.gpu_events[g];
    if (!is_device_work(model.kind[e])) continue;
    while (row < rows && model.graph_nodes[row].event < e) ++row;
    const GraphNodeArgs* args = row < rows && model.graph_nodes[row].event == e ? &model.graph_nodes[row] : nullptr;
    const EventIndex launcher = rel.gpu_launcher[g];
    const bool replay =
        launcher != kNoEvent ? cls[model.name[launcher]] == kGraphLaunch : args != nullptr && args->graph_id != kNoId;
    if (replay)
      rel.graph_replays.push_back({e, launcher, kNoEvent, args ? args->graph_id : kNoId, args ? args->node_id : kNoId});
  }

  std::vector<Region> regions = find_regions(model, cls, marks);
  if (regions.empty()) return;
  assign_captured_launches(model, cls, regions);

  // The node ids each replayed graph ran.
  std::map<std::int64_t, std::vector<std::int64_t>> nodes_of;
  for (const GraphReplay& r : rel.graph_replays) {
    if (r.graph_id == kNoId) continue;
    std::vector<std::int64_t>& nodes = nodes_of[r.graph_id];
    if (r.node_id != kNoId) nodes.push_back(r.node_id);
  }
  for (auto& [g, nodes] : nodes_of) {
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  }

  // Capture-side ids: the graph a capture made is the one its launches name (the first that does).
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> side(regions.size());
  std::vector<std::int64_t> side_graph(regions.size(), kNoId);
  for (std::size_t i = 0; i < regions.size(); ++i) {
    for (EventIndex l : regions[i].launches) {
      side[i].push_back(captured_node(model, l));
      if (side_graph[i] == kNoId) side_graph[i] = side[i].back().first;
    }
  }
  const std::map<std::int64_t, std::size_t> region_of = match_captures(regions, nodes_of, side_graph);

  // Node -> captured launch, per matched capture.
  std::map<std::pair<std::int64_t, std::int64_t>, EventIndex> launch_of_node;
  for (const auto& [g, r] : region_of) {
    Region& region = regions[r];
    const std::vector<std::int64_t>& nodes = nodes_of.at(g);
    std::vector<std::int64_t> side_nodes;
    for (const auto& [graph, node] : side[r])
      if (node != kNoId && (graph == g || graph == kNoId)) side_nodes.push_back(node);
    std::vector<std::int64_t> distinct = side_nodes;
    std::sort(distinct.begin(), distinct.end());
    const bool by_node_id = !side_nodes.empty() && side_nodes.size() == region.launches.size() &&
                            std::adjacent_find(distinct.begin(), distinct.end()) == distinct.end();
    if (by_node_id) {
      region.capture.mapping = GraphNodeMapping::kNodeId;
      for (std::size_t k = 0; k < region.launches.size(); ++k) launch_of_node[{g, side_nodes[k]}] = region.launches[k];
    } else if (!nodes.empty() && nodes.size() == region.launches.size()) {
      region.capture.mapping = GraphNodeMapping::kLaunchOrder;
      for (std::size_t k = 0; k < nodes.size(); ++k) launch_of_node[{g, nodes[k]}] = region.launches[k];
    }
  }
  if (!launch_of_node.empty()) {
    for (GraphReplay& r : rel.graph_replays) {
      auto it = launch_of_node.find({r.graph_id, r.node_id});
      if (it != launch_of_node.end()) r.captured_launch = it->second;
    }
  }

  for (Region& region : regions) {
    region.capture.launches_begin = static_cast<std::uint32_t>(rel.captured_launches.size());
    rel.captured_launches.insert(rel.captured_launches.end(), region.launches.begin(), region.launches.end());
    region.capture.launches_end = static_cast<std::uint32_t>(rel.captured_launches.size());
    rel.graph_captures.push_back(region.capture);
  }
}

}  // namespace ferret
