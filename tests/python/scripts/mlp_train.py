"""A CPU training loop whose time is three 1024-wide Linear layers' matrix multiplications: which
BLAS torch calls decides it (Debian's python3-torch calls the system libblas.so.3, the reference
BLAS unless another is installed; PyPI's x86 wheels link MKL)."""
import torch


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(256, 1024), torch.randint(0, 10, (256,))
    for _ in range(6):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("trained 6 steps")


if __name__ == "__main__":
    main()
