#include "gen/job_simulation.h"

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "base/trace_writer.h"
#include "gen/h100_kernels.h"

namespace ferret::jobsim {

const char* straggler_cause_name(StragglerCause cause) {
  switch (cause) {
    case StragglerCause::kCompute: return "compute";
    case StragglerCause::kInput: return "input";
    case StragglerCause::kSync: return "sync";
  }
  return "compute";
}

const char* sharding_name(Sharding sharding) { return sharding == Sharding::kZero2 ? "zero2" : "ddp"; }

std::int64_t JobPlan::link_busbw_gbps() const {
  if (hosts <= 1) return kNvlinkBusbwGBps;
  return slow_link_host >= 0 && slow_link_host < hosts ? kSlowLinkBusbwGBps : kInfinibandBusbwGBps;
}

const char* JobPlan::link_name() const {
  if (hosts <= 1) return "nvlink";
  return slow_link_host >= 0 && slow_link_host < hosts ? "socket" : "infiniband";
}

std::int64_t JobPlan::alpha_ns() const {
  const std::int64_t hop_ns = hosts > 1 ? 1500 : 500;
  return 8000 + 2 * static_cast<std::int64_t>(world_size - 1) * hop_ns;
}

std::int64_t JobPlan::transfer_ns(std::int64_t bytes) const {
  const std::int64_t n = world_size;
  const std::int64_t bus_bytes_times_n = bytes * 2 * (n - 1);  // bus bytes x n, kept exact
  const std::int64_t bytes_per_ns_times_n = link_busbw_gbps() * n;
  return (bus_bytes_times_n + bytes_per_ns_times_n - 1) / bytes_per_ns_times_n + alpha_ns();
}

std::int64_t JobPlan::ring_pass_alpha_ns() const {
  const std::int64_t hop_ns = hosts > 1 ? 1500 : 500;
  return 8000 + static_cast<std::int64_t>(world_size - 1) * hop_ns;
}

std::int64_t JobPlan::ring_pass_ns(std::int64_t bytes) const {
  const std::int64_t n = world_size;
  const std::int64_t bus_bytes_times_n = bytes * (n - 1);
  const std::int64_t bytes_per_ns_times_n = link_busbw_gbps() * n;
  return (bus_bytes_times_n + bytes_per_ns_times_n - 1) / bytes_per_ns_times_n + ring_pass_alpha_ns();
}

std::int64_t JobPlan::backward_transfer_ns(std::int64_t bytes) const {
  return sharding == Sharding::kZero2 ? ring_pass_ns(bytes) : transfer_ns(bytes);
}

std::int64_t JobPlan::padded_elements(std::int64_t elements) const {
  const std::int64_t n = world_size;
  return (elements + n - 1) / n * n;
}

std::vector<std::int64_t> host_clock_offsets(std::uint64_t seed, int hosts, std::int64_t skew_ns) {
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(std::max(hosts, 0)), 0);
  Random rng(seed * 0x9E3779B97F4A7C15ULL + 0xC10CC10CULL);
  for (std::size_t h = 1; h < offsets.size(); ++h) offsets[h] = skew_ns > 0 ? rng.between(-skew_ns, skew_ns) : 0;
  return offsets;
}

namespace {

using kineto::Args;
using kineto::GpuKind;
using kineto::KernelShape;
using kineto::Range;
using kineto::shapes;
using kineto::us;

constexpr std::string_view kDataLoader = kineto::kernels::kSingleProcessLoader;
constexpr int kSyncPointsPerStep = 4;  // sync straggler: after layers 2, 5, 8, 11
constexpr std::int64_t kNoneIndex = -1;

}  // namespace

// ---------------------------------------------------------------------------------------------
struct RankSimulator::Impl {
  JobPlan plan;
  int rank;
  bool record;
  Random rng;
  std::int32_t pid, main_tid, autograd_tid, device;
  bool straggler;
  kineto::ProfilerIds ids;  // as the profiler assigns them, across the whole trace
  // The rank's host process and GPU; the compute stream's free time carries across steps.
  kineto::HostTimeline t;

