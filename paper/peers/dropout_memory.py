"""PyTorch peer of the Dropout2d memory scenario (seed 003). PyTorch has no CPU allocator
statistics, so this counts the bytes autograd saves for backward (saved-tensor hooks), which is
what the guard changes."""

from common import figure, import_torch, parse_args

args = parse_args(__doc__)
torch = import_torch()

x = torch.randn(2, 3, 10, 10, requires_grad=True)
m = torch.randn(1, 3, 1, 1)
saved = []


def pack(t):
    saved.append(t.numel() * t.element_size())
    return t


with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    z = ((x + 2) * m).sum()
figure("pytorch", "bytes saved for backward", sum(saved), "B")
