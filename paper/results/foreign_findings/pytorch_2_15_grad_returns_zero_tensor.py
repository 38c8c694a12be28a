import torch
x = torch.tensor([0.5, -2.0], requires_grad=True)
(g,) = torch.autograd.grad(x.abs().sum(), x, create_graph=True)
(h,) = torch.autograd.grad(g.sum(), x)  # abs's second derivative: zeros
assert not h._is_zerotensor(), "grad() returned PyTorch's internal efficient-zero tensor"
h.add_(1)  # reached once fixed; today: RuntimeError: ZeroTensors are immutable
