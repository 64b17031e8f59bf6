// Matching collectives across ranks and aligning the ranks' clocks (method in job_analysis.h).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <queue>
#include <tuple>

#include "base/statistics.h"
#include "job/job_analysis.h"

namespace ferret {

const char* match_method_name(MatchMethod m) {
  switch (m) {
    case MatchMethod::kNone: return "none";
    case MatchMethod::kSequenceNumbers: return "sequence numbers";
    case MatchMethod::kOrder: return "order";
  }
  return "none";
}

namespace {

struct Ref {
  std::int32_t rank_index;
  std::int32_t collective;  // index into the rank's collectives
};

std::int64_t mad_of(const std::vector<std::int64_t>& v) {
  const std::int64_t m = stats::median_ns(v);
  std::vector<std::int64_t> dev;
  dev.reserve(v.size());
  for (std::int64_t x : v) dev.push_back(x > m ? x - m : m - x);
  return stats::median_ns(std::move(dev));
}

const RankCollective& at(const std::vector<RankResult>& ranks, const Ref& r) {
  return ranks[static_cast<std::size_t>(r.rank_index)].collectives[static_cast<std::size_t>(r.collective)];
}

std::int64_t end_of(const RankCollective& c) { return c.start_ns + c.dur_ns; }

// Process groups by name across ranks; per rank, its local index -> the global one.
std::vector<std::vector<std::int32_t>> global_groups(const std::vector<RankResult>& ranks,
                                                     std::vector<std::string>& names) {
  std::map<std::string, std::int32_t> ids;
  std::vector<std::vector<std::int32_t>> local_to_global(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r)
    for (const std::string& name : ranks[r].process_groups) {
      auto [it, added] = ids.try_emplace(name, static_cast<std::int32_t>(names.size()));
      if (added) names.push_back(name);
      local_to_global[r].push_back(it->second);
    }
  return local_to_global;
}

std::int32_t group_of(const std::vector<std::vector<std::int32_t>>& map, std::size_t rank, std::int32_t local) {
  return local < 0 ? -1 : map[rank][static_cast<std::size_t>(local)];
}

// Calls keyed by (process group, sequence number).
std::vector<std::vector<Ref>> match_by_sequence(const std::vector<RankResult>& ranks,
                                                const std::vector<std::vector<std::int32_t>>& groups) {
  std::map<std::pair<std::int32_t, std::int64_t>, std::vector<Ref>> by_key;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    for (std::size_t i = 0; i < ranks[r].collectives.size(); ++i) {
      const RankCollective& c = ranks[r].collectives[i];
      if (c.seq < 0) continue;
      std::vector<Ref>& refs = by_key[{group_of(groups, r, c.process_group), c.seq}];
      // One call per rank per key: a repeated sequence number (a second device) is not matched.
      if (refs.empty() || refs.back().rank_index != static_cast<std::int32_t>(r))
        refs.push_back({static_cast<std::int32_t>(r), static_cast<std::int32_t>(i)});
    }
  std::vector<std::vector<Ref>> out;
  for (auto& [key, refs] : by_key)
    if (refs.size() >= 2) out.push_back(std::move(refs));
  return out;
}

// Calls of one stream sorted by end: (end, ref).
using Stream = std::vector<Ref>;

// Pairs (i, j) of `ref` and `other` calls whose ends agree within kEndToleranceNs once `other`'s
// clock is moved by `offset`; each call pairs at most once, nearest first along the sorted ends.
std::vector<std::pair<std::size_t, std::size_t>> pair_by_end(const std::vector<RankResult>& ranks, const Stream& ref,
                                                             const Stream& other, std::int64_t offset) {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  std::size_t j = 0;
  for (std::size_t i = 0; i < ref.size() && j < other.size(); ++i) {
    const std::int64_t target = end_of(at(ranks, ref[i]));
    while (j < other.size() && end_of(at(ranks, other[j])) + offset < target - kEndToleranceNs) ++j;
    if (j == other.size()) break;
    std::size_t best = j;
    if (j + 1 < other.size()) {
      const std::int64_t d0 = std::llabs(end_of(at(ranks, other[j])) + offset - target);
      const std::int64_t d1 = std::llabs(end_of(at(ranks, other[j + 1])) + offset - target);
      if (d1 < d0) best = j + 1;
    }
    if (std::llabs(end_of(at(ranks, other[best])) + offset - target) <= kEndToleranceNs) {
      pairs.push_back({i, best});
      j = best + 1;
    }
  }
  return pairs;
}

// Candidate clock offsets of `other` against `ref`: sliding one sequence against the other by up
// to kMaxOrderShift calls, the median end difference under each shift.
void candidate_offsets(const std::vector<RankResult>& ranks, const Stream& ref, const Stream& other,
                       std::vector<std::int64_t>& out) {
  const std::size_t needed = std::max<std::size_t>(1, std::min(ref.size(), other.size()) / 2);
  for (int shift = -kMaxOrderShift; shift <= kMaxOrderShift; ++shift) {
    std::vector<std::int64_t> d;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const std::int64_t j = static_cast<std::int64_t>(i) + shift;
      if (j < 0 || j >= static_cast<std::int64_t>(other.size())) continue;
      d.push_back(end_of(at(ranks, ref[i])) - end_of(at(ranks, other[static_cast<std::size_t>(j)])));
    }
    if (d.size() >= needed) out.push_back(stats::median_ns(std::move(d)));
  }
}

// Calls keyed by order within (process group, kind). For each rank against the lowest rank it
// shares streams with, the candidate offset under which the most calls of all shared streams end
// together wins (ties: the smallest offset, since one cluster's clocks agree to milliseconds
// while a periodic stream also matches shifted by a whole period); calls are then paired by
// their aligned ends. Sampled traces that hold different subsets of calls still pair correctly.
std::vector<std::vector<Ref>> match_by_order(const std::vector<RankResult>& ranks,
                                             const std::vector<std::vector<std::int32_t>>& groups) {
  using StreamKey = std::pair<std::int32_t, int>;
  std::map<StreamKey, std::vector<Stream>> streams;  // key -> per rank -> calls by end
  for (std::size_t r = 0; r < ranks.size(); ++r)
    for (std::size_t i = 0; i < ranks[r].collectives.size(); ++i) {
      const RankCollective& c = ranks[r].collectives[i];
      auto& per_rank = streams[{group_of(groups, r, c.process_group), static_cast<int>(c.kind)}];
      per_rank.resize(ranks.size());
      per_rank[r].push_back({static_cast<std::int32_t>(r), static_cast<std::int32_t>(i)});
    }
  for (auto& [key, per_rank] : streams)
    for (Stream& s : per_rank)
      std::stable_sort(s.begin(), s.end(),
                       [&](const Ref& a, const Ref& b) { return end_of(at(ranks, a)) < end_of(at(ranks, b)); });

  // Per stream, the instances keyed by the reference's call.
  std::map<StreamKey, std::vector<std::vector<Ref>>> instances;
  for (auto& [key, per_rank] : streams) {
    std::size_t ref_rank = 0;
    while (ref_rank < per_rank.size() && per_rank[ref_rank].empty()) ++ref_rank;
    std::vector<std::vector<Ref>>& calls = instances[key];
    for (const Ref& ref : per_rank[ref_rank]) calls.push_back({ref});
  }
  for (std::size_t other = 1; other < ranks.size(); ++other) {
    // The streams this rank shares with each reference rank (usually one: the lowest rank).
    std::map<std::size_t, std::vector<StreamKey>> by_ref;
    for (auto& [key, per_rank] : streams) {
      if (per_rank[other].empty()) continue;
      std::size_t ref_rank = 0;
      while (ref_rank < per_rank.size() && per_rank[ref_rank].empty()) ++ref_rank;
      if (ref_rank < other) by_ref[ref_rank].push_back(key);
    }
    for (const auto& [ref_rank, keys] : by_ref) {
      std::vector<std::int64_t> candidates;
      for (const StreamKey& key : keys)
        candidate_offsets(ranks, streams[key][ref_rank], streams[key][other], candidates);
      std::sort(candidates.begin(), candidates.end());
      candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
      std::int64_t best = 0;
      std::size_t best_pairs = 0;
      for (std::int64_t offset : candidates) {
        std::size_t n = 0;
        for (const StreamKey& key : keys)
          n += pair_by_end(ranks, streams[key][ref_rank], streams[key][other], offset).size();
        if (n > best_pairs || (n == best_pairs && n > 0 && std::llabs(offset) < std::llabs(best))) {
          best_pairs = n;
          best = offset;
        }
      }
      if (best_pairs == 0) continue;
      for (const StreamKey& key : keys) {
        const Stream& other_calls = streams[key][other];
        for (const auto& [i, j] : pair_by_end(ranks, streams[key][ref_rank], other_calls, best))
          instances[key][i].push_back(other_calls[j]);
      }
    }
  }
  std::vector<std::vector<Ref>> out;
  for (auto& [key, calls] : instances)
    for (std::vector<Ref>& c : calls)
      if (c.size() >= 2) out.push_back(std::move(c));
  return out;
}

// Offsets from the calls' end times: per pair of ranks the median difference, then a breadth-first
// walk from the lowest rank with collectives.
void align_clocks(const std::vector<RankResult>& ranks, const std::vector<std::vector<Ref>>& calls,
                  std::vector<RankClock>& clocks) {
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<std::int64_t>> pairs;  // (a, b): end_a - end_b
  for (const std::vector<Ref>& call : calls) {
    const Ref& anchor = call.front();  // lowest rank index: refs are built in rank order
    for (std::size_t p = 1; p < call.size(); ++p)
      pairs[{anchor.rank_index, call[p].rank_index}].push_back(end_of(at(ranks, anchor)) - end_of(at(ranks, call[p])));
  }
  struct Edge {
    std::int32_t to;
    std::int64_t offset_delta;  // offset[to] = offset[from] + delta
    std::uint64_t n;
    std::int64_t spread;
  };
  std::vector<std::vector<Edge>> edges(ranks.size());
  for (auto& [key, d] : pairs) {
    const std::int64_t m = stats::median_ns(d);
    const std::int64_t spread = mad_of(d);
    edges[static_cast<std::size_t>(key.first)].push_back({key.second, m, d.size(), spread});
    edges[static_cast<std::size_t>(key.second)].push_back({key.first, -m, d.size(), spread});
  }
  for (std::size_t root = 0; root < ranks.size(); ++root) {
    if (edges[root].empty() || clocks[root].aligned) continue;
    // Only the first component is aligned to the reference; others keep their own clock.
    if (root != 0 && std::any_of(clocks.begin(), clocks.end(), [](const RankClock& c) { return c.aligned; })) break;
    clocks[root].aligned = true;
    std::queue<std::int32_t> todo;
    todo.push(static_cast<std::int32_t>(root));
    while (!todo.empty()) {
      const std::int32_t from = todo.front();
      todo.pop();
      // Prefer the best-measured edge first: sort by count, then rank, for a deterministic walk.
      std::vector<Edge> out = edges[static_cast<std::size_t>(from)];
      std::sort(out.begin(), out.end(),
                [](const Edge& a, const Edge& b) { return a.n != b.n ? a.n > b.n : a.to < b.to; });
      for (const Edge& e : out) {
        RankClock& c = clocks[static_cast<std::size_t>(e.to)];
        if (c.aligned) continue;
        c.aligned = true;
        c.offset_ns = clocks[static_cast<std::size_t>(from)].offset_ns + e.offset_delta;
        c.shared_calls = e.n;
        c.spread_ns = e.spread;
        todo.push(e.to);
      }
    }
  }
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (clocks[r].aligned && clocks[r].shared_calls == 0)  // the root: its calls with anyone
      for (const Edge& e : edges[r]) clocks[r].shared_calls += e.n;
}

}  // namespace

