# Records tests/data/evidence/cpp-extension.json.gz with Debian's PyTorch 1.13 (legacy autograd
# export, CPU): five no_grad passes of two Linear layers, each followed by the same C++ operator
# called two ways - registered with the dispatcher (TORCH_LIBRARY: the profiler records it as
# ferret_demo::row_norms) and bound with pybind11 alone (the profiler records nothing of it: its
# time is host time outside every operator). Builds the extension with
# torch.utils.cpp_extension.load_inline (a C++ compiler and torch's headers, ~20 s).
# Run: /usr/bin/python3 record_cpp_extension.py (torch 1.13, legacy export: cpp-extension.json.gz),
# and build/venv/bin/python record_cpp_extension.py (torch 2.x, Kineto: cpp-extension.torch2.json.gz).
# Writes the .json.gz here.
import gzip
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = r"""
#include <torch/extension.h>
#include <cmath>
// Deliberately naive (a scalar loop per row), so the operator holds a visible share of the pass.
torch::Tensor row_norms(torch::Tensor x) {
  auto a = x.contiguous();
  auto out = torch::empty({a.size(0)}, a.options());
  const float* p = a.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t r = 0; r < a.size(0); ++r) {
    double s = 0;
    for (int64_t c = 0; c < a.size(1); ++c)
      for (int k = 0; k < 8; ++k) s += std::sqrt(std::fabs(p[r * a.size(1) + c]) + k);
    o[r] = static_cast<float>(s);
  }
  return out;
}
TORCH_LIBRARY(ferret_demo, m) { m.def("row_norms(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(ferret_demo, CPU, m) { m.impl("row_norms", row_norms); }
"""

here = os.path.dirname(os.path.abspath(__file__))
with tempfile.TemporaryDirectory() as build:
    ext = load_inline("ferret_demo_ext", cpp_sources=SOURCE, functions=["row_norms"], build_directory=build)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256))
    x = torch.randn(512, 256)
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        for _ in range(5):
            with torch.no_grad():
                h = model(x)
                torch.ops.ferret_demo.row_norms(h)  # dispatched: recorded
                ext.row_norms(h)  # pybind11 only: not recorded
    suffix = ".torch2" if int(torch.__version__.split(".")[0]) >= 2 else ""
    plain = os.path.join(here, f"cpp-extension{suffix}.json")
    prof.export_chrome_trace(plain)
    with open(plain, "rb") as f, gzip.open(plain + ".gz", "wb") as g:
        g.write(f.read())
    os.remove(plain)
