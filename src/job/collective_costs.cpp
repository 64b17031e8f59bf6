// Per collective kind and message size: how long each call took on each rank, how much of that
// was waiting for the last rank, and the bandwidth of the transfer part against the link.
#include <algorithm>
#include <map>

#include "job/job_analysis.h"

namespace ferret {

const char* size_bucket_label(int bucket) {
  switch (bucket) {
    case 0: return "< 64 KiB";
    case 1: return "64 KiB - 1 MiB";
    case 2: return "1 - 16 MiB";
    case 3: return "16 - 256 MiB";
    case 4: return ">= 256 MiB";
    default: return "unknown size";
  }
}

int size_bucket(std::int64_t bytes) {
  if (bytes < 0) return kSizeBuckets;
  int bucket = 0;
  for (std::int64_t limit = 64 << 10; bucket < kSizeBuckets - 1 && bytes >= limit; limit *= 16) ++bucket;
  return bucket;
}

std::vector<CollectiveCost> collective_costs(const std::vector<RankResult>& ranks, const CollectiveMatching& m) {
  struct Acc {
    CollectiveCost cost;
    bool groups_agree = true;
    std::int64_t sized_transfer_ns = 0;
    std::int64_t duration_ns = 0;  // over participants
    std::int64_t wait_ns = 0;
    std::uint64_t participants = 0;
    std::vector<std::int64_t> rank_ns, rank_calls;
  };
  std::map<std::pair<int, int>, Acc> by_key;
  for (const MatchedCall& call : m.calls) {
    const int bucket = size_bucket(call.bytes);
    Acc& acc = by_key[{static_cast<int>(call.kind), bucket}];
    CollectiveCost& c = acc.cost;
    if (c.calls == 0) {
      c.kind = call.kind;
      c.bucket = bucket;
      c.group_size = call.group_size;
      acc.rank_ns.assign(ranks.size(), 0);
      acc.rank_calls.assign(ranks.size(), 0);
    } else if (c.group_size != call.group_size) {
      acc.groups_agree = false;
    }
    ++c.calls;
    c.transfer_ns += call.transfer_ns;
    if (call.bytes >= 0) {
      c.bytes += call.bytes;
      acc.sized_transfer_ns += call.transfer_ns;
    }
    for (const Participant& p : call.participants) {
      acc.duration_ns += p.dur_ns;
      acc.wait_ns += p.dur_ns - call.transfer_ns;
      ++acc.participants;
      acc.rank_ns[static_cast<std::size_t>(p.rank_index)] += p.dur_ns;
      ++acc.rank_calls[static_cast<std::size_t>(p.rank_index)];
    }
  }
  std::string link;
  double link_gbps = -1;
  for (const RankResult& r : ranks)
    if (r.scale_up_gbps > 0) {
      link = r.scale_up_link;
      link_gbps = r.scale_up_gbps;
      break;
    }
  std::vector<CollectiveCost> out;
  for (auto& [key, acc] : by_key) {
    CollectiveCost& c = acc.cost;
    if (!acc.groups_agree) c.group_size = -1;
    const auto n = static_cast<std::int64_t>(std::max<std::uint64_t>(1, acc.participants));
    c.mean_duration_ns = acc.duration_ns / n;
    c.mean_wait_ns = acc.wait_ns / n;
    c.wait_share = acc.duration_ns > 0 ? static_cast<double>(acc.wait_ns) / static_cast<double>(acc.duration_ns) : 0;
    if (c.bytes > 0 && acc.sized_transfer_ns > 0) {
      c.algbw_gbps = static_cast<double>(c.bytes) / static_cast<double>(acc.sized_transfer_ns);  // bytes/ns = GB/s
      const double factor = c.group_size >= 2 ? bus_factor(c.kind, c.group_size) : -1;
      if (factor >= 0) c.busbw_gbps = c.algbw_gbps * factor;
    }
    c.link = link;
    c.link_gbps = link_gbps;
    c.rank_mean_duration_ns.assign(ranks.size(), -1);
    for (std::size_t r = 0; r < ranks.size(); ++r)
      if (acc.rank_calls[r] > 0) c.rank_mean_duration_ns[r] = acc.rank_ns[r] / acc.rank_calls[r];
    out.push_back(std::move(c));
  }
  // The most time first: what a user should look at.
  std::stable_sort(out.begin(), out.end(), [](const CollectiveCost& a, const CollectiveCost& b) {
    return a.mean_duration_ns * static_cast<std::int64_t>(a.calls) >
           b.mean_duration_ns * static_cast<std::int64_t>(b.calls);
  });
  return out;
}

}  // namespace ferret
