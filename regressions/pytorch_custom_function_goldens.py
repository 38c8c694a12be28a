# The PyTorch programs behind regressions/pytorch_custom_function_test.cc, each printing the values
# and error messages the test pins (float64). Run: python3 regressions/pytorch_custom_function_goldens.py
# (with torch 2.15 installed).
import warnings

import torch

from goldens_util import error, leaf, show, t  # noqa: F401
from torch.autograd import Function

torch.set_default_dtype(torch.float64)
warnings.simplefilter("ignore")


class Ident(Function):  # returns its input as is
    @staticmethod
    def forward(ctx, a):
        return a

    @staticmethod
    def backward(ctx, g):
        return g


class Head(Function):  # returns a view of its input made in forward: a[0:2]
    @staticmethod
    def forward(ctx, a):
        return a[0:2]

    @staticmethod
    def backward(ctx, g):
        return torch.cat([g, g.new_zeros(1)])


class Halves(Function):  # two views of its input made in forward: a[0:2], a[1:3]
    @staticmethod
    def forward(ctx, a):
        return a[0:2], a[1:3]

    @staticmethod
    def backward(ctx, g, h):
        return torch.cat([g, g.new_zeros(1)]) + torch.cat([h.new_zeros(1), h])


class PassFirst(Function):  # returns (a, b * 2), `a` marked non-differentiable
    @staticmethod
    def forward(ctx, a, b):
        ctx.mark_non_differentiable(a)
        return a, b * 2

    @staticmethod
    def backward(ctx, g, h):
        return None, h * 2


class Double_(Function):  # a.mul_(2), marked dirty
    @staticmethod
    def forward(ctx, a):
        a.mul_(2)
        ctx.mark_dirty(a)
        return a

    @staticmethod
    def backward(ctx, g):
        return g * 2


class MulBy_(Function):  # a.mul_(b), marked dirty; saves b and a copy of a before the write
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a.clone(), b)
        a.mul_(b)
        ctx.mark_dirty(a)
        return a

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a


class DoubleAndTriple_(Function):  # (a.mul_(2), a * 3), `a` marked dirty
    @staticmethod
    def forward(ctx, a):
        a.mul_(2)
        ctx.mark_dirty(a)
        return a, a * 3

    @staticmethod
    def backward(ctx, g, h):
        return g * 2 + h * 6


class DoubleNotReturned_(Function):  # a.mul_(2), marked dirty, returns a * 1
    @staticmethod
    def forward(ctx, a):
        a.mul_(2)
        ctx.mark_dirty(a)
        return a * 1

    @staticmethod
    def backward(ctx, g):
        return g * 2


class MarkOnly_(Function):  # marks `a` dirty without writing it
    @staticmethod
    def forward(ctx, a):
        ctx.mark_dirty(a)
        return a

    @staticmethod
    def backward(ctx, g):
        return g


class SaveDirty_(Function):  # a.mul_(2), marked dirty and saved: backward reads the output
    @staticmethod
    def forward(ctx, a):
        a.mul_(2)
        ctx.mark_dirty(a)
        ctx.save_for_backward(a)
        return a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * a


# --- An input returned as is is a view of it (issue 44, point 6) -----------------------------
x, z = leaf([1.0, 2.0]), leaf([3.0, 4.0])
a = x * 2.0
o = Ident.apply(a)
show("ident", o._is_view(), o._base is a, type(o.grad_fn).__name__, o.requires_grad)
s = (o * 3).sum()  # a use of o before the write
a.mul_(z)
show("after write", o.requires_grad)
error("grad through o", lambda: torch.autograd.grad(o.sum(), (x, z)), "custom Function")
error("o.grad_fn", lambda: o.grad_fn, "custom Function")
show("grad through a", *torch.autograd.grad(a.sum(), (x, z), retain_graph=True))
show("grad through the earlier use", *torch.autograd.grad(s, (x,)))

x, z = leaf([1.0, 2.0]), leaf([3.0, 4.0])
a = x * 2.0
o = Ident.apply(a)
error("mul_(o, z)", lambda: o.mul_(z), "custom Function")
error("mul_(o, const)", lambda: o.mul_(t([5.0, 5.0])), "custom Function")
show("a unchanged", a, a._version)
with torch.no_grad():
    o.mul_(t([5.0, 5.0]))
show("no_grad write", a)
error("o.grad_fn after no_grad write", lambda: o.grad_fn, "custom Function")

x, z = t([1.0, 2.0]), leaf([3.0, 4.0])
a = x * 2.0
o = Ident.apply(a)
show("input not requiring grad", o._is_view(), o.requires_grad, o.grad_fn)
error("mul_(o, z), no history", lambda: o.mul_(z), "custom Function")
o.mul_(t([5.0, 5.0]))
show("written", a)

x = leaf([1.0, 2.0])
o = Ident.apply(x)
show("leaf input", o._is_view(), o._base is x, o.is_leaf, *torch.autograd.grad(o.sum(), (x,)))
error("mul_(o) of a leaf", lambda: o.mul_(t([5.0, 5.0])), "custom Function")

x = leaf([1.0, 2.0])
a = x * 1
with torch.no_grad():
    o = Ident.apply(a)
show("no_grad ident", o._is_view(), o.requires_grad, o.grad_fn, o is a)

a = t([1.0, 2.0])
o = Ident.apply(a)
o.mul_(2)
show("nothing requires grad", o._is_view(), a)