  struct Pending {
    std::int64_t kernel_event = kNoneIndex, flow_event = kNoneIndex;
  };
  std::vector<Pending> pending;
  std::vector<CollectiveArrival> arrivals;
  std::int64_t nccl_free = 0;  // settled across ranks, so kept apart from the timeline's streams
  RankStepRecord step;
  std::int64_t next_step_start = 0;
  std::vector<std::int64_t> forward_ns;        // this step's forward kernel durations
  std::vector<std::int64_t> forward_sequence;  // autograd Sequence number of each forward op
  std::size_t forward_cursor = 0;
  std::vector<Args> bucket_args;  // collective args up to "Process Group Ranks"
  std::vector<Args> gather_args;  // ZeRO-2's parameter all-gathers, the same way
  std::vector<CollectiveArrival> gather_arrivals;
  std::vector<Pending> gather_pending;

  // Members initialize in declaration order: the pid, then the autograd thread, are drawn first.
  Impl(const JobPlan& p, int r, bool rec)
      : plan(p),
        rank(r),
        record(rec),
        rng(p.seed * 0x9E3779B97F4A7C15ULL + 0x5EED0000ULL + static_cast<std::uint64_t>(r)),
        pid(static_cast<std::int32_t>(rng.between(10000, 99999))),
        main_tid(pid),
        autograd_tid(pid + static_cast<std::int32_t>(rng.between(50, 120))),
        device(plan.local_rank(rank)),
        straggler(plan.straggler == rank),
        t(ids, rng, {pid, main_tid, device, kNcclStream}, record, kineto::CopyCallDraws::kBoth) {
    ids.correlation = rng.between(20000, 40000);
    ids.collective_seq = 1;
    next_step_start = kTraceStartNs + us(400) + rng.between(0, us(300));  // profilers start within ~0.3 ms
    if (record) {
      const std::string ranks = fmt::format("[{}]", kineto::rank_list(plan.world_size));
      const auto collective = [&](std::string_view name, std::int64_t in, std::int64_t out) {
        return Args()
            .string("Collective name", name)
            .string("dtype", "Float")
            .integer("In msg nelems", in)
            .integer("Out msg nelems", out)
            .integer("Group size", plan.world_size)
            .string("In split size", "[]")
            .string("Out split size", "[]")
            .string("Process Group Name", "0")
            .string("Process Group Description", "default_pg")
            .string("Process Group Ranks", ranks);
      };
      const std::int64_t n = plan.world_size;
      for (const GradientBucket& b : gradient_buckets()) {
        if (plan.sharding == Sharding::kDdp) {
          bucket_args.push_back(collective("allreduce", b.elements, b.elements));
        } else {
          // reduce_scatter_tensor / all_gather_into_tensor on the flat buffer padded to n shards.
          const std::int64_t padded = plan.padded_elements(b.elements);
          bucket_args.push_back(collective("_reduce_scatter_base", padded, padded / n));
          gather_args.push_back(collective("_allgather_base", padded / n, padded));
        }
      }
    }
  }

  // One op chain launching one kernel, with eager PyTorch's host overheads around the launch.
  void op_kernel(const ForwardOp& op, std::int64_t kernel_ns, std::int64_t sequence_number) {
    const std::int64_t overhead_ns = rng.between(us(12), us(25));
    const std::int64_t launch_ns = rng.between(5000, 8000);
    const Args outer = record ? Args(op.shapes).integer("Sequence number", sequence_number) : Args();
    kineto::op_kernel(t, op.ops, outer, *op.kernel, kernel_ns, launch_ns, overhead_ns, kComputeStream);
  }

  // evaluate_function: Node > Node > ops, each op launching its kernels.
  void backward_node(const BackwardNode& node, std::int64_t sequence_number) {
    const std::int64_t overhead_ns = rng.between(us(10), us(20));
    kineto::open_autograd_node(t, node.node, sequence_number, overhead_ns);
    for (const BackwardOp& op : node.ops) {
      t.open("cpu_op", op.op);
      t.advance(overhead_ns / 3 + rng.between(200, 600));
      for (const auto& [kernel, range] : op.kernels) {
        // Two draws, sequenced (argument evaluation order is unspecified).
        const std::int64_t kernel_ns = rng.draw(range);
        const std::int64_t launch_ns = rng.between(5000, 8000);
        t.launch(*kernel, kernel_ns, launch_ns, kComputeStream);
        t.advance(rng.between(500, 1500));
      }
      t.advance(rng.between(500, 1500));
      t.close();
    }
    for (int i = 0; i < 2; ++i) {
      t.advance(rng.between(500, 1500));
      t.close();
    }
  }

