# Records the two traces of tests/diagnosis/rules_evidence_test.cpp: five no_grad forwards of a small
# CNN (conv 3x3 at batch 1, which PyTorch leaves to its slow fallback convolution; batch norm;
# dropout), once in training mode, once after model.eval(). Run with Debian's PyTorch 1.13 (legacy
# autograd export: forward-MODE.json.gz) and with the test environment's torch 2.x (Kineto:
# forward-MODE.torch2.json.gz): /usr/bin/python3 record_forward_modes.py, then
# build/venv/bin/python record_forward_modes.py. Writes the .json.gz here.
import gzip
import os

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Dropout(0.5),
                      nn.Linear(8 * 30 * 30, 10))
x = torch.randn(1, 3, 32, 32)
here = os.path.dirname(os.path.abspath(__file__))
for mode in ("train", "eval"):
    getattr(model, mode)()
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        for _ in range(5):
            with torch.no_grad():
                model(x)
    suffix = ".torch2" if int(torch.__version__.split(".")[0]) >= 2 else ""
    plain = os.path.join(here, f"forward-{mode}{suffix}.json")
    prof.export_chrome_trace(plain)
    with open(plain, "rb") as f, gzip.open(plain + ".gz", "wb") as g:
        g.write(f.read())
    os.remove(plain)
