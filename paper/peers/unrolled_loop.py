"""PyTorch peer of the unrolled loop (seed 000): differentiable SGD on a linear classifier,
time per 100 steps."""

import time

from common import figure, import_torch, parse_args

args = parse_args(__doc__)
torch = import_torch()

steps = 200 if args.quick else 2000
block = 100
torch.manual_seed(0)
x = torch.rand(300, 32) * 2 - 1
targets = torch.tensor([(i * 7 + 3) % 3 for i in range(300)])


def run(steps):
    w = ((torch.rand(32, 3) * 2 - 1) * 0.1).requires_grad_()
    b = torch.zeros(3, requires_grad=True)
    blocks = []
    start = time.perf_counter()
    for step in range(1, steps + 1):
        loss = torch.nn.functional.cross_entropy(x @ w + b, targets)
        gw, gb = torch.autograd.grad(loss, [w, b], create_graph=True)
        w = w - 1e-3 * gw
        b = b - 1e-3 * gb
        if step % block == 0:
            blocks.append(time.perf_counter() - start)
            start = time.perf_counter()
    return blocks


run(block)  # warm-up
blocks = run(steps)
for i, seconds in enumerate(blocks):
    figure("pytorch", "time per 100 steps@step=%d" % ((i + 1) * block), seconds * 1e3, "ms")
figure("pytorch", "last/first block", blocks[-1] / blocks[0], "x")
n = len(blocks)
mx, my = (n - 1) / 2, sum(blocks) / n
slope = sum((i - mx) * (b - my) for i, b in enumerate(blocks)) / max(sum((i - mx) ** 2 for i in range(n)), 1e-12)
first = my - slope * mx
figure("pytorch", "fitted last/first block", (first + slope * (n - 1)) / first, "x")