  // The straggler's host syncs (cause "sync"): a metrics read-out that synchronizes the stream,
  // reads a scalar, then works on the host for `host_work_ns` while the GPU has nothing queued.
  void sync_point(std::int64_t host_work_ns) {
    t.synchronize(kComputeStream, /*sync_event=*/true);
    t.advance(rng.between(2000, 4000));
    t.item(kComputeStream);
    t.advance(host_work_ns);
  }

  // DDP's reducer launching one bucket's all-reduce from the autograd thread:
  // record_param_comms > nccl:all_reduce > event record, stream wait, cudaLaunchKernelExC of the
  // NCCL kernel on the NCCL stream. The kernel's start is settled across ranks (finish_step).
  void all_reduce(std::size_t bucket) {
    const bool sharded = plan.sharding == Sharding::kZero2;
    issue_collective(record ? bucket_args[bucket] : Args(), sharded ? "nccl:_reduce_scatter_base" : "nccl:all_reduce",
                     sharded ? kernels::kNcclReduceScatter : kernels::kNcclAllReduce, pending, arrivals);
  }

  // ZeRO-2, once the optimizer has stepped this rank's shard: all-gather one bucket's updated
  // parameters, from the main thread, after the optimizer's kernels on the compute stream.
  void all_gather(std::size_t bucket) {
    issue_collective(record ? gather_args[bucket] : Args(), "nccl:_all_gather_base", kernels::kNcclAllGather,
                     gather_pending, gather_arrivals);
  }

  // record_param_comms > nccl:<op> > event record, stream wait, cudaLaunchKernelExC of the NCCL
  // kernel on the NCCL stream, which waits for what the compute stream has queued so far. The
  // kernel's start is settled across ranks (place_collectives).
  void issue_collective(Args args, std::string_view annotation, const KernelShape& kernel,
                        std::vector<Pending>& pending_out, std::vector<CollectiveArrival>& arrivals_out) {
    const std::int64_t seq = ids.collective_seq++;
    if (record) {
      if (plan.distributed_info) args.integer("Rank", rank);
      if (plan.seq) args.integer("Seq", seq);
    }
    kineto::open_collective(t, args, annotation);
    const std::int64_t inputs_ready = t.stream_free(kComputeStream);
    const std::int64_t launch_ns = rng.between(9000, 14000);
    const std::int64_t corr = ids.correlation++;
    const std::int64_t ext = t.innermost_external_id();
    const std::int64_t launch_latency = rng.between(1500, 4000);
    CollectiveArrival arrival;
    arrival.ready_ns = std::max(t.now() + launch_ns + launch_latency, inputs_ready);
    arrival.queue_gap_ns = rng.between(800, 2000);
    // Written with no time yet: place_collectives places the kernel and its flow.
    const auto launched =
        t.launch_at(kernel, 0, launch_ns, kNcclStream, 0, args, "cudaLaunchKernelExC", 430, corr, ext);
    pending_out.push_back({launched.kernel_event, launched.flow_event});
    arrivals_out.push_back(arrival);
    kineto::close_collective(t);
  }

  // Places settled NCCL kernels: each starts at max(ready, previous end + gap), ends at its end.
  void place_collectives(const std::vector<CollectiveArrival>& arrived, const std::vector<Pending>& events,
                         std::span<const std::int64_t> ends) {
    if (ends.size() != arrived.size()) throw std::logic_error("job simulation: one collective end per call expected");
    std::int64_t previous_end = nccl_free;
    for (std::size_t k = 0; k < arrived.size(); ++k) {
      const std::int64_t start = collective_start(arrived[k], previous_end);
      const std::int64_t end = ends[k];
      if (end <= start) throw std::logic_error("job simulation: a collective ends before it starts");
      if (record) {
        TraceEvent& kernel = t.events()[static_cast<std::size_t>(events[k].kernel_event)];
        kernel.ts = start;
        kernel.dur = end - start;
        t.events()[static_cast<std::size_t>(events[k].flow_event)].ts = start;
      }
      t.gpu().push_back({start, end, GpuKind::kCommunication});
      step.collective_start_ns.push_back(start);
      previous_end = end;
    }
    nccl_free = previous_end;
  }

