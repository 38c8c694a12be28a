import torch
class Two(torch.autograd.Function):
    forward = staticmethod(lambda ctx, a: (a * 2, a * 3))
    backward = staticmethod(lambda ctx, g0, g1: g0 * 2 + g1 * 3)
x = torch.rand(1, requires_grad=True)
_, y = Two.apply(x)
y.retain_grad()
y.copy_(x.detach())
