"""A training loop that never ends on its own: prints its pid, then "step N" after each optimizer
step, until a signal stops it (to check what `ferret run` does with TERM, HUP and INT)."""
import os
import sys

import torch


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    print(f"pid {os.getpid()}", flush=True)
    step = 0
    while True:
        loss = model(torch.randn(8, 16)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        print(f"step {step}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
