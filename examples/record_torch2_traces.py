#!/usr/bin/env python3
"""Records the project's torch 2.x sample traces with the Kineto profiler on the CPU.

Each scenario is a small real PyTorch program with a known bottleneck, profiled the way users do
(torch.profiler.profile with a schedule, so Kineto marks ProfilerStep#N, unless the scenario is the
notebook one). Run with the test environment's interpreter (torch pinned in
python/requirements-torch2.txt):

    build/venv/bin/python examples/record_torch2_traces.py examples [--only NAME]

Writes OUT/traces/torch2-<scenario>.json.gz; the DDP scenario a job folder OUT/jobs/torch2-ddp-gloo/
with one trace per rank; the memory scenario also its Execution Trace and memory timeline in
OUT/evidence/. Scenarios:
  input-bound        training whose Dataset takes ~4 ms a sample, DataLoader num_workers=0
  input-workers      the same with num_workers=2 and persistent workers: the input is hidden
  host-sync          a training loop reading the loss with .item() 20 times a step
  no-sync            the same loop keeping the losses on the device side (no .item())
  matmul-fp32        inference of 1024x1024 fp32 matmuls
  matmul-bf16        the same under torch.autocast("cpu", dtype=torch.bfloat16)
  attention-unfused  attention written out: matmul -> softmax -> dropout -> matmul
  attention-sdpa     the same through F.scaled_dot_product_attention
  compile            torch.compile (Inductor, C++ on the CPU) of a model with a graph break
                     (a print) that is recompiled when the batch size changes; compiling is recorded
  notebook           a profile with no schedule around 5 iterations, the cold first one included
  ddp-gloo           DistributedDataParallel over gloo, 2 ranks, a large gradient all-reduce exposed
  memory             profile_memory, record_shapes, with_stack, with_modules and a schedule through
                     tensorboard_trace_handler; the Execution Trace observer beside it; and
                     export_memory_timeline
"""
import argparse
import gzip
import json
import os
import shutil
import socket
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule

CPU = [ProfilerActivity.CPU]


def scheduled(steps, **kwargs):
    """A profile as the tutorials write it: wait 1, warm up 1, record `steps` active steps."""
    return profile(activities=CPU, schedule=schedule(wait=1, warmup=1, active=steps), record_shapes=True,
                   **kwargs)


def total_steps(steps):
    return steps + 2


class SlowDataset(torch.utils.data.Dataset):
    """Each sample takes ~4 ms to 'decode', like JPEG decoding from a slow disk."""

    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        time.sleep(0.004)
        return torch.randn(3, 32, 32), i % 10


def small_cnn(width=16):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, width, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(width, width, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(width * 32 * 32, 10))


def train_from_loader(steps, num_workers):
    # ~1.8 GFLOP a step (forward and backward of two 64-channel convolutions): about as long as one
    # worker takes for a batch (8 x 4 ms), so two workers hide the loading and none exposes it.
    model = small_cnn(64)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=8, num_workers=num_workers,
                                         persistent_workers=num_workers > 0)
    it = iter(loader)
    if num_workers:
        next(it)  # the workers start before recording, as in a job past its first batch
    with scheduled(steps) as prof:
        for _ in range(total_steps(steps)):
            x, y = next(it)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    return prof


def input_bound(steps):
    return train_from_loader(steps, 0)


def input_workers(steps):
    return train_from_loader(steps, 2)


def sync_loop(steps, read_back):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randn(64, 1)
    losses = []
    with scheduled(steps) as prof:
        for _ in range(total_steps(steps)):
            for _ in range(20):
                loss = F.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item() if read_back else loss.detach())
            prof.step()
    return prof


def host_sync(steps):
    return sync_loop(steps, True)


def no_sync(steps):
    return sync_loop(steps, False)


def matmuls(steps, dtype):
    torch.manual_seed(0)
    weights = [torch.randn(1024, 1024) for _ in range(4)]
    x = torch.randn(512, 1024)
    with torch.no_grad(), scheduled(steps) as prof:
        for _ in range(total_steps(steps)):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
                h = x
                for w in weights:
                    h = torch.relu(h @ w)
            prof.step()
    return prof


def matmul_fp32(steps):
    return matmuls(steps, torch.float32)


def matmul_bf16(steps):
    return matmuls(steps, torch.bfloat16)


class Attention(torch.nn.Module):
    def __init__(self, fused, dim=128, heads=4):
        super().__init__()
        self.fused, self.heads = fused, heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.fused:
            o = F.scaled_dot_product_attention(q, k, v)  # no dropout: the CPU's flash kernel takes it
        else:
            scores = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
            o = scores.softmax(-1) @ v
        return self.out(o.transpose(1, 2).reshape(b, s, d))


