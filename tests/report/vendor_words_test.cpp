// Vendor vocabulary: every rendered report (text, Markdown, JSON, HTML) of the AMD and MTIA corpus
// traces is free of NVIDIA-only words, outside the PyTorch API names ROCm keeps (`torch.cuda`,
// `ProfilerActivity.CUDA`).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace vendor_words_test {

// NVIDIA's words and tools; "CUDA" alone is not listed: PyTorch's ROCm build keeps torch.cuda.
const std::vector<std::string> kNvidiaWords = {
    "CUDA graph", "CUDA runtime", "CUDA IPC",    "CUDA sync", "CUDA context",      "SM efficiency",
    "SMs and",    "Tensor Core",  "tensor core", "NVLink",    "nvidia-smi",        "nsys ",
    "ncu ",       "cudaMemcpy",   "cudaMalloc",  "TF32",      "Transformer Engine"};

TEST(VendorWords, AmdAndMtiaReportsSpeakTheirVendorsWords) {
  int checked = 0;
  for (const char* name :
       {"mi300-resnet-actckpt-rank0of8.json.gz", "mi250-rocm62-toy.json.gz", "mi300-sglang-prefill-edge-wait.json.gz",
        "mi300-vllm-decode-graph-capture.pt.trace.json.gz", "mtia-inference-backlog.json.gz"}) {
    const std::string path = test::corpus_path(name);
    if (path.empty()) {
      std::fprintf(stderr, "SKIPPED (corpus trace %s absent)\n", name);
      continue;
    }
    for (const std::string flags : {"--width 200", "--md", "--json", "--html -"}) {
      test::CommandResult r = test::run_ferret("analyze " + flags + " " + path);
      ASSERT_EQ(r.exit_code, 0) << name << " " << flags << ": " << r.err;
      // A finding's `threshold` cites where its number comes from (an NVIDIA tool's rule among
      // them): a source, not advice. The HTML page embeds the same JSON.
      if (flags == "--json" || flags == "--html -") {
        const std::size_t begin = flags == "--json" ? 0 : r.out.find("id=\"ferret-data\">");
        ASSERT_NE(begin, std::string::npos);
        const std::size_t from = flags == "--json" ? 0 : begin + std::string("id=\"ferret-data\">").size();
        const std::size_t to = flags == "--json" ? r.out.size() : r.out.find("</script>", from);
        nlohmann::json doc = nlohmann::json::parse(r.out.substr(from, to - from));
        for (nlohmann::json& t : doc["traces"])
          for (nlohmann::json& f : t["findings"]) f.erase("threshold");
        r.out = (flags == "--json" ? std::string() : r.out.substr(0, from) + r.out.substr(to)) + doc.dump();
      }
      for (const std::string& w : kNvidiaWords) {
        const std::size_t at = r.out.find(w);
        EXPECT_EQ(at, std::string::npos) << name << " " << flags << ": \"" << w << "\" in ..."
                                         << r.out.substr(at == std::string::npos ? 0 : (at > 120 ? at - 120 : 0), 240);
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "SKIPPED: no AMD or MTIA corpus trace";
}

}  // namespace vendor_words_test
}  // namespace
}  // namespace ferret
