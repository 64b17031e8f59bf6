"""A training loop that reads the loss back with .item() in every step (and 30 times per step
in an inner loop of tiny updates): the syncs `ferret run` must show."""
import torch


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randn(32, 1)
    total = 0.0
    for step in range(8):
        for _ in range(30):
            loss = torch.nn.functional.mse_loss(model(x), y)
            total += loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"mean loss {total / 240:.4f}")


if __name__ == "__main__":
    main()
