# The PyTorch programs behind regressions/pytorch_inplace_state_test.cc, each printing the values
# and error messages the test pins (float64). Run: python3 regressions/pytorch_inplace_state_goldens.py
# (with torch 2.15 installed).
import torch

from goldens_util import error, leaf, show, t  # noqa: F401

torch.set_default_dtype(torch.float64)


# --- detach_ (issue 44, point 7) --------------------------------------------------------------
x = leaf([1.0, 2.0])
a = x * 2
r = a.detach_()
show("detach_ non-leaf", r is a, a.requires_grad, a.grad_fn, a.is_leaf, a._version)

x = leaf([1.0, 2.0])
x.detach_()
show("detach_ leaf", x.requires_grad, x.is_leaf)

x = leaf([1.0, 2.0, 3.0, 4.0])
error("detach_ view", lambda: (x * 2)[1:3].detach_())
error("detach_ view of a constant", lambda: t([1.0, 2.0, 3.0, 4.0])[1:3].detach_())
with torch.no_grad():
    v = x[1:3]
error("detach_ no_grad view", lambda: v.detach_())
with torch.no_grad():
    error("detach_ view under no_grad", lambda: x[1:3].detach_())
y = t([[1.0, 2.0], [3.0, 4.0]]).requires_grad_() @ t([[[1.0, 0.0], [0.0, 1.0]]] * 2)
show("detach_ matmul result (not a view)", y._is_view(), y.detach_().requires_grad)

x = leaf([1.0, 2.0])
a = x * 2
b = a * 3
a.detach_()
show("detach_ after use", *torch.autograd.grad(b.sum(), x))

x = leaf([1.0, 2.0, 3.0, 4.0])
a = x * 2
v = a[1:3]
a.detach_()
show("detach_ base", v.requires_grad, type(v.grad_fn).__name__, v.is_leaf, *torch.autograd.grad(v.sum(), x))

x = leaf([1.0, 2.0, 3.0, 4.0])
a = x * 2
v = a[1:3]
a.detach_()
a.mul_(2)
show("detach_ base, then write it", v.requires_grad, type(v.grad_fn).__name__, v.is_leaf)

x = leaf([1.0, 2.0])
y = (x * 2).sum()
x.detach_()
y.backward()
show("detach_ leaf, then backward", x.grad)
x = leaf([1.0, 2.0])
y = (x * 2).sum()
x.detach_()
error("detach_ leaf, then grad", lambda: torch.autograd.grad(y, x))

x = leaf([1.0, 2.0])
(x * 2).sum().backward()
x.detach_()
show("detach_ leaf keeps .grad", x.grad)

x = leaf([1.0, 2.0])
a = x * 2
a.detach_()
a.requires_grad_()
show("detach_ then requires_grad_", a.is_leaf, *torch.autograd.grad((a * 3).sum(), a))

# --- matmul saves its broadcast operand as a view (issue 44, point 6) -------------------------
A = [[1.0, 2.0], [3.0, 4.0]]
B = [[[1.0, 0.0], [0.0, 1.0]], [[2.0, 1.0], [1.0, 2.0]]]
a, b = t(A), leaf(B)
show("matmul grad", *torch.autograd.grad((a @ b).sum(), b))
a, b = t(A), leaf(B)
y = a @ b
a.mul_(10)
error("matmul, operand written", lambda: torch.autograd.grad(y.sum(), b))
a, b = t([A]), leaf(B)
y = a @ b
a.mul_(10)
error("[1,2,2] @ [2,2,2], operand written", lambda: torch.autograd.grad(y.sum(), b))
x, b = leaf(A), leaf(B)
a = x * 1
y = a @ b
a.mul_(10)
error("operand requiring grad written", lambda: torch.autograd.grad(y.sum(), b))
x, b = leaf(A), leaf(B)
show("matmul grads", *torch.autograd.grad((x @ b * t([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]])).sum(), (x, b)))

# --- Split outputs whose base was written ------------------------------------------------------
x = leaf([1.0, 2.0, 3.0, 4.0])
a = x * 1
v, _ = a.split(2)
a.mul_(2)
error("split output after base write", lambda: v.grad_fn)
