# The PyTorch programs behind regressions/pytorch_split_node_test.cc: split, chunk and unbind
# record one node for all their outputs (SplitBackward0, SplitWithSizesBackward0,
# UnbindBackward0). Each prints what the test pins (float64). Run:
# python3 regressions/pytorch_split_node_goldens.py (with torch 2.15 installed).
import torch

from goldens_util import error, leaf, show, t  # noqa: F401

torch.set_default_dtype(torch.float64)


def hooked(out, log, name):
    out.register_hook(lambda g: log.append((name, None if g is None else g.tolist())))


# --- One node, an output per view -----------------------------------------------------------
x = leaf([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
a = x * 1
for name, outs in [("split", a.split(2)), ("chunk", a.chunk(3)), ("unbind", a.unbind()),
                   ("chunk of an empty dim", (torch.zeros(0, 3).requires_grad_() * 1).chunk(2))]:
    show(name, [o.grad_fn.name() for o in outs], [o.output_nr for o in outs],
         all(o.grad_fn is outs[0].grad_fn for o in outs), [o._is_view() for o in outs])
o = a.split(2)
show("next edge", o[0].grad_fn.next_functions[0][0] is a.grad_fn)

# --- A sibling's hook is handed None ------------------------------------------------------
x = leaf([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
o = (x * 1).split(2)
log = []
hooked(o[0], log, "h0")
hooked(o[1], log, "h1")
(o[0] * 3).sum().backward()
show("backward through o0", log, x.grad)

x = leaf([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
o = (x * 1).unbind()
log = []
hooked(o[0], log, "h0")
hooked(o[4], log, "h4")
show("grad through o4", torch.autograd.grad(o[4] * 2, x), log)

# A pre-hook on the node sees every output's gradient.
x = leaf([1.0, 2.0, 3.0, 4.0])
o = (x * 1).chunk(2)
seen = []
o[0].grad_fn.register_prehook(lambda gs: seen.append([None if g is None else g.tolist() for g in gs]))
show("prehook", torch.autograd.grad(o[1].sum(), x), seen)

# --- retain_grad on siblings --------------------------------------------------------------
x = leaf([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
o = (x * 1).split(2)
o[2].retain_grad()
(o[0] * 3).sum().backward(retain_graph=True)
show("retained sibling after o0", o[2].grad)
(o[2] * 5).sum().backward()
show("retained sibling after o2", o[2].grad, x.grad)

# --- create_graph through the node --------------------------------------------------------
x = leaf([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
o = (x * x).unbind()
g, = torch.autograd.grad(o[1] * o[2], x, create_graph=True)
show("first", g, g.requires_grad)
show("second", *torch.autograd.grad(g.sum(), x))

# --- backward(inputs=[o1]) ----------------------------------------------------------------
x = leaf([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
o = (x * 2).split(2)
log = []
hooked(o[0], log, "h0")
hooked(o[1], log, "h1")
(o[1] * 3).sum().backward(inputs=[o[1]])
show("backward inputs o1", o[1].grad, log, x.grad)

# --- Writes into the base or a sibling ----------------------------------------------------
x = leaf([1.0, 2.0, 3.0, 4.0])
a = x * 1
o = a.split(2)
error("recorded write into o1", lambda: o[1].mul_(2), "Output 1 of Split")
a.mul_(2)
error("o1.grad_fn after a base write", lambda: o[1].grad_fn, "Output 1 of Split")

x = leaf([1.0, 2.0, 3.0, 4.0])
o = (x * 1).unbind()
with torch.no_grad():
    o[0].mul_(2)
error("o3.grad_fn after a sibling's no_grad write", lambda: o[3].grad_fn,
      "Output 3 of Unbind")
show("values", o[0], o[3])

# --- Forward mode: each output's tangent is the narrow or select of the input's ----------------
import torch.autograd.forward_ad as fwAD  # noqa: E402

with fwAD.dual_level():
    tangent = t([0.5, -1.0, 2.0, 4.0])
    d = fwAD.make_dual(t([1.0, 2.0, 3.0, 4.0]), tangent)
    o = d.split(2)
    show("split tangents", [fwAD.unpack_dual(p).tangent.tolist() for p in o])
    show("unbind tangents", [fwAD.unpack_dual(p).tangent.tolist() for p in d.unbind()])
    o[1].mul_(3.0)
    show("after o1.mul_(3)", fwAD.unpack_dual(d).tangent, tangent)
    x = leaf([1.0, 2.0, 3.0, 4.0])
    o = fwAD.make_dual(x, t([1.0, 1.0, 1.0, 1.0])).chunk(2)
    show("chunk of a dual that requires grad", o[0].grad_fn.name(),
         [fwAD.unpack_dual(p).tangent.tolist() for p in o])
