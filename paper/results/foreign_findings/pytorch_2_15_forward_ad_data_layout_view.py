import torch
fwAD = torch.autograd.forward_ad
with fwAD.dual_level():
    d = fwAD.make_dual(torch.rand(4), torch.rand(4))
    d.data = torch.rand(8)[::2]  # same size, stride 2; d's tangent keeps stride 1
    d[1:]  # a view of d: its tangent is a view of d's tangent, of another layout