def attention(steps, fused):
    torch.manual_seed(0)
    layer = Attention(fused)
    opt = torch.optim.SGD(layer.parameters(), lr=0.01)
    x = torch.randn(4, 512, 128)  # long sequences: the [4, 4, 512, 512] scores dominate unfused
    with scheduled(steps) as prof:
        for _ in range(total_steps(steps)):
            loss = layer(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    return prof


def attention_unfused(steps):
    return attention(steps, False)


def attention_sdpa(steps):
    return attention(steps, True)


class BreakingModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(256, 256)
        self.b = torch.nn.Linear(256, 256)

    def forward(self, x):
        h = torch.relu(self.a(x))
        print("", end="")  # a print is a graph break: two compiled graphs with Python between
        return torch.relu(self.b(h)).sum()


def compiled(steps):
    torch.manual_seed(0)
    torch._dynamo.reset()
    # Compile for real each time the script runs (no FX graph or autotune cache from an earlier run),
    # as on a fresh machine.
    torch._inductor.config.force_disable_caches = True
    model = BreakingModel()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step_fn = torch.compile(model, dynamic=False)
    with scheduled(steps) as prof:
        for i in range(total_steps(steps)):
            batch = 32 if i < total_steps(steps) - 1 else 48  # the last step's new shape recompiles
            loss = step_fn(torch.randn(batch, 256))
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    return prof


def notebook(steps):
    # What a notebook cell records: no schedule, no ProfilerStep, the model built inside the profile
    # so the first iteration pays for the first calls.
    with profile(activities=CPU, record_shapes=True) as prof:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
        for _ in range(steps):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return prof


def ddp_rank(rank, world, port, steps, out_dir):
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    # A wide model: ~16 M parameters, so the gradient all-reduce (64 MB over loopback gloo) is
    # as long as the small batch's compute and is not hidden behind it.
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 2048)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 2048)
    with scheduled(steps) as prof:
        for _ in range(total_steps(steps)):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    write_trace(prof, os.path.join(out_dir, f"rank-{rank}.json.gz"))
    dist.destroy_process_group()


def ddp_gloo(steps, out_dir):
    import torch.multiprocessing as mp
    folder = os.path.join(out_dir, "jobs", "torch2-ddp-gloo")
    os.makedirs(folder, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(ddp_rank, args=(2, port, steps, folder), nprocs=2)


def memory(steps, out_dir):
    from torch.profiler import ExecutionTraceObserver, tensorboard_trace_handler
    torch.manual_seed(0)
    model = small_cnn()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
    tb_dir = tempfile.mkdtemp(prefix="ferret-tb-")
    evidence = os.path.join(out_dir, "evidence")
    os.makedirs(evidence, exist_ok=True)
    et_path = os.path.join(evidence, "torch2-memory.et.json")
    et = ExecutionTraceObserver().register_callback(et_path)
    with profile(activities=CPU, schedule=schedule(wait=1, warmup=1, active=steps),
                 on_trace_ready=tensorboard_trace_handler(tb_dir, worker_name="memory", use_gzip=True),
                 record_shapes=True, profile_memory=True, with_stack=True, with_modules=True,
                 execution_trace_observer=et) as prof:
        for _ in range(total_steps(steps)):
            with record_function("train_step"):
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            prof.step()
    et.unregister_callback()
    written = [n for n in os.listdir(tb_dir) if n.endswith(".json.gz")]
    assert len(written) == 1, written
    shutil.move(os.path.join(tb_dir, written[0]), os.path.join(out_dir, "traces", "torch2-memory.json.gz"))
    shutil.rmtree(tb_dir)
    gzip_in_place(et_path)
    # The memory timeline is computed from the same profile (CPU allocations here).
    timeline = os.path.join(evidence, "torch2-memory-timeline.json")
    prof.export_memory_timeline(timeline, device="cpu")
    gzip_in_place(timeline)
    for name in ("traces/torch2-memory.json.gz", "evidence/torch2-memory.et.json.gz",
                 "evidence/torch2-memory-timeline.json.gz"):
        print(os.path.join(out_dir, name), os.path.getsize(os.path.join(out_dir, name)))


def gzip_in_place(path):
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)


def write_trace(prof, out):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        path = tmp.name
    prof.export_chrome_trace(path)
    with open(path) as f:
        json.load(f)  # the profiler wrote whole JSON
    with open(path, "rb") as src, gzip.open(out, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    print(out, os.path.getsize(out))


SCENARIOS = {"input-bound": input_bound, "input-workers": input_workers, "host-sync": host_sync,
             "no-sync": no_sync, "matmul-fp32": matmul_fp32, "matmul-bf16": matmul_bf16,
             "attention-unfused": attention_unfused, "attention-sdpa": attention_sdpa, "compile": compiled,
             "notebook": notebook}
WITH_OUTPUT_DIR = {"ddp-gloo": ddp_gloo, "memory": memory}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--only", choices=sorted([*SCENARIOS, *WITH_OUTPUT_DIR]))
    args = ap.parse_args()
    if int(torch.__version__.split(".")[0]) < 2:
        sys.exit(f"torch {torch.__version__}: these are torch 2.x samples (use build/venv/bin/python)")
    os.makedirs(os.path.join(args.out_dir, "traces"), exist_ok=True)
    torch.set_num_threads(1)  # the same on a 2-core CI machine and a workstation
    for name, run in SCENARIOS.items():
        if args.only in (None, name):
            write_trace(run(args.steps), os.path.join(args.out_dir, "traces", f"torch2-{name}.json.gz"))
    for name, run in WITH_OUTPUT_DIR.items():
        if args.only in (None, name):
            run(args.steps, args.out_dir)


if __name__ == "__main__":
    main()
