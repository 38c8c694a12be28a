"""PyTorch peer of the tiny-graph and scalar-chain workloads (seed 000, issue 2)."""

from common import figure, import_torch, median_time, parse_args

args = parse_args(__doc__)
torch = import_torch()

a = torch.rand((2, 2), requires_grad=True)
b = torch.rand((2, 2), requires_grad=True)
gradient = torch.ones(2, 2)


def tiny():
    torch.autograd.grad(a * b, [a, b], gradient)


x = torch.rand(4, requires_grad=True)
length = 1000


def chain():
    y = x
    for _ in range(length):
        y = y * 1.0001
    torch.autograd.grad(y.sum(), [x])


tiny()
chain()
if args.quick:
    figure("pytorch", "time per call", median_time(tiny, 200, 3) * 1e6, "us")
    figure("pytorch", "scalar chain time per call", median_time(chain, 2, 3) * 1e3, "ms")
else:
    figure("pytorch", "time per call", median_time(tiny, 10000, 7) * 1e6, "us")
    figure("pytorch", "scalar chain time per call", median_time(chain, 20, 7) * 1e3, "ms")
