// A hand-made trace with one CUDA (or HIP) graph capture and two replays, shared by the model and
// analysis tests. Times are microseconds; host events on pid 1 tid 1, GPU work on device 0 stream 7.
//
//   cudaStreamBeginCapture [0,1)
//     aten::mm   [2,12)   cudaLaunchKernel [4,6)   c1   captured: no GPU work then
//     aten::add  [14,20)  cudaLaunchKernel [16,18) c2
//     aten::relu [22,30)  cudaLaunchKernel [24,26) c3
//   cudaStreamEndCapture [32,34), cudaGraphInstantiate [36,40)
//   aten::copy_ [100,110) cudaLaunchKernel [102,104) c10 -> copy_kernel [106,107)   (eager)
//   model_step [200,260)  cudaGraphLaunch [202,212) c20 -> gemm [215,235) add_k [235,240) relu_k [240,248)
//   model_step [300,360)  cudaGraphLaunch [302,312) c21 -> gemm [315,335) add_k [335,340) relu_k [340,348)
//
// Replayed kernels carry graph id 7 and node ids gemm 11, add_k 12, relu_k 13 (as torch >= 2.10
// records them) unless `replay_ids` is false (older torch).
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

namespace ferret::test {

struct GraphTraceOptions {
  bool hip = false;                      // hip* names instead of cuda*
  bool replay_ids = true;                // "graph id" / "graph node id" on replayed kernels
  bool capture_side_ids = false;         // ... and on the captured launch calls
  bool permuted_node_ids = false;        // node ids gemm 13, add_k 11, relu_k 12 (not in launch order)
  bool extra_replay_node = false;        // each replay also runs a memset node 14 the capture does not show
  bool eager_kernel_in_capture = false;  // a launch inside the capture whose kernel ran there and then
  // Zero-length GPU records of the captured launches (1 us after each call) with their graph and node
  // ids, as a profiler may write them at capture time.
  bool capture_gpu_records = false;
};

inline std::string graph_trace(const GraphTraceOptions& o = {}) {
  const std::string api = o.hip ? "hip" : "cuda";
  auto span = [](const std::string& cat, const std::string& name, int pid, int tid, double ts, double dur,
                 const std::string& args) {
    return fmt::format(R"({{"ph":"X","cat":"{}","name":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})", cat,
                       name, pid, tid, ts, dur, args);
  };
  auto node_args = [](long graph, long node) {
    return fmt::format(R"(,"graph id":{},"graph node id":{})", graph, node);
  };
  const long gemm_node = o.permuted_node_ids ? 13 : 11;
  const long add_node = o.permuted_node_ids ? 11 : 12;
  const long relu_node = o.permuted_node_ids ? 12 : 13;
  auto launch = [&](double ts, double dur, int corr, long node) {
    std::string args = fmt::format(R"("correlation":{})", corr);
    if (o.capture_side_ids) args += node_args(7, node);
    return span("cuda_runtime", api + "LaunchKernel", 1, 1, ts, dur, args);
  };
  auto replayed = [&](const std::string& cat, const std::string& name, double ts, double dur, int corr, long node) {
    std::string args = fmt::format(R"("correlation":{})", corr);
    if (o.replay_ids) args += node_args(7, node);
    return span(cat, name, 0, 7, ts, dur, args);
  };
  std::vector<std::string> ev = {
      span("cuda_runtime", api + "StreamBeginCapture", 1, 1, 0, 1, R"("correlation":100)"),
      span("cpu_op", "aten::mm", 1, 1, 2, 10, ""),
      launch(4, 2, 1, gemm_node),
      span("cpu_op", "aten::add", 1, 1, 14, 6, ""),
      launch(16, 2, 2, add_node),
      span("cpu_op", "aten::relu", 1, 1, 22, 8, ""),
      launch(24, 2, 3, relu_node),
      span("cuda_runtime", api + "StreamEndCapture", 1, 1, 32, 2, R"("correlation":101)"),
      span("cuda_runtime", api + "GraphInstantiate", 1, 1, 36, 4, R"("correlation":102)"),
      span("cpu_op", "aten::copy_", 1, 1, 100, 10, ""),
      span("cuda_runtime", api + "LaunchKernel", 1, 1, 102, 2, R"("correlation":10)"),
      span("kernel", "copy_kernel", 0, 7, 106, 1, R"("correlation":10)"),
  };
  if (o.capture_gpu_records) {
    ev.push_back(span("kernel", "gemm", 0, 7, 7, 0, fmt::format(R"("correlation":1{})", node_args(7, gemm_node))));
    ev.push_back(span("kernel", "add_k", 0, 7, 19, 0, fmt::format(R"("correlation":2{})", node_args(7, add_node))));
    ev.push_back(span("kernel", "relu_k", 0, 7, 27, 0, fmt::format(R"("correlation":3{})", node_args(7, relu_node))));
  }
  if (o.eager_kernel_in_capture) {
    ev.push_back(span("cuda_runtime", api + "LaunchKernel", 1, 1, 27, 1, R"("correlation":4)"));
    ev.push_back(span("kernel", "side_kernel", 0, 8, 29, 1, R"("correlation":4)"));
  }
  for (int replay = 0; replay < 2; ++replay) {
    const double t = 200 + 100 * replay;
    const int corr = 20 + replay;
    ev.push_back(span("cpu_op", "model_step", 1, 1, t, 60, ""));
    ev.push_back(span("cuda_runtime", api + "GraphLaunch", 1, 1, t + 2, 10, fmt::format(R"("correlation":{})", corr)));
    ev.push_back(replayed("kernel", "gemm", t + 15, 20, corr, gemm_node));
    ev.push_back(replayed("kernel", "add_k", t + 35, 5, corr, add_node));
    ev.push_back(replayed("kernel", "relu_k", t + 40, 8, corr, relu_node));
    if (o.extra_replay_node) ev.push_back(replayed("gpu_memset", "Memset (Device)", t + 48, 1, corr, 14));
  }
  std::string text = R"({"traceEvents":[)";
  for (std::size_t i = 0; i < ev.size(); ++i) text += (i ? ",\n" : "\n") + ev[i];
  return text + "]}";
}

}  // namespace ferret::test
