#include "diagnosis/communication_fixes.h"

#include <fmt/format.h>

namespace ferret {

namespace {

constexpr const char* kAccumulate =
    "Gradient accumulation: synchronize once per N micro-batches - `with model.no_sync(): loss.backward()` for the "
    "first N-1, a plain `loss.backward()` on the last";
constexpr const char* kBiggerBatch = "Raise the per-rank batch size (fewer steps, the same bytes per step)";
constexpr const char* kHybridShard =
    "Across nodes: `sharding_strategy=ShardingStrategy.HYBRID_SHARD` shards inside a node and replicates across "
    "nodes, so parameter all-gathers stay on the node's fast links";

// The evidence that picks the list: which collectives carry the time.
std::string style_fact(const ParallelStyleShare& s) {
  return fmt::format("{} carries {:.0f}% of the collective time", parallel_style_phrase(s.style), 100 * s.share);
}

std::vector<Fix> with_style(std::vector<Fix> fixes, const ParallelStyleShare& s) {
  if (s.style == ParallelStyle::kUnknown) return fixes;
  for (Fix& f : fixes) add_because(f, style_fact(s));
  return fixes;
}

// One text in both lists, so that a finding folded into another offers it once.
std::string compress_fix(bool on_host) {
  return on_host ? "Send half the bytes: `model.register_comm_hook(None, default_hooks.fp16_compress_hook)` (`from "
                   "torch.distributed.algorithms.ddp_comm_hooks import default_hooks`)"
                 : "Send half the bytes: `model.register_comm_hook(None, default_hooks.bf16_compress_hook)` (`from "
                   "torch.distributed.algorithms.ddp_comm_hooks import default_hooks`), or PowerSGD for very large "
                   "models";
}

Fix gloo_transport() {
  return {
      "gloo moves CPU tensors over TCP sockets: across hosts, put it on the fastest interface "
      "(`GLOO_SOCKET_IFNAME=<iface>`); with GPUs, keep the gradients on them and use the NCCL backend",
      "the collectives run on the host (gloo)"};
}

}  // namespace

std::vector<Fix> overlap_fixes(const ParallelStyleShare& style, bool on_host) {
  const std::string no_syncs =
      std::string("Keep all-reduce overlapped with backward: no `.item()` or other host syncs") +
      (on_host ? "" : " (`torch.cuda.synchronize()`)") + " between `loss.backward()` and the optimizer step";
  const std::string compress = compress_fix(on_host);
  const Fix ddp_buckets =
      "DDP: `DistributedDataParallel(model, bucket_cap_mb=100, gradient_as_bucket_view=True, static_graph=True)` - "
      "bigger buckets (try 25-100), no gradient copy, and a fixed bucket order so all-reduce starts during backward";
  const Fix fsdp_prefetch =
      "FSDP: prefetch the next all-gather - `FullyShardedDataParallel(model, backward_prefetch=BackwardPrefetch."
      "BACKWARD_PRE, forward_prefetch=True, limit_all_gathers=True)` - and wrap whole blocks (transformer layers), "
      "not single layers, so each all-gather is large enough to overlap";
  std::vector<Fix> fixes;
  switch (style.style) {
    case ParallelStyle::kReplicated:
      fixes = {ddp_buckets, Fix(no_syncs), kAccumulate, Fix(compress),
               "If the model is large, shard it instead of replicating it (FSDP or ZeRO)"};
      break;
    case ParallelStyle::kSharded:
      fixes = {fsdp_prefetch,
               "If memory allows, `sharding_strategy=ShardingStrategy.SHARD_GRAD_OP` (ZeRO-2) keeps the parameters "
               "after the forward and drops the backward all-gather",
               kHybridShard, kAccumulate};
      break;
    case ParallelStyle::kAllToAll:
      fixes = {
          "Pipeline the input distribution with the previous batch's compute - torchrec's "
          "`TrainPipelineSparseDist(model, optimizer, device)` overlaps the sparse all-to-all with the dense "
          "forward and backward",
          "Re-plan the sharding so fewer lookups cross ranks: `EmbeddingShardingPlanner(topology=Topology(world_size, "
          "compute_device=\"cuda\"))` with row-wise or table-wise-row-wise sharding for the large tables, "
          "data-parallel for the small ones (no all-to-all at all)",
          "Send less per lookup: fp16/bf16 embedding communication (`qcomm_codecs_registry` with `CommType.FP16` / "
          "`CommType.BF16`) halves the all-to-all bytes"};
      break;
    case ParallelStyle::kUnknown: fixes = {ddp_buckets, kAccumulate, Fix(no_syncs), fsdp_prefetch}; break;
  }
  fixes = with_style(std::move(fixes), style);
  if (on_host) fixes.push_back(gloo_transport());
  return fixes;
}

std::vector<Fix> volume_fixes(const ParallelStyleShare& style, bool on_host) {
  std::vector<Fix> fixes;
  switch (style.style) {
    case ParallelStyle::kReplicated: fixes = {kAccumulate, Fix(compress_fix(on_host)), kBiggerBatch}; break;
    case ParallelStyle::kSharded: fixes = {kAccumulate, kHybridShard, kBiggerBatch}; break;
    case ParallelStyle::kAllToAll:
      fixes = {
          "Send less per lookup: fp16/bf16 embedding communication (`qcomm_codecs_registry` with "
          "`CommType.FP16` / `CommType.BF16`) halves the all-to-all bytes",
          "Keep small tables data-parallel (no all-to-all) and shard only the large ones: a sharding plan "
          "from `EmbeddingShardingPlanner`"};
      break;
    case ParallelStyle::kUnknown: fixes = {kAccumulate, kBiggerBatch}; break;
  }
  return with_style(std::move(fixes), style);
}

}  // namespace ferret
