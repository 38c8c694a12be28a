# PyTorch 2.15 goldens for ops/tests/index_ops_test.cc: run with the peers' venv
#   ~/.cache/autograd-peers/venv/bin/python ops/tests/index_ops_goldens.py
# and paste each printed line into the test case of the same name. float64 throughout.
import torch

f64 = torch.float64
W6 = torch.tensor([0.5, -1.0, 2.0, 1.5, -0.25, 3.0], dtype=f64)


def t(v, shape=None):
    x = torch.tensor(v, dtype=f64)
    return (x.reshape(shape) if shape else x).requires_grad_()


def show(name, *tensors):
    print(name + ": " + " | ".join(
        ", ".join(repr(float(e)) for e in x.detach().reshape(-1)) for x in tensors))


X = [0.5, -1.0, 2.0, 0.25, 1.0, -0.5]

# index_select with a repeated index: the gradient adds up.
x = t(X, (2, 3))
y = torch.index_select(x, 1, torch.tensor([2, 0, 2]))
(g,) = torch.autograd.grad((y * W6.reshape(2, 3)).sum(), x)
show("index_select", y, g)

# gather along dim 0 with a repeated index, and its double backward through the gradient.
x = t(X, (2, 3))
index = torch.tensor([[1, 0, 1], [1, 1, 0]])
y = torch.gather(x, 0, index)
v = W6.reshape(2, 3).clone().requires_grad_()
(g,) = torch.autograd.grad(y, x, grad_outputs=v, create_graph=True)
(gv,) = torch.autograd.grad((g * torch.arange(6, dtype=f64).reshape(2, 3)).sum(), v)
show("gather", y, g, gv)

# scatter_add along dim 1: self's gradient is grad, src's is grad.gather(1, index).
s = t(X, (2, 3))
src = t([1.0, 2.0, 3.0, 4.0], (2, 2))
index = torch.tensor([[2, 2], [0, 1]])
y = torch.scatter_add(s, 1, index, src)
gs, gsrc = torch.autograd.grad((y * W6.reshape(2, 3)).sum(), (s, src))
show("scatter_add", y, gs, gsrc)

# max / min along a dim: first index on ties; the gradient goes there only.
x = t([1.0, 3.0, 3.0, 2.0, -1.0, -1.0], (2, 3))
for name, op in (("max", torch.max), ("min", torch.min)):
    for keepdim in (False, True):
        r = op(x, 1, keepdim=keepdim)
        (g,) = torch.autograd.grad((r.values * torch.tensor([2.0, -3.0], dtype=f64).reshape(r.values.shape)).sum(), x)
        show("%s_dim1_keepdim%d" % (name, keepdim), r.values, r.indices.to(f64), g)
r = torch.max(x, 0)
(g,) = torch.autograd.grad(r.values.sum(), x)
show("max_dim0", r.values, r.indices.to(f64), g)
# NaN wins, at its first position.
x = t([1.0, float("nan"), 3.0, float("nan")], (1, 4))
r = torch.max(x, 1)
(g,) = torch.autograd.grad(r.values.sum(), x)
show("max_nan", r.values, r.indices.to(f64), g)

for name, f in [
    ("index_select index", lambda: torch.index_select(torch.zeros(2, 3), 1, torch.tensor([3]))),
    ("gather index", lambda: torch.gather(torch.zeros(2, 3), 1, torch.tensor([[0, 3]]))),
    ("gather rank", lambda: torch.gather(torch.zeros(2, 3), 1, torch.tensor([0]))),
    ("scatter_add index", lambda: torch.scatter_add(torch.zeros(2, 3), 0, torch.tensor([[2]]), torch.ones(1, 1))),
    ("max empty", lambda: torch.max(torch.zeros(2, 0), 1)),
    ("max dim", lambda: torch.max(torch.zeros(2, 3), 2)),
]:
    try:
        f()
        print(name, "no error")
    except Exception as e:
        print(name, "->", str(e).splitlines()[0])

# cat and stack: each input gets its slice of the gradient; double backward through it.
a = t([1.0, 2.0, 3.0, 4.0], (2, 2))
b = t([5.0, 6.0], (2, 1))
y = torch.cat([a, b], 1)
ga, gb = torch.autograd.grad((y * W6.reshape(2, 3)).sum(), (a, b))
show("cat", y, ga, gb)
a = t([1.0, 2.0, 3.0])
b = t([4.0, 5.0, 6.0])
y = torch.stack([a, b], 1)
v = W6.reshape(3, 2).clone().requires_grad_()
ga, gb = torch.autograd.grad(y, (a, b), grad_outputs=v, create_graph=True)
(gv,) = torch.autograd.grad((ga * torch.tensor([1.0, 2.0, 3.0], dtype=f64)).sum() + gb.sum(), v)
show("stack", y, ga, gb, gv)
for name, f in [
    ("cat sizes", lambda: torch.cat([torch.zeros(2, 3), torch.zeros(3, 3)], 1)),
    ("cat 0-dim", lambda: torch.cat([torch.zeros(())])),
    ("stack sizes", lambda: torch.stack([torch.zeros(2, 3), torch.zeros(3)])),
    ("stack dim", lambda: torch.stack([torch.zeros(2)], 2)),
]:
    try:
        f()
        print(name, "no error")
    except Exception as e:
        print(name, "->", str(e).splitlines()[0])
