import torch
x = torch.rand(3, requires_grad=True)
w = torch.rand(2, requires_grad=True)
y = x.clone()
v = y[:2]
e = torch.autograd.graph.get_gradient_edge(v)  # v's edge before the write below
v.mul_(w)  # y's grad_fn becomes CopySlices around MulBackward0, whose edge 0 is e
torch.autograd.grad(y.sum(), [e, w], allow_unused=True)