CollectiveMatching match_collectives(const std::vector<RankResult>& ranks) {
  CollectiveMatching m;
  m.clocks.resize(ranks.size());
  const std::vector<std::vector<std::int32_t>> groups = global_groups(ranks, m.process_groups);
  std::uint64_t with_seq = 0;
  for (const RankResult& r : ranks) {
    m.collectives += r.collectives.size();
    for (const RankCollective& c : r.collectives) with_seq += c.seq >= 0 ? 1 : 0;
  }
  if (m.collectives == 0) return m;
  // Sequence numbers when (nearly) every call has one; a few without are left unmatched.
  std::vector<std::vector<Ref>> calls;
  if (with_seq * 20 >= m.collectives * 19) {
    m.method = MatchMethod::kSequenceNumbers;
    calls = match_by_sequence(ranks, groups);
  } else {
    m.method = MatchMethod::kOrder;
    calls = match_by_order(ranks, groups);
  }
  align_clocks(ranks, calls, m.clocks);

  for (const std::vector<Ref>& refs : calls) {
    MatchedCall call;
    const RankCollective& first = at(ranks, refs.front());
    call.kind = first.kind;
    call.process_group = group_of(groups, static_cast<std::size_t>(refs.front().rank_index), first.process_group);
    call.seq = first.seq;
    call.step = first.step;
    call.bytes = first.bytes;
    call.group_size = first.group_size;
    for (const Ref& ref : refs) {
      const RankClock& clock = m.clocks[static_cast<std::size_t>(ref.rank_index)];
      if (!clock.aligned) continue;
      const RankCollective& c = at(ranks, ref);
      call.participants.push_back({ref.rank_index, c.start_ns + clock.offset_ns, c.dur_ns, c.exposed_ns});
    }
    // Drop participants whose end is not this call's end.
    std::vector<std::int64_t> ends;
    for (const Participant& p : call.participants) ends.push_back(p.end_ns());
    const std::int64_t median_end = stats::median_ns(ends);
    const std::size_t before = call.participants.size();
    std::erase_if(call.participants, [&](const Participant& p) {
      const std::int64_t d = p.end_ns() - median_end;
      return d > kEndToleranceNs || d < -kEndToleranceNs;
    });
    if (call.participants.size() < 2) {
      m.mismatches_dropped += before;
      continue;
    }
    m.mismatches_dropped += before - call.participants.size();
    call.transfer_ns = call.participants.front().dur_ns;
    std::int64_t latest = INT64_MIN, second = INT64_MIN;
    for (const Participant& p : call.participants) {
      call.transfer_ns = std::min(call.transfer_ns, p.dur_ns);
      if (p.start_ns > latest) {
        second = latest;
        latest = p.start_ns;
        call.last_rank_index = p.rank_index;
      } else if (p.start_ns > second) {
        second = p.start_ns;
      }
    }
    call.lateness_ns = latest - second;
    m.matched_collectives += call.participants.size();
    m.calls.push_back(std::move(call));
  }
  auto first_start = [](const MatchedCall& c) {
    std::int64_t s = INT64_MAX;
    for (const Participant& p : c.participants) s = std::min(s, p.start_ns);
    return s;
  };
  std::stable_sort(m.calls.begin(), m.calls.end(),
                   [&](const MatchedCall& a, const MatchedCall& b) { return first_start(a) < first_start(b); });

  // Clock groups: aligned ranks whose offsets sit within kSameClockNs of the group's first.
  std::vector<std::size_t> order;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (m.clocks[r].aligned) order.push_back(r);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return m.clocks[a].offset_ns < m.clocks[b].offset_ns; });
  std::int64_t group_start = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    RankClock& c = m.clocks[order[i]];
    if (i == 0 || c.offset_ns - group_start > kSameClockNs) {
      group_start = c.offset_ns;
      ++m.clock_groups;
    }
    c.clock_group = m.clock_groups - 1;
  }
  return m;
}

}  // namespace ferret
