# PyTorch 2.15 goldens for ops/tests/selection_ops_test.cc: run with the peers' venv
#   ~/.cache/autograd-peers/venv/bin/python ops/tests/selection_ops_goldens.py
# and paste each printed line into the test case of the same name. float64 throughout.
import torch

torch.set_printoptions(precision=17)
f64 = torch.float64


def t(v, shape=None):
    x = torch.tensor(v, dtype=f64)
    return (x.reshape(shape) if shape else x).requires_grad_()


def show(name, *tensors):
    print(name + ": " + " | ".join(
        ", ".join(repr(float(e)) for e in x.detach().reshape(-1)) for x in tensors))


W6 = torch.tensor([0.5, -1.0, 2.0, 1.5, -0.25, 3.0], dtype=f64)

# abs: abs'(0) = 0; second derivative 0.
x = t([-2.0, -0.5, 0.0, 1.5])
y = torch.abs(x)
(g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
(gg,) = torch.autograd.grad((g * torch.tensor([1.0, 2, 3, 4], dtype=f64)).sum(), x, allow_unused=True)
show("abs", y, g)
print("abs second:", gg)

# sqrt: sqrt'(0) = inf; second derivative -1/4 x^-3/2.
x = t([0.0, 0.25, 4.0])
y = torch.sqrt(x)
(g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
(gg,) = torch.autograd.grad(g[1:].sum(), x)
show("sqrt", y, g, gg)

# clamp: no gradient at the bounds themselves (min < x < max in PyTorch 2.15).
x = t([-2.0, -1.0, 0.0, 1.0, 2.0])
w = torch.tensor([1.0, 2, 3, 4, 5], dtype=f64)
show("clamp", torch.clamp(x, -1, 1), torch.autograd.grad((torch.clamp(x, -1, 1) * w).sum(), x)[0])
show("clamp_min", torch.clamp_min(x, 0.0),
     torch.autograd.grad((torch.clamp_min(x, 0.0) * w).sum(), x)[0])
show("clamp_max", torch.clamp_max(x, 0.0),
     torch.autograd.grad((torch.clamp_max(x, 0.0) * w).sum(), x)[0])

x = t([-1.0, 0.0, 1.0])
show("clamp_bounds", torch.autograd.grad(torch.clamp(x, -1, 1).sum(), x)[0],
     torch.autograd.grad(torch.clamp_min(x, -1.0).sum(), x)[0],
     torch.autograd.grad(torch.clamp_max(x, 1.0).sum(), x)[0])

# maximum / minimum with ties and broadcasting: a [2, 3], b [3].
for op in (torch.maximum, torch.minimum):
    a = t([1.0, 2.0, 3.0, 0.0, 5.0, -1.0], (2, 3))
    b = t([1.0, 4.0, -1.0])
    y = op(a, b)
    ga, gb = torch.autograd.grad((y * W6.reshape(2, 3)).sum(), (a, b))
    show(op.__name__, y, ga, gb)

# maximum with NaN: both operands get the whole gradient.
a = t([float("nan"), 1.0])
b = t([1.0, float("nan")])
y = torch.maximum(a, b)
ga, gb = torch.autograd.grad(y.sum(), (a, b))
show("maximum_nan", y, ga, gb)

# maximum's double backward: the gradient of the gradient w.r.t. grad_output (ties halve it).
a = t([1.0, 2.0, 3.0])
b = t([3.0, 2.0, 1.0])
v = torch.tensor([1.0, 2.0, 3.0], dtype=f64, requires_grad=True)
ga, = torch.autograd.grad(torch.maximum(a, b), a, grad_outputs=v, create_graph=True)
gv, = torch.autograd.grad((ga * torch.tensor([4.0, 5.0, 6.0], dtype=f64)).sum(), v)
show("maximum_double", ga, gv)

# where with broadcasting: cond [2, 1], self [3], other [2, 3].
cond = torch.tensor([[True], [False]])
s = t([1.0, 2.0, 3.0])
o = t([4.0, 5.0, 6.0, 7.0, 8.0, 9.0], (2, 3))
y = torch.where(cond, s, o)
gs, go = torch.autograd.grad((y * W6.reshape(2, 3)).sum(), (s, o))
show("where", y, gs, go)

# masked_fill: mask [3] broadcast against self [2, 3].
s = t([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], (2, 3))
mask = torch.tensor([True, False, True])
y = s.masked_fill(mask, -7.5)
(gs,) = torch.autograd.grad((y * W6.reshape(2, 3)).sum(), s)
show("masked_fill", y, gs)

# softmax over dims 0 and 1, with a weighted sum, and a second derivative.
for dim in (0, 1):
    x = t([0.5, -1.0, 2.0, 0.25, 1.0, -0.5], (2, 3))
    y = torch.softmax(x, dim)
    (g,) = torch.autograd.grad((y * W6.reshape(2, 3)).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad((g * g).sum(), x)
    show("softmax_dim%d" % dim, y, g, gg)

def gradient_of_gradient(name, op):
    """op's gradient is one op (_softmax_backward_data, _log_softmax_backward_data): the gradient
    of that gradient wrt op's result reads only its inputs, so after that grad() freed the first
    gradient's graph a backward through it still runs, into x."""
    x = t([0.5, -1.0, 2.0], (3,))
    y = op(x, 0)
    w = torch.tensor([1.0, -2.0, 3.0])
    (g,) = torch.autograd.grad(y, x, y, retain_graph=True, create_graph=True)
    (gy,) = torch.autograd.grad(g, y, w, retain_graph=False, create_graph=True)
    gy.backward(w)
    show(name, g, gy, x.grad)


def hessian(name, op):
    """The Hessian by forward-over-reverse: the tangent of op's gradient (its jvp rule)."""
    x = torch.tensor([0.5, -1.0, 2.0], dtype=f64)
    w = torch.tensor([1.0, -2.0, 3.0], dtype=f64)
    show(name, torch.func.hessian(lambda x: (op(x, 0) * w).sum())(x))


gradient_of_gradient("softmax_gradient_of_gradient", torch.softmax)
hessian("softmax_hessian", torch.softmax)
gradient_of_gradient("log_softmax_gradient_of_gradient", torch.log_softmax)
hessian("log_softmax_hessian", torch.log_softmax)

# cumsum over dims 0 and 1, and its double backward through the gradient.
for dim in (0, 1):
    x = t([0.5, -1.0, 2.0, 0.25, 1.0, -0.5], (2, 3))
    y = torch.cumsum(x, dim)
    (g,) = torch.autograd.grad((y * W6.reshape(2, 3)).sum(), x)
    show("cumsum_dim%d" % dim, y, g)
v = torch.tensor([1.0, 2.0, 3.0], dtype=f64, requires_grad=True)
x = t([1.0, 2.0, 3.0])
(g,) = torch.autograd.grad(torch.cumsum(x, 0), x, grad_outputs=v, create_graph=True)
(gv,) = torch.autograd.grad((g * torch.tensor([1.0, 10.0, 100.0], dtype=f64)).sum(), v)
show("cumsum_double", g, gv)

# Errors (substance of PyTorch's messages).
for name, f in [
    ("softmax dim", lambda: torch.softmax(torch.zeros(2, 3), 2)),
    ("cumsum dim", lambda: torch.cumsum(torch.zeros(2, 3), -3)),
    ("maximum shapes", lambda: torch.maximum(torch.zeros(2, 3), torch.zeros(2))),
    ("where shapes", lambda: torch.where(torch.zeros(2, dtype=torch.bool), torch.zeros(3), torch.zeros(1))),
    ("masked_fill shapes", lambda: torch.zeros(2, 3).masked_fill(torch.zeros(2, dtype=torch.bool), 1.0)),
]:
    try:
        f()
        print(name, "no error")
    except Exception as e:
        print(name, "->", str(e).splitlines()[0])
