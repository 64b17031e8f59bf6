// GPU work that no PyTorch operator launched (a C++/CUDA extension, a Triton kernel launched
// directly, a library called from C++): its own rows in the hot spots and the roofline, and the
// hot-operator rule naming it with its own profile as the fix. Hand-made traces, numbers by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace no_operator_kernels_test {

using test::span;

std::string corr(int c) { return fmt::format(R"("correlation":{})", c); }

// Times in us; five steps of 10,000. Each: aten::copy_ [+10,+40) around cudaMemcpyAsync [+15,+25)
// -> a 500 us copy at +30; then, under a Python frame `ext.py(12): forward` [+90,+170) and no
// operator, three launches at +100, +120, +140 of `my_scan_kernel(float*, int)`, 2,900 us each at
// +600, +3600, +6600; a sync [+200,+9500).
//   no-operator row: 15 launches, 15 kernels, 15 x 2,900 = 43,500 us
//   GPU time launched in the window: 43,500 + 5 x 500 = 46,000 us; the kernel's share 94.57%
std::string custom_kernel_trace(const std::string& launch, const std::string& device_name, bool copy_op = true) {
  std::vector<std::string> ev;
  const std::string api = launch.rfind("hip", 0) == 0 ? "hip" : "cuda";
  int c = 1;
  for (int step = 0; step < 5; ++step) {
    const double s = step * 10'000.0;
    ev.push_back(span("user_annotation", fmt::format("ProfilerStep#{}", step), 1, 1, s, 10'000));
    if (copy_op) ev.push_back(span("cpu_op", "aten::copy_", 1, 1, s + 10, 30));
    ev.push_back(span("cuda_runtime", api + "MemcpyAsync", 1, 1, s + 15, 10, corr(c)));
    ev.push_back(span("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 0, 7, s + 30, 500, corr(c++)));
    ev.push_back(span("python_function", "ext.py(12): forward", 1, 1, s + 90, 80));
    for (int k = 0; k < 3; ++k) {
      ev.push_back(span("cuda_runtime", launch, 1, 1, s + 100 + 20 * k, 8, corr(c)));
      ev.push_back(span("kernel", "my_scan_kernel(float*, int)", 0, 7, s + 600 + 3000 * k, 2900, corr(c++)));
    }
    ev.push_back(span("cuda_runtime", api + "DeviceSynchronize", 1, 1, s + 200, 9300));
  }
  std::string doc = fmt::format(R"({{"deviceProperties": [{{"id": 0, "name": "{}", "totalGlobalMem": 85899345920, )"
                                R"("computeMajor": 9, "computeMinor": 0, "numSms": 132}}], "traceEvents": [)",
                                device_name);
  for (std::size_t i = 0; i < ev.size(); ++i) doc += (i ? "," : "") + ev[i];
  return doc + "]}";
}

constexpr std::int64_t kUs = 1000;

TEST(NoOperatorKernels, OwnRowsInHotSpotsAndRoofline) {
  const TraceModel m = load_trace_text(custom_kernel_trace("cudaLaunchKernel", "NVIDIA H100 80GB HBM3"));
  const TraceAnalysis a = analyze_trace(m, {});
  const HotSpotsResult& h = a.hot_spots;
  ASSERT_FALSE(h.ops_by_device.empty());
  const OpStat& top = h.ops_by_device.front();
  EXPECT_EQ(top.name, "no operator: my_scan_kernel(float*, int)");
  EXPECT_TRUE(top.no_operator);
  EXPECT_EQ(top.launch_site, "ext.py(12): forward");
  EXPECT_EQ(top.calls, 15u);
  EXPECT_EQ(top.kernels, 15u);
  EXPECT_EQ(top.device_self_ns, 43'500 * kUs);
  EXPECT_EQ(h.no_operator_device_ns, 43'500 * kUs);
  EXPECT_EQ(h.attributed_device_ns, 46'000 * kUs);
  // Every GPU activity of the window is in some row: the no-operator rows close the gap.
  EXPECT_EQ(h.attributed_device_ns, h.device_ns);
  // The roofline has the row, unplaced, and counts its time against the device's.
  const auto row = std::find_if(a.roofline.groups.begin(), a.roofline.groups.end(), [](const RooflineGroup& g) {
    return g.op == "no operator: my_scan_kernel(float*, int)";
  });
  ASSERT_NE(row, a.roofline.groups.end());
  EXPECT_EQ(row->kernel_ns, 43'500 * kUs);
  EXPECT_EQ(row->calls, 15u);
  EXPECT_EQ(row->bound, Bound::kUnknown);
  EXPECT_EQ(a.roofline.kernel_ns, 46'000 * kUs);
}

TEST(NoOperatorKernels, HotOperatorNamesTheKernelWithTheVendorsProfiler) {
  for (const auto& [launch, device, profiler] :
       {std::tuple<std::string, std::string, std::string>{"cudaLaunchKernel", "NVIDIA H100 80GB HBM3",
                                                          "ncu --set full"},
        {"hipLaunchKernel", "AMD Instinct MI300X", "rocprof-compute profile"}}) {
    const TraceModel m = load_trace_text(custom_kernel_trace(launch, device));
    const Diagnosis d = diagnose(analyze_trace(m, {}));
    const auto hot =
        std::find_if(d.findings.begin(), d.findings.end(), [](const Finding& f) { return f.id == "hot-operator"; });
    ASSERT_NE(hot, d.findings.end()) << launch;
    EXPECT_EQ(hot->title,
              "Hot kernel outside PyTorch's operators: my_scan_kernel(float*, int) runs 95% of the GPU time (15 "
              "launches, 43.50 ms)");
    EXPECT_EQ(hot->severity, Severity::kMedium);  // >= 50% of the GPU time
    EXPECT_NE(hot->detail.find("ext.py(12): forward"), std::string::npos) << hot->detail;
    ASSERT_FALSE(hot->fixes.empty());
    EXPECT_NE(hot->fixes.front().text.find(profiler), std::string::npos) << hot->fixes.front().text;
    EXPECT_NE(hot->fixes.front().text.find("my_scan_kernel"), std::string::npos);
    for (const std::string& fix : fix_texts(*hot)) EXPECT_EQ(fix.find("autocast"), std::string::npos) << fix;
  }
}

// A trace whose launches no operator encloses at all (a C++ inference runtime, an export without
// operator records) did not record operators: its rows stay, no finding calls them custom kernels.
// And torch.cuda._sleep's spin kernel waits on purpose.
TEST(NoOperatorKernels, NoFindingWithoutOperatorsOrForASleepKernel) {
  const std::string no_ops = custom_kernel_trace("cudaLaunchKernel", "NVIDIA H100 80GB HBM3", false);
  std::string sleep = custom_kernel_trace("cudaLaunchKernel", "NVIDIA H100 80GB HBM3");
  for (std::size_t at = sleep.find("my_scan_kernel(float*, int)"); at != std::string::npos;
       at = sleep.find("my_scan_kernel(float*, int)"))
    sleep.replace(at, std::string("my_scan_kernel(float*, int)").size(),
                  "at::cuda::(anonymous namespace)::spin_kernel(long)");
  for (const std::string* text : {&no_ops, static_cast<const std::string*>(&sleep)}) {
    const TraceModel m = load_trace_text(*text);
    const TraceAnalysis a = analyze_trace(m, {});
    EXPECT_GT(a.hot_spots.no_operator_device_ns, 0);
    for (const Finding& f : diagnose(a).findings) {
      EXPECT_NE(f.id, "hot-operator") << f.title;
      EXPECT_EQ(f.title.find("no operator"), std::string::npos) << f.title;
    }
  }
}

// The JSON says the same as the library, through the CLI.
TEST(NoOperatorKernels, JsonRowsMatchTheLibrary) {
  const std::string path = test::temp_path("no-operator.json");
  test::write_file(path, custom_kernel_trace("cudaLaunchKernel", "NVIDIA H100 80GB HBM3"));
  const test::CommandResult r = test::run_ferret("analyze --json " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json row = nlohmann::json::parse(r.out)["traces"][0]["hot_spots"]["ops_by_device"][0];
  EXPECT_EQ(row["name"], "no operator: my_scan_kernel(float*, int)");
  EXPECT_EQ(row["no_operator"], true);
  EXPECT_EQ(row["launch_site"], "ext.py(12): forward");
  EXPECT_DOUBLE_EQ(row["device_self_us"].get<double>(), 43'500.0);
  EXPECT_EQ(row["calls"], 15);
}

}  // namespace no_operator_kernels_test
}  // namespace
}  // namespace ferret
