#!/usr/bin/python3
"""Records before/after pairs of real CPU traces (Debian's PyTorch 1.13, legacy chrome trace) for
the what-if validation (docs/ACCURACY.md, tests/analysis/whatif_test.cpp).

Each pair is one program run twice: BEFORE has a cost, AFTER has the fix. ferret predicts the
AFTER step time from the BEFORE trace with the matching what-if:
  dataloader  Dataset decoding in the main process (num_workers=0) -> 3 DataLoader workers
              what-if: --remove dataloader
  exp-dtype   a float64 exp over 1M elements in a step -> the same exp in float32
              what-if: --speedup aten::exp=K
  conv-dtype  a float64 convolution in an inference step -> the same convolution in float32
              what-if: --speedup aten::conv2d=K
K is not read from the AFTER trace: it is the speedup of the op alone, timed here in isolation
(median of repeated calls outside the profiler) and written to pairs.json beside the traces.

Usage: nice -n -10 /usr/bin/python3 tests/data/whatif/record_whatif_pairs.py [OUT_DIR] [--steps N]
(a raised priority keeps other work on a shared machine from stretching random steps)
Steps are marked with record_function("ProfilerStep#N"), as torch.profiler.profile(schedule=...)
does in Kineto builds. One intra-op thread, so the timings do not depend on the machine's cores.
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import tempfile
import time

import torch
from torch.autograd import profiler


class SlowDataset(torch.utils.data.Dataset):
    """Each sample takes ~2 ms to 'decode' (sleep: I/O or decoding outside the interpreter)."""

    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.randn(64), i % 10


def dataloader(steps, workers):
    torch.manual_seed(0)
    work = torch.randn(1 << 20)
    out = torch.empty_like(work)
    loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=4, num_workers=workers,
                                         prefetch_factor=4 if workers else 2)
    it = iter(loader)
    for _ in range(6):  # warm up (and let the workers fill their queues) outside the profile
        next(it)
    time.sleep(0.3)
    with torch.no_grad(), profiler.profile(record_shapes=True) as prof:
        for step in range(steps):
            with profiler.record_function(f"ProfilerStep#{step}"):
                x, _ = next(it)
                x.sum()
                for _ in range(16):  # more compute per step than 3 workers need for 8 ms of loading
                    torch.exp(work, out=out)
    return prof


def exp_inputs(dtype):
    torch.manual_seed(0)
    x = torch.randn(1 << 20, dtype=dtype)
    other = torch.randn(1 << 20)
    return x, torch.empty_like(x), other, torch.empty_like(other)


def exp_step(x, out, other, other_out):
    torch.exp(x, out=out)
    torch.add(other, 1.0, out=other_out)
    torch.mul(other, 2.0, out=other_out)
    torch.softmax(other.view(1024, 1024), dim=1)


def conv_inputs(dtype):
    torch.manual_seed(0)
    x = torch.randn(2, 16, 32, 32, dtype=dtype)
    w = torch.randn(16, 16, 3, 3, dtype=dtype)
    other = torch.randn(256, 1024)
    return x, w, other


def conv_step(x, w, other):
    torch.nn.functional.conv2d(x, w, padding=1)
    torch.softmax(other, dim=1)
    torch.tanh(other).sum()
    torch.exp(other)


def profile_steps(step_fn, inputs, steps):
    for _ in range(3):  # warm up
        step_fn(*inputs)
    with torch.no_grad(), profiler.profile(record_shapes=True) as prof:
        for step in range(steps):
            with profiler.record_function(f"ProfilerStep#{step}"):
                step_fn(*inputs)
    return prof


def isolated_speedup(op, before_inputs, after_inputs, repeats=60):
    """Median time of op(*before) / median time of op(*after), each op timed alone."""
    def median_time(inputs):
        for _ in range(5):
            op(*inputs)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            op(*inputs)
            times.append(time.perf_counter() - t0)
        return statistics.median(times)
    with torch.no_grad():
        return median_time(before_inputs) / median_time(after_inputs)


def save(prof, out_dir, name):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        path = tmp.name
    prof.export_chrome_trace(path)
    out = os.path.join(out_dir, f"{name}.json.gz")
    with open(path, "rb") as src, gzip.open(out, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    print(out, os.path.getsize(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir", nargs="?", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_num_threads(1)
    pairs = {}

    save(dataloader(args.steps, 0), args.out_dir, "dataloader-before")
    save(dataloader(args.steps, 3), args.out_dir, "dataloader-after")
    pairs["dataloader"] = {"whatif": "--remove dataloader"}

    exp = lambda x, out, other, other_out: torch.exp(x, out=out)
    save(profile_steps(exp_step, exp_inputs(torch.float64), args.steps), args.out_dir, "exp-dtype-before")
    save(profile_steps(exp_step, exp_inputs(torch.float32), args.steps), args.out_dir, "exp-dtype-after")
    k = isolated_speedup(exp, exp_inputs(torch.float64), exp_inputs(torch.float32))
    pairs["exp-dtype"] = {"whatif": f"--speedup aten::exp={k:.3f}", "isolated_speedup": round(k, 3)}

    conv = lambda x, w, other: torch.nn.functional.conv2d(x, w, padding=1)
    save(profile_steps(conv_step, conv_inputs(torch.float64), args.steps), args.out_dir, "conv-dtype-before")
    save(profile_steps(conv_step, conv_inputs(torch.float32), args.steps), args.out_dir, "conv-dtype-after")
    k = isolated_speedup(conv, conv_inputs(torch.float64), conv_inputs(torch.float32))
    pairs["conv-dtype"] = {"whatif": f"--speedup aten::conv2d={k:.3f}", "isolated_speedup": round(k, 3)}

    pairs["recorded_with"] = {"torch": torch.__version__, "intra_op_threads": 1}
    with open(os.path.join(args.out_dir, "pairs.json"), "w") as f:
        json.dump(pairs, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