# Views made inside forward.
x = leaf([1.0, 2.0, 3.0])
a = x * 1
o = Head.apply(a)
show("head", o._is_view(), o._base is a, type(o.grad_fn).__name__)
error("mul_(o) head", lambda: o.mul_(2), "custom Function")
a.mul_(2)
error("head after base write", lambda: o.grad_fn, "custom Function")

x = leaf([1.0, 2.0, 3.0])
a = x * 1
o, p = Halves.apply(a)
error("mul_(o) halves", lambda: o.mul_(2), "custom Function")
a.mul_(2)
error("halves after base write", lambda: o.grad_fn, "custom Function")

# Views of an output.
x = leaf([1.0, 2.0])
o = Ident.apply(x * 1)
error("mul_(o[0:1])", lambda: o[0:1].mul_(2), "custom Function")
with torch.no_grad():
    w = o[0:1]
error("mul_(no_grad view of o)", lambda: w.mul_(2), "custom Function")

# A non-differentiable input returned as is.
x, y = t([1.0, 2.0]), leaf([3.0, 4.0])
o, p = PassFirst.apply(x, y)
show("non-differentiable input", o._is_view(), o.requires_grad, o.grad_fn)
error("mul_(o, y) non-differentiable", lambda: o.mul_(y), "custom Function")

# --- ctx.mark_dirty (issue 44, point 7) ------------------------------------------------------
x = leaf([1.0, 2.0])
a = x * 3
o = Double_.apply(a)
show("dirty", o is a, type(a.grad_fn).__name__, a._version, a, *torch.autograd.grad(a.sum(), (x,)))

x = leaf([1.0, 2.0])
error("dirty leaf", lambda: Double_.apply(x), "custom Function")
show("the leaf after", x, x.is_leaf)  # forward ran before the check

x = t([1.0, 2.0])
o = Double_.apply(x)
show("dirty, nothing requires grad", o is x, x, o.requires_grad, o.grad_fn, x._version)

x, y = t([1.0, 2.0]), leaf([3.0, 4.0])
o = MulBy_.apply(x, y)
show("dirty constant", o is x, x, o.requires_grad, type(o.grad_fn).__name__, x.is_leaf, x._version,
     *torch.autograd.grad(o.sum(), (y,)))

error("dirty view of a leaf", lambda: Double_.apply(leaf([1.0, 2.0, 3.0, 4.0])[1:3]), "custom Function")

x = leaf([1.0, 2.0, 3.0, 4.0])
a = x * 1
v = a[1:3]
w = a[2:]  # a sibling made before the write
o = Double_.apply(v)
show("dirty view", o is v, a, type(v.grad_fn).__name__, type(a.grad_fn).__name__)
show("through the base", *torch.autograd.grad((a * t([1.0, 2.0, 3.0, 4.0])).sum(), (x,), retain_graph=True))
show("through the view", *torch.autograd.grad((v * t([5.0, 7.0])).sum(), (x,), retain_graph=True))
show("through a sibling", *torch.autograd.grad((w * t([5.0, 7.0])).sum(), (x,)))

x = leaf([1.0, 2.0, 3.0, 4.0])
a = x * 1
v = a.view(2, 2)[1]
Double_.apply(v)
show("dirty view of a view", a, *torch.autograd.grad((a * a).sum(), (x,)))

error("dirty view, two outputs", lambda: DoubleAndTriple_.apply((leaf([1.0, 2.0, 3.0, 4.0]) * 1)[1:3]), "custom Function")
x = leaf([1.0, 2.0, 3.0, 4.0])
a = x * 1
o, p = DoubleAndTriple_.apply(a)
show("dirty, two outputs", o is a, *torch.autograd.grad(o.sum() + p.sum(), (x,)))

error("dirty, not returned", lambda: DoubleNotReturned_.apply(leaf([1.0, 2.0]) * 3), "custom Function")

x = leaf([1.0, 2.0])
a = x * 3
o = MarkOnly_.apply(a)
show("marked, not written", o is a, a._version, *torch.autograd.grad(o.sum(), (x,)))

x = leaf([1.0, 2.0])
a = x * 3
s = a * a  # saves a
Double_.apply(a)
error("saved before the write", lambda: torch.autograd.grad(s.sum(), (x,)), "custom Function")

x = leaf([1.0, 2.0])
with torch.no_grad():
    o = Double_.apply(x)
show("dirty leaf under no_grad", o is x, o._is_view(), x, x.grad_fn, x.requires_grad, x._version)

x = leaf([1.0, 2.0, 3.0, 4.0])
a = x * 1
with torch.no_grad():
    v = a[1:3]
error("dirty no_grad view", lambda: Double_.apply(v), "custom Function")

x = leaf([1.0, 2.0, 3.0, 4.0])
v, _ = (x * 1).split(2)
error("dirty split view", lambda: Double_.apply(v), "custom Function")

x = leaf([1.0, 2.0])
o = Ident.apply(x * 1)
error("dirty custom output", lambda: Double_.apply(o), "custom Function")

b, y = t([1.0, 2.0, 3.0]), leaf([3.0, 4.0])
with torch.no_grad():
    v = b[0:2]
error("dirty no_grad view of a constant", lambda: MulBy_.apply(v, y), "custom Function")

x = leaf([1.0, 2.0])
a = x * 1
o = SaveDirty_.apply(a)
show("saved dirty output", *torch.autograd.grad(o.sum(), (x,)))