  void forward(std::int64_t sync_work_ns_total) {
    const auto& prologue = prologue_forward();
    const auto& layer = layer_forward();
    const auto& epilogue = epilogue_forward();
    const auto& loss = loss_forward();
    // Kernel durations are drawn up front so that a compute straggler's extra time can be spread
    // over them exactly.
    forward_ns.clear();
    const auto draw = [&](const std::vector<ForwardOp>& ops) {
      for (const ForwardOp& op : ops) forward_ns.push_back(rng.draw(op.ns));
    };
    draw(prologue);
    for (int l = 0; l < kLayers; ++l) draw(layer);
    draw(epilogue);
    draw(loss);
    if (straggler && plan.straggler_cause == StragglerCause::kCompute) {
      // A slower GPU: every forward kernel longer in proportion, X in all (the rest to the last).
      std::int64_t total = 0;
      for (std::int64_t ns : forward_ns) total += ns;
      std::int64_t given = 0;
      for (std::int64_t& ns : forward_ns) {
        const std::int64_t extra = plan.straggler_delay_ns * ns / total;
        ns += extra;
        given += extra;
      }
      forward_ns.back() += plan.straggler_delay_ns - given;
    }
    forward_sequence.assign(forward_ns.size(), -1);
    forward_cursor = 0;
    const auto run = [&](const ForwardOp& op) {
      forward_sequence[forward_cursor] = ids.sequence++;
      op_kernel(op, forward_ns[forward_cursor], forward_sequence[forward_cursor]);
      ++forward_cursor;
    };

    t.open("user_annotation", "DistributedDataParallel.forward");
    t.advance(rng.between(us(30), us(60)));
    for (const ForwardOp& op : prologue) run(op);
    int sync_points_left = kSyncPointsPerStep;
    for (int l = 0; l < kLayers; ++l) {
      for (const ForwardOp& op : layer) run(op);
      if (sync_work_ns_total > 0 && l % 3 == 2) {
        const std::int64_t share = sync_work_ns_total / kSyncPointsPerStep;
        --sync_points_left;
        sync_point(sync_points_left == 0 ? sync_work_ns_total - share * (kSyncPointsPerStep - 1) : share);
      }
    }
    for (const ForwardOp& op : epilogue) run(op);
    t.advance(rng.between(us(10), us(20)));
    t.close();
    t.open("cpu_op", "aten::cross_entropy_loss",
           shapes("[[16384, 50257], [16384], [], [], [], []]", "[\"float\", \"long int\", \"\", \"\", \"\", \"\"]"));
    t.advance(rng.between(us(3), us(6)));
    for (const ForwardOp& op : loss) run(op);
    t.advance(rng.between(us(2), us(4)));
    t.close();
  }

  // Index of a forward op in forward_sequence.
  static std::size_t layer_op_index(int layer, int slot) {
    return kPrologueOps + static_cast<std::size_t>(layer) * kLayerSlots + static_cast<std::size_t>(slot);
  }

  void backward() {
    const std::size_t epilogue_at = kPrologueOps + static_cast<std::size_t>(kLayers) * kLayerSlots;
    const std::size_t loss_at = epilogue_at + kEpilogueOps;
    t.advance(rng.between(us(20), us(40)));
    t.on_thread(autograd_tid);
    const OuterBackward& outer = outer_backward();
    backward_node(outer.nll, forward_sequence[loss_at + kNllLoss]);
    backward_node(outer.log_softmax, forward_sequence[loss_at + kLogSoftmax]);
    backward_node(outer.lm_head, forward_sequence[epilogue_at + kLmHead]);
    backward_node(layer_norm_backward(), forward_sequence[epilogue_at + kLnF]);
    std::size_t bucket = 0;
    for (int l = kLayers - 1; l >= 0; --l) {
      for (const auto& [slot, node] : layer_backward()) backward_node(node, forward_sequence[layer_op_index(l, slot)]);
      all_reduce(bucket++);  // the layer's gradients are all computed: its bucket is ready
    }
    backward_node(outer.embedding_sum, forward_sequence[kEmbeddingSum]);
    backward_node(outer.wpe, forward_sequence[kWpe]);
    backward_node(outer.wte, forward_sequence[kWte]);
    all_reduce(bucket);
    t.advance(rng.between(us(10), us(20)));
    t.on_thread(main_tid);
  }

