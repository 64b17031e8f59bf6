#include "job/rank_result.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "analysis/classify.h"

namespace ferret {

const char* rank_source_name(RankSource s) {
  switch (s) {
    case RankSource::kDistributedInfo: return "distributedInfo";
    case RankSource::kFileName: return "file name";
    case RankSource::kOrder: return "input order";
  }
  return "input order";
}

namespace {

// Index of the step whose window holds `t`, or -1.
int step_at(const std::vector<RankStep>& steps, std::int64_t t) {
  auto it =
      std::upper_bound(steps.begin(), steps.end(), t, [](std::int64_t v, const RankStep& s) { return v < s.start_ns; });
  if (it == steps.begin()) return -1;
  --it;
  return t < it->start_ns + it->duration_ns ? static_cast<int>(it - steps.begin()) : -1;
}

// Non-communication kernel time per step: how long the rank's GPUs computed.
void add_compute_kernels(const TraceModel& model, const AnalysisContext& ctx, std::vector<RankStep>& steps) {
  std::vector<std::int8_t> comm_name(model.strings.size(), -1);
  for (std::size_t i = 0; i < model.size(); ++i) {
    if (model.kind[i] != EventKind::kKernel) continue;
    const auto e = static_cast<EventIndex>(i);
    if (!ctx.counts_gpu_event(model, e)) continue;
    const StrId name = model.name[e];
    if (comm_name[name] < 0) comm_name[name] = is_communication_kernel(model.strings.view(name)) ? 1 : 0;
    if (comm_name[name] == 1) continue;
    const std::int64_t start = model.ts_ns[e], end = start + model.dur_ns[e];
    // A kernel can straddle two steps: each gets its part.
    for (int s = std::max(0, step_at(steps, start)); s < static_cast<int>(steps.size()); ++s) {
      RankStep& step = steps[static_cast<std::size_t>(s)];
      if (step.start_ns >= end) break;
      const std::int64_t lo = std::max(start, step.start_ns), hi = std::min(end, step.start_ns + step.duration_ns);
      if (hi > lo) step.compute_kernel_ns += hi - lo;
    }
  }
}

}  // namespace

RankResult summarize_rank(const TraceAnalysis& a, const Diagnosis& d) {
  const TraceModel& model = *a.model;
  RankResult r;
  r.source = model.info.source;
  const DistributedInfo& dist = model.info.distributed;
  if (dist.rank >= 0) {
    r.rank = dist.rank;
    r.rank_source = RankSource::kDistributedInfo;
  }
  r.world_size = dist.world_size;
  r.backend = dist.backend;
  r.nccl_version = dist.nccl_version;
  if (!model.info.devices.empty()) r.device_name = model.info.devices.front().name;
  for (const DeviceLinks& link : a.hardware.devices)
    if (!link.scale_up_link.empty() && link.scale_up_gbps > 0) {
      r.scale_up_link = link.scale_up_link;
      r.scale_up_gbps = link.scale_up_gbps;
      break;
    }

  r.has_steps = a.breakdown.has_steps;
  for (const StepCost& s : a.breakdown.steps) {
    RankStep step;
    step.number = s.number;
    step.start_ns = s.start_ns;
    step.duration_ns = s.duration_ns;
    step.category_ns = s.ns;
    r.steps.push_back(step);
  }
  // The per-step results of the other analyses come in the same order (the selected steps).
  auto same_step = [&](std::size_t i, std::int64_t number) {
    return i < r.steps.size() && r.steps[i].number == number;
  };
  for (std::size_t i = 0; i < a.data_pipeline.steps.size(); ++i)
    if (same_step(i, a.data_pipeline.steps[i].number))
      r.steps[i].dataloader_ns = a.data_pipeline.steps[i].dataloader_ns;
  if (r.has_steps) {
    for (std::size_t i = 0; i < a.host_blockers.syncs.per_step.size(); ++i)
      if (same_step(i, a.host_blockers.syncs.per_step[i].step)) {
        r.steps[i].host_sync_ns = a.host_blockers.syncs.per_step[i].total_ns;
        r.steps[i].host_syncs = static_cast<std::int64_t>(a.host_blockers.syncs.per_step[i].count);
      }
  } else if (!r.steps.empty()) {
    r.steps.front().host_sync_ns = a.host_blockers.syncs.total_ns;
    r.steps.front().host_syncs = static_cast<std::int64_t>(a.host_blockers.syncs.count);
  }
  const CommunicationResult& comm = a.communication;
  if (r.has_steps) {
    for (std::size_t i = 0; i < comm.steps.size(); ++i)
      if (same_step(i, comm.steps[i].step)) {
        r.steps[i].comm_ns = comm.steps[i].comm_ns;
        r.steps[i].exposed_comm_ns = comm.steps[i].exposed_ns;
      }
  } else if (!r.steps.empty()) {
    r.steps.front().comm_ns = comm.comm_ns;
    r.steps.front().exposed_comm_ns = comm.exposed_ns;
  }
  add_compute_kernels(model, a.context, r.steps);
  // Ranks are compared on absolute time: torch 2.x writes ts relative to baseTimeNanoseconds, and
  // every rank has its own base. A base that would overflow a time (a damaged header) is not used.
  std::int64_t base = model.info.base_time_ns.value_or(0);
  auto fits = [&](std::int64_t t) {
    std::int64_t out = 0;
    return !__builtin_add_overflow(t, base, &out);
  };
  for (const RankStep& s : r.steps)
    if (!fits(s.start_ns) || !fits(s.start_ns + s.duration_ns)) base = 0;
  for (const CollectiveCall& c : comm.calls)
    if (!fits(c.start_ns) || !fits(c.start_ns + c.dur_ns)) base = 0;
  for (RankStep& s : r.steps) s.start_ns += base;

  r.mean_step_ns = static_cast<std::int64_t>(a.breakdown.average_duration_ns + 0.5);
  r.breakdown_pct = a.breakdown.average_pct;
  if (!a.gpu_metrics.devices.empty()) {
    double sum = 0;
    for (const DeviceMetrics& m : a.gpu_metrics.devices) sum += m.utilization_pct;
    r.gpu_utilization_pct = sum / static_cast<double>(a.gpu_metrics.devices.size());
  }
  r.window_ns = a.context.window_ns();
  r.comm_ns = comm.comm_ns;
  r.exposed_comm_ns = comm.exposed_ns;
  if (comm.present && comm.comm_device_ns > 0) r.overlap_pct = 100.0 * comm.overlap_share;

  std::map<StrId, std::int32_t> groups;
  for (const CollectiveCall& c : comm.calls) {
    RankCollective rc;
    rc.kind = c.kind;
    if (c.process_group != kEmptyStr) {
      auto [it, added] = groups.try_emplace(c.process_group, static_cast<std::int32_t>(r.process_groups.size()));
      if (added) r.process_groups.emplace_back(model.strings.view(c.process_group));
      rc.process_group = it->second;
    }
    rc.seq = c.seq == kNoId ? -1 : c.seq;
    const int s = step_at(r.steps, c.start_ns + base);
    rc.step = (r.has_steps && s >= 0) ? r.steps[static_cast<std::size_t>(s)].number : -1;
    rc.start_ns = c.start_ns + base;
    rc.dur_ns = c.dur_ns;
    rc.bytes = c.bytes;
    rc.group_size = c.group_size;
    rc.device = c.device;
    rc.exposed_ns = c.exposed_ns;
    r.collectives.push_back(rc);
  }

  r.verdict = d.verdict.headline;
  for (std::size_t i = 0; i < d.findings.size() && i < kRankFindings; ++i) {
    const Finding& f = d.findings[i];
    r.findings.push_back({f.id, f.title, f.severity, f.dimension, f.time_share, f.max_speedup});
  }
  r.repairs = model.report.repair_count();
  r.skips = model.report.skip_count();
  r.notes = model.report.notes;
  return r;
}

// ---- Serialisation ------------------------------------------------------------------------------
// Arrays of numbers instead of objects keep the rows small: a job of 1,000 ranks with 10,000
// collectives each is 10 M rows.

namespace {

using json = nlohmann::json;

template <typename T>
T get_at(const json& j, std::size_t i) {
  return j.at(i).get<T>();
}

}  // namespace

std::vector<std::uint8_t> encode_rank_result(const RankResult& r) {
  json steps = json::array();
  for (const RankStep& s : r.steps) {
    json row = {s.number,       s.start_ns, s.duration_ns,     s.compute_kernel_ns, s.dataloader_ns,
                s.host_sync_ns, s.comm_ns,  s.exposed_comm_ns, s.host_syncs};
    for (std::int64_t v : s.category_ns) row.push_back(v);
    steps.push_back(std::move(row));
  }
  json collectives = json::array();
  for (const RankCollective& c : r.collectives)
    collectives.push_back({static_cast<int>(c.kind), c.process_group, c.seq, c.step, c.start_ns, c.dur_ns, c.bytes,
                           c.group_size, c.device, c.exposed_ns});
  json findings = json::array();
  for (const RankFinding& f : r.findings)
    findings.push_back(
        {f.id, f.title, static_cast<int>(f.severity), static_cast<int>(f.dimension), f.time_share, f.max_speedup});
  const json doc = {{"v", 1},
                    {"source", r.source},
                    {"rank", r.rank},
                    {"rank_source", static_cast<int>(r.rank_source)},
                    {"world_size", r.world_size},
                    {"backend", r.backend},
                    {"nccl_version", r.nccl_version},
                    {"device_name", r.device_name},
                    {"scale_up_link", r.scale_up_link},
                    {"scale_up_gbps", r.scale_up_gbps},
                    {"error", r.error},
                    {"has_steps", r.has_steps},
                    {"steps", steps},
                    {"mean_step_ns", r.mean_step_ns},
                    {"breakdown_pct", r.breakdown_pct},
                    {"gpu_utilization_pct", r.gpu_utilization_pct},
                    {"comm_ns", r.comm_ns},
                    {"exposed_comm_ns", r.exposed_comm_ns},
                    {"window_ns", r.window_ns},
                    {"overlap_pct", r.overlap_pct},
                    {"process_groups", r.process_groups},
                    {"collectives", collectives},
                    {"verdict", r.verdict},
                    {"findings", findings},
                    {"repairs", r.repairs},
                    {"skips", r.skips},
                    {"notes", r.notes}};
  return json::to_msgpack(doc);
}

RankResult decode_rank_result(const std::vector<std::uint8_t>& bytes) {
  RankResult r;
  try {
    const json doc = json::from_msgpack(bytes);
    if (doc.at("v").get<int>() != 1) throw std::runtime_error("unknown rank result version");
    r.source = doc.at("source").get<std::string>();
    r.rank = doc.at("rank").get<int>();
    r.rank_source = static_cast<RankSource>(doc.at("rank_source").get<int>());
    r.world_size = doc.at("world_size").get<int>();
    r.backend = doc.at("backend").get<std::string>();
    r.nccl_version = doc.at("nccl_version").get<std::string>();
    r.device_name = doc.at("device_name").get<std::string>();
    r.scale_up_link = doc.at("scale_up_link").get<std::string>();
    r.scale_up_gbps = doc.at("scale_up_gbps").get<double>();
    r.error = doc.at("error").get<std::string>();
    r.has_steps = doc.at("has_steps").get<bool>();
    for (const json& row : doc.at("steps")) {
      RankStep s;
      s.number = get_at<std::int64_t>(row, 0);
      s.start_ns = get_at<std::int64_t>(row, 1);
      s.duration_ns = get_at<std::int64_t>(row, 2);
      s.compute_kernel_ns = get_at<std::int64_t>(row, 3);
      s.dataloader_ns = get_at<std::int64_t>(row, 4);
      s.host_sync_ns = get_at<std::int64_t>(row, 5);
      s.comm_ns = get_at<std::int64_t>(row, 6);
      s.exposed_comm_ns = get_at<std::int64_t>(row, 7);
      s.host_syncs = get_at<std::int64_t>(row, 8);
      for (int c = 0; c < kStepCategoryCount; ++c)
        s.category_ns[static_cast<std::size_t>(c)] = get_at<std::int64_t>(row, 9 + static_cast<std::size_t>(c));
      r.steps.push_back(s);
    }
    r.mean_step_ns = doc.at("mean_step_ns").get<std::int64_t>();
    r.breakdown_pct = doc.at("breakdown_pct").get<std::array<double, kStepCategoryCount>>();
    r.gpu_utilization_pct = doc.at("gpu_utilization_pct").get<double>();
    r.comm_ns = doc.at("comm_ns").get<std::int64_t>();
    r.exposed_comm_ns = doc.at("exposed_comm_ns").get<std::int64_t>();
    r.window_ns = doc.at("window_ns").get<std::int64_t>();
    r.overlap_pct = doc.at("overlap_pct").get<double>();
    r.process_groups = doc.at("process_groups").get<std::vector<std::string>>();
    for (const json& row : doc.at("collectives")) {
      RankCollective c;
      c.kind = static_cast<Collective>(get_at<int>(row, 0));
      c.process_group = get_at<std::int32_t>(row, 1);
      c.seq = get_at<std::int64_t>(row, 2);
      c.step = get_at<std::int64_t>(row, 3);
      c.start_ns = get_at<std::int64_t>(row, 4);
      c.dur_ns = get_at<std::int64_t>(row, 5);
      c.bytes = get_at<std::int64_t>(row, 6);
      c.group_size = get_at<std::int32_t>(row, 7);
      c.device = get_at<std::int32_t>(row, 8);
      c.exposed_ns = get_at<std::int64_t>(row, 9);
      r.collectives.push_back(c);
    }
    r.verdict = doc.at("verdict").get<std::string>();
    for (const json& row : doc.at("findings"))
      r.findings.push_back({get_at<std::string>(row, 0), get_at<std::string>(row, 1),
                            static_cast<Severity>(get_at<int>(row, 2)), static_cast<Dimension>(get_at<int>(row, 3)),
                            get_at<double>(row, 4), get_at<double>(row, 5)});
    r.repairs = doc.at("repairs").get<std::uint64_t>();
    r.skips = doc.at("skips").get<std::uint64_t>();
    r.notes = doc.at("notes").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("not a ferret rank result: ") + e.what());
  }
  return r;
}

}  // namespace ferret
