#!/usr/bin/python3
"""Records small real profiler traces with Debian's PyTorch 1.13 on CPU (legacy autograd format).

Each scenario is a real PyTorch program with a known bottleneck:
  input-bound   a training loop whose Dataset sleeps in __getitem__ (slow decode/storage)
  compute-bound inference of large fp32 matmuls
  host-sync     a training loop that calls .item() on the loss every iteration
  unfused-attention  training a Transformer encoder layer: torch 1.13's multi-head attention
                computes bmm -> softmax -> dropout -> bmm op by op (no fused attention kernel)
  notebook      what a notebook records: a profile with no schedule and no step markers around
                a few training iterations of a small MLP, the first (cold) one included

Usage: /usr/bin/python3 examples/record_cpu_traces.py OUT_DIR [--steps N]
Writes OUT_DIR/cpu-<scenario>.json.gz. Steps are marked with record_function("ProfilerStep#N"),
as torch.profiler.profile(schedule=...) does in Kineto builds.
"""
import argparse
import gzip
import os
import shutil
import tempfile
import time

import torch
from torch.autograd import profiler


class SlowDataset(torch.utils.data.Dataset):
    """Each sample takes ~3 ms to 'decode', like JPEG decoding on a slow disk."""

    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        time.sleep(0.003)
        return torch.randn(3, 32, 32), i % 10


def input_bound(steps):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(8 * 32 * 32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=8, num_workers=0)
    it = iter(loader)
    with profiler.profile(record_shapes=True) as prof:
        for step in range(steps):
            with profiler.record_function(f"ProfilerStep#{step}"):
                x, y = next(it)
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
    return prof


def compute_bound(steps):
    torch.manual_seed(0)
    weights = [torch.randn(1024, 1024) for _ in range(4)]
    x = torch.randn(512, 1024)
    with torch.no_grad(), profiler.profile(record_shapes=True) as prof:
        for step in range(steps):
            with profiler.record_function(f"ProfilerStep#{step}"):
                h = x
                for w in weights:
                    h = torch.relu(torch.mm(h, w))
    return prof


def host_sync(steps):
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randn(32, 1)
    losses = []
    with profiler.profile(record_shapes=True) as prof:
        for step in range(steps):
            with profiler.record_function(f"ProfilerStep#{step}"):
                for _ in range(20):  # many small iterations, each reading the loss back
                    loss = torch.nn.functional.mse_loss(model(x), y)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    losses.append(loss.item())
    return prof


def unfused_attention(steps):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
    opt = torch.optim.SGD(layer.parameters(), lr=0.01)
    x = torch.randn(4, 512, 128)  # long sequences: the [16, 512, 512] scores dominate
    with profiler.profile(record_shapes=True) as prof:
        for step in range(steps):
            with profiler.record_function(f"ProfilerStep#{step}"):
                loss = layer(x).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    return prof


def notebook(steps):
    # No record_function("ProfilerStep#N"): the iterations are only what the loop repeats (each
    # optimizer.step() records Optimizer.step#SGD.step). The model is built inside the profile, as
    # a notebook cell often does, so the first iteration also pays for the first calls.
    with profiler.profile(record_shapes=True) as prof:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
        for _ in range(steps):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return prof


SCENARIOS = {"input-bound": input_bound, "compute-bound": compute_bound, "host-sync": host_sync,
             "unfused-attention": unfused_attention, "notebook": notebook}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--only", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_num_threads(1)
    for name, run in SCENARIOS.items():
        if args.only and name != args.only:
            continue
        prof = run(args.steps)
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            path = tmp.name
        prof.export_chrome_trace(path)
        out = os.path.join(args.out_dir, f"cpu-{name}.json.gz")
        with open(path, "rb") as src, gzip.open(out, "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
        os.remove(path)
        print(out, os.path.getsize(out))


if __name__ == "__main__":
    main()
