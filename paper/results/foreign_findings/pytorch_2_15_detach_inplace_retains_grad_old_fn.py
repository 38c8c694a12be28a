import torch
x = torch.rand(2, requires_grad=True)
y = x * 2
y.retain_grad()
y.detach_()  # y is now a leaf that does not require grad, yet y.retains_grad stays True
y.mul_(x)
