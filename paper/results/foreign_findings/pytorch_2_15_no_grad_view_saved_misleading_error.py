import torch
x = torch.ones(2, requires_grad=True)
with torch.no_grad():
    v = x[:1]  # a view made under no_grad
y = v * (x * 2)[:1]  # mul saves v
with torch.no_grad():
    x.add_(1)  # the write is under no_grad too
try:
    y.sum().backward()
except RuntimeError as e:
    assert "modified by an inplace operation" in str(e), f"misleading error: {str(e)[:110]}"
