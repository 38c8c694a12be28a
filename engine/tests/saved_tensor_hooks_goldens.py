# PyTorch 2.15 goldens for engine/tests/saved_tensor_hooks_test.cc (Note [Saved-tensor hooks],
# engine/saved_tensor_hooks.h): run with the peers' venv
#   ~/.cache/autograd-peers/venv/bin/python engine/tests/saved_tensor_hooks_goldens.py
# and compare each printed line with the test case of the same name. float64 throughout; a tensor
# prints as its values ("[6, 16]"); the values packed by one op print sorted (the engines may save
# an op's values in another order).
import torch
from torch.autograd.graph import saved_tensors_hooks, save_on_cpu

f64 = torch.float64


def leaf(*v):
    return torch.tensor(v, dtype=f64, requires_grad=True)


def fmt(x):
    return "[" + ", ".join("%g" % e for e in x.detach().reshape(-1).tolist()) + "]"


def case(name, *parts):
    print(name + ": " + "; ".join(str(p) for p in parts))


# What pack receives: the values the ops save (the engine hands it aliases of their data).
x = leaf(1, 2, 3)
packed = []
with saved_tensors_hooks(lambda t: packed.append(t) or t, lambda p: p):
    y = x * x
    z = y.exp()
(g,) = torch.autograd.grad(z.sum(), x)
case("PackSeesWhatTheOpsSave", len(packed), ", ".join(sorted(fmt(t) for t in packed)), fmt(g))

# The guards decide what is saved before pack runs: x * w with w not requiring grad keeps w alone.
x, w = leaf(1, 2), torch.tensor([3.0, 4.0], dtype=f64)
packed = []
with saved_tensors_hooks(lambda t: packed.append(t) or t, lambda p: p):
    y = x * w
case("GuardedSavesAreNotPacked", len(packed), fmt(packed[0]))

# unpack runs at each unpack: twice for two backward calls through a retained graph.
x = leaf(0.5, 1)
unpacks = []
with saved_tensors_hooks(lambda t: t, lambda p: unpacks.append(1) or p):
    y = (x * 2).sin()
y.sum().backward(retain_graph=True)
y.sum().backward()
case("UnpackRunsAtEachUnpack", len(unpacks), fmt(x.grad))

# No version check through hooks: the packed copy is used, the later write is not seen.
x = leaf(1, 2)
with saved_tensors_hooks(lambda t: t.clone(), lambda p: p):
    w = x * 2
    q = w * w
with torch.no_grad():
    w.add_(1)
q.sum().backward()
case("PackedValuesHaveNoVersionCheck", fmt(x.grad))

# A pack that writes into its input raises; the graph is still usable.
x = leaf(1, 2)


def writes(t):
    with torch.no_grad():
        t.add_(0)
    return t


try:
    with saved_tensors_hooks(writes, lambda p: p):
        y = x * x
    case("PackWritingItsInputRaises", "no error")
except RuntimeError as e:
    y = x * x
    (g,) = torch.autograd.grad(y.sum(), x)
    case("PackWritingItsInputRaises", str(e).split(".")[0], fmt(g))

# A leaf packed detached gets its history back: create_graph through it.
x = leaf(1, 2)
with saved_tensors_hooks(lambda t: t.detach(), lambda p: p):
    q = x * x * x
(g,) = torch.autograd.grad(q.sum(), x, create_graph=True)
g.sum().backward()
case("UnpackedLeafKeepsItsHistory", g.requires_grad, fmt(g), fmt(x.grad))

# An output packed detached gets its node back: create_graph through exp's saved result.
x = leaf(0.5, 1)
with saved_tensors_hooks(lambda t: t.detach(), lambda p: p):
    z = x.exp()
(g,) = torch.autograd.grad(z.sum(), x, create_graph=True)
(gg,) = torch.autograd.grad(g.sum(), x)
case("UnpackedOutputKeepsItsNode", fmt(g), fmt(gg))

# The innermost scope applies; closing it brings back the outer one.
x = leaf(1, 2)
log = []
with saved_tensors_hooks(lambda t: log.append("outer") or t, lambda p: p):
    with saved_tensors_hooks(lambda t: log.append("inner") or t, lambda p: p):
        a = x.exp()
    b = x.sin()
c = x.cos()
case("TheInnermostScopeApplies", ", ".join(log))

# A released value frees its packed object; a second backward raises.
x = leaf(1, 2)
with saved_tensors_hooks(lambda t: t, lambda p: p):
    y = x.exp()
y.sum().backward()
try:
    y.sum().backward()
    case("ReleasedPackedValuesAreFreed", "no error")
except RuntimeError as e:
    case("ReleasedPackedValuesAreFreed", str(e).split(" (")[0])

# A custom Function's save_for_backward is packed too.
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t * t * t

    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return 3 * t * t * g


x = leaf(1, 2)
packed = []
with saved_tensors_hooks(lambda t: packed.append(t) or t, lambda p: p):
    y = Cube.apply(x)
y.sum().backward()
case("CustomFunctionSavesArePacked", len(packed), fmt(x.grad))

# save_on_cpu keeps a CPU tensor as it is (tensor.cpu() is the tensor itself), with no version
# check: a write into the saved input after the forward is seen by its backward.
x = leaf(1, 2)
with save_on_cpu():
    h = x * 1.0
    y = h * h
with torch.no_grad():
    h.mul_(10)
y.sum().backward()
case("SaveOnCpuKeepsACpuTensorAsItIs", fmt(x.grad))
