#include "gen/scenario_step.h"

#include <algorithm>
#include <span>
#include <string>

#include <fmt/format.h>

namespace ferret::scenario {

namespace {

// With worker processes, the DataLoader's __next__ span is a wait for a batch from the queue.
constexpr std::string_view kMultiProcessLoader = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";

}  // namespace

GpuSpan op_kernel(StepTimeline& t, std::initializer_list<std::string_view> ops, const Args& outer_args,
                  const KernelShape& k, Range kernel, Range launch, Range overhead) {
  Random& rng = t.rng();
  const std::int64_t kernel_ns = rng.draw(kernel);
  const std::int64_t launch_ns = rng.draw(launch);
  const std::int64_t overhead_ns = rng.draw(overhead);
  return kineto::op_kernel(t, std::span<const std::string_view>(ops.begin(), ops.size()), outer_args, k, kernel_ns,
                           launch_ns, overhead_ns, kComputeStream);
}

void short_dataloader_wait(StepTimeline& t) {
  t.open("user_annotation", std::string(kMultiProcessLoader));
  t.advance(t.rng().between(us(120), us(300)));
  t.close();
  t.advance(t.rng().between(us(5), us(15)));
}

void copy_batch_to_device(StepTimeline& t, std::string_view dims, std::int64_t bytes, bool pinned) {
  Random& rng = t.rng();
  t.open("cpu_op", "aten::to",
         shapes(fmt::format("[{}, [], [], [], [], []]", dims), "[\"float\", \"\", \"\", \"\", \"\", \"\"]"));
  t.advance(rng.between(2000, 5000));
  t.open("cpu_op", "aten::_to_copy");
  t.advance(rng.between(3000, 6000));
  t.open("cpu_op", "aten::copy_");
  t.advance(rng.between(3000, 6000));
  // Pinned memory moves at ~24 GB/s over PCIe 5; pageable memory is staged by the driver at ~11 GB/s.
  const std::int64_t bytes_per_us = pinned ? 24000 : 11000;
  const std::int64_t copy_ns = std::max<std::int64_t>(1200, rng.jitter(bytes * 1000 / bytes_per_us, 5));
  t.memcpy(pinned ? "Memcpy HtoD (Pinned -> Device)" : "Memcpy HtoD (Pageable -> Device)", bytes, copy_ns, !pinned);
  for (int i = 0; i < 3; ++i) {
    t.advance(rng.between(1000, 3000));
    t.close();
  }
}

void backward_op(StepTimeline& t, std::string_view node, std::int64_t sequence, std::string_view op,
                 std::initializer_list<KernelWork> work, Range launch, Range overhead) {
  Random& rng = t.rng();
  const std::int64_t overhead_ns = rng.draw(overhead);
  kineto::open_autograd_node(t, node, sequence, overhead_ns);
  t.open("cpu_op", op);
  t.advance(overhead_ns / 3 + rng.between(200, 600));
  for (const KernelWork& w : work) {
    t.launch(*w.kernel, w.ns, rng.draw(launch));
    t.advance(rng.between(500, 1500));
  }
  for (int i = 0; i < 3; ++i) {
    t.advance(rng.between(500, 1500));
    t.close();
  }
}

}  // namespace ferret::scenario