  const std::vector<CollectiveArrival>& begin_step(int index) {
    t.restart(next_step_start);
    pending.clear();
    arrivals.clear();
    gather_pending.clear();
    gather_arrivals.clear();
    step = RankStepRecord{};
    t.on_thread(main_tid);
    step.start_ns = t.now();
    t.open("user_annotation", record ? fmt::format("ProfilerStep#{}", kFirstStepNumber + index) : std::string());
    t.advance(rng.between(us(10), us(25)));

    // The next batch, loaded in the main process (num_workers=0) while the GPU has nothing queued.
    t.open("user_annotation", kDataLoader);
    std::int64_t load_ns = rng.between(us(200), us(350));
    if (straggler && plan.straggler_cause == StragglerCause::kInput) load_ns += plan.straggler_delay_ns;
    t.advance(load_ns);
    t.open("cpu_op", "aten::stack", shapes("[[], []]", "[\"TensorList\", \"\"]"));
    t.advance(rng.between(us(40), us(70)));
    t.close();
    t.advance(rng.between(us(8), us(15)));
    t.close();
    t.advance(rng.between(us(5), us(10)));

    // Token ids and targets to the GPU from pinned memory.
    for (int i = 0; i < 2; ++i) {
      t.open("cpu_op", "aten::to",
             shapes("[[16, 1024], [], [], [], [], []]", "[\"long int\", \"\", \"\", \"\", \"\", \"\"]"));
      t.advance(rng.between(2000, 5000));
      t.open("cpu_op", "aten::_to_copy");
      t.advance(rng.between(3000, 6000));
      t.open("cpu_op", "aten::copy_");
      t.advance(rng.between(3000, 6000));
      t.memcpy("Memcpy HtoD (Pinned -> Device)", 16 * 1024 * 8, rng.between(5000, 7000), false, kComputeStream);
      for (int j = 0; j < 3; ++j) {
        t.advance(rng.between(1000, 3000));
        t.close();
      }
    }
    const bool sync_straggler = straggler && plan.straggler_cause == StragglerCause::kSync;
    forward(sync_straggler ? plan.straggler_delay_ns : 0);
    backward();
    return arrivals;
  }

  const std::vector<CollectiveArrival>& finish_step(std::span<const std::int64_t> collective_end_ns) {
    place_collectives(arrivals, pending, collective_end_ns);
    const bool sharded = plan.sharding == Sharding::kZero2;

    // DDP's finalize makes the compute stream wait for the NCCL stream; AdamW (foreach) follows.
    t.advance(rng.between(us(8), us(15)));
    t.runtime("cudaStreamWaitEvent", rng.between(1500, 3000), 147);
    const std::int64_t after_nccl = nccl_free + rng.between(1000, 2000);
    t.open("user_annotation", "Optimizer.step#AdamW.step");
    t.advance(rng.between(us(20), us(40)));
    for (std::string_view op :
         {"aten::_foreach_mul_", "aten::_foreach_lerp_", "aten::_foreach_mul_", "aten::_foreach_addcmul_",
          "aten::_foreach_sqrt", "aten::_foreach_div_", "aten::_foreach_add_", "aten::_foreach_addcdiv_"}) {
      t.open("cpu_op", op);
      t.advance(rng.between(us(8), us(16)));
      std::int64_t kernel_ns = rng.between(us(250), us(400));
      if (sharded) kernel_ns = std::max<std::int64_t>(2000, kernel_ns / plan.world_size);  // its shard only
      t.launch(kernels::kAdamForeach, kernel_ns, rng.between(6000, 9000), kComputeStream, after_nccl);
      t.advance(rng.between(1000, 3000));
      t.close();
    }
    if (sharded) {
      t.advance(rng.between(us(5), us(10)));
      for (std::size_t k = 0; k < gradient_buckets().size(); ++k) all_gather(k);
      return gather_arrivals;  // the optimizer span stays open until the gathers are placed
    }
    end_step();
    return gather_arrivals;  // empty
  }

