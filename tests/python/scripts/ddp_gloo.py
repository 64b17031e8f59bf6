"""Two-process DistributedDataParallel on CPU over gloo, started with torchrun's environment: each
rank trains a small model for a few steps (gradients all-reduced by DDP)."""
import os

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(8):
        x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.barrier()
    print(f"rank {rank} of {dist.get_world_size()} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
