"""A training loop whose Dataset takes ~4 ms a sample (slow decode) read with num_workers=0:
input-bound. Prints one line per epoch-end and exits with the status given as argv[1] (to
check that `ferret run` passes it through)."""
import sys
import time

import torch


class SlowDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.004)
        return torch.randn(16), i % 4


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=8, num_workers=0, pin_memory=False)
    steps = 0
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
    print(f"trained {steps} steps")
    sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)


if __name__ == "__main__":
    main()