  void finish_gathers(std::span<const std::int64_t> gather_end_ns) {
    if (plan.sharding != Sharding::kZero2) throw std::logic_error("job simulation: gathers only with ZeRO-2");
    place_collectives(gather_arrivals, gather_pending, gather_end_ns);
    // The next forward reads the gathered parameters: the compute stream waits for the NCCL stream.
    t.advance(rng.between(us(3), us(6)));
    t.runtime("cudaStreamWaitEvent", rng.between(1500, 3000), 147);
    t.set_stream_free(kComputeStream, std::max(t.stream_free(kComputeStream), nccl_free));
    end_step();
  }

  // The end of the optimizer span, zero_grad, the loss read-out and the end of the step.
  void end_step() {
    t.advance(rng.between(us(5), us(10)));
    t.close();
    t.open("user_annotation", "Optimizer.zero_grad#AdamW.zero_grad");
    t.advance(rng.between(us(15), us(30)));
    t.close();
    t.item(kComputeStream);  // loss.item() for logging: the host waits for the step's GPU work
    t.advance(rng.between(us(10), us(30)));
    t.close();  // ProfilerStep
    if (t.open_spans() != 0) throw std::logic_error("job simulation: spans left open at the end of a step");
    step.end_ns = t.now();
    for (const kineto::GpuSpan& g : t.gpu())
      if (g.end > step.end_ns) throw std::logic_error("job simulation: GPU work outlives its step");
    next_step_start = t.now() + rng.between(us(5), us(15));
    measure_communication();
    if (record) kineto::sort_for_writing(t.events());
  }

  // Union of NCCL kernels, union of compute kernels, and the NCCL time no compute overlaps.
  void measure_communication() {
    std::vector<kineto::Interval> nccl, compute;
    for (const kineto::GpuSpan& g : t.gpu()) {
      if (g.kind == GpuKind::kCommunication)
        nccl.emplace_back(g.start, g.end);
      else if (g.kind == GpuKind::kKernel)
        compute.emplace_back(g.start, g.end);
    }
    const auto a = kineto::merged_intervals(std::move(nccl)), b = kineto::merged_intervals(std::move(compute));
    std::int64_t comm = 0, busy = 0;
    for (const auto& [s, e] : a) comm += e - s;
    for (const auto& [s, e] : b) busy += e - s;
    step.comm_ns = comm;
    step.compute_ns = busy;
    step.exposed_ns = comm - kineto::overlap_length(a, b);
  }
};

RankSimulator::RankSimulator(const JobPlan& plan, int rank, bool record_events)
    : impl_(std::make_unique<Impl>(plan, rank, record_events)) {}
RankSimulator::~RankSimulator() = default;

const std::vector<RankSimulator::CollectiveArrival>& RankSimulator::begin_step(int index) {
  return impl_->begin_step(index);
}
const std::vector<RankSimulator::CollectiveArrival>& RankSimulator::finish_step(
    std::span<const std::int64_t> collective_end_ns) {
  return impl_->finish_step(collective_end_ns);
}
void RankSimulator::finish_gathers(std::span<const std::int64_t> gather_end_ns) {
  impl_->finish_gathers(gather_end_ns);
}
const RankStepRecord& RankSimulator::step_record() const { return impl_->step; }
std::vector<TraceEvent>& RankSimulator::step_events() { return impl_->t.events(); }
std::int32_t RankSimulator::host_pid() const { return impl_->pid; }
std::int32_t RankSimulator::main_tid() const { return impl_->main_tid; }
std::int32_t RankSimulator::autograd_tid() const { return impl_->autograd_tid; }
std::int32_t RankSimulator::device() const { return impl_->device; }

}  // namespace ferret::jobsim
