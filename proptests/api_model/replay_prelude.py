# Helpers that make the API state machine's printed command lists run under PyTorch:
#   python3 -i proptests/api_model/replay_prelude.py   then paste the failing commands, or
#   python3 proptests/api_model/replay_prelude.py failing_commands.txt
# Then inspect tensors (t3, t3.grad, t3.requires_grad, t3.is_leaf, t3._version).
# The engine's deliberate differences from PyTorch are listed in README.md next to this file.
import sys

import torch
import torch.nn.functional as F
import torch.autograd.forward_ad as fwAD

torch.set_default_dtype(torch.float64)


def tan(shape, values):
    # a fresh tangent for fwAD.make_dual
    return torch.tensor(values, dtype=torch.float64).reshape(shape).clone()


def leaf(shape, values, requires_grad):
    # clone(): reshape returns a view, and a leaf must not be a view of another tensor
    t = torch.tensor(values, dtype=torch.float64).reshape(shape).clone()
    return t.requires_grad_(requires_grad)


class _MulScalar(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, s):
        ctx.s = s
        return x * s

    @staticmethod
    def backward(ctx, g):
        return g * ctx.s, None

    @staticmethod
    def jvp(ctx, t, _):
        # forward mode (fwAD): the engine's x * s carries a tangent
        return t * ctx.s


def mul_scalar(x, s):
    """x * s as the engine records it: its backward keeps no tensor. PyTorch's x * s keeps s as
    a saved 0-d tensor, so a second backward through a freed graph raises there (README.md)."""
    return _MulScalar.apply(x, s)


class CMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p, q):
        ctx.save_for_backward(p, q)
        return p * q

    @staticmethod
    def backward(ctx, g):  # as the engine's: only what needs_input_grad asks for
        p, q = ctx.saved_tensors
        need = ctx.needs_input_grad
        return g * q if need[0] else None, g * p if need[1] else None


class Two(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p, q):
        ctx.save_for_backward(p, q)
        return p * q, p + q

    @staticmethod
    def backward(ctx, gu, gw):
        p, q = ctx.saved_tensors
        need = ctx.needs_input_grad
        return gu * q + gw if need[0] else None, gu * p + gw if need[1] else None


# Hooks (the API model's Note [Model hooks] and Note [Model node hooks]): each logs what it is
# handed, as (id, [tensor values or None, ...]), and returns it times f (f None: keeps it).
hook_log = []


def _values(ts):
    return [None if t is None else t.detach().flatten().tolist() for t in ts]


def _scaled(ts, f):
    return None if f is None else tuple(None if t is None else mul_scalar(t, f) for t in ts)


def hook(i, f):
    """A tensor hook: handed the gradient."""
    def fn(g):
        hook_log.append((i, _values([g])))
        return None if g is None or f is None else mul_scalar(g, f)
    return fn


def prehook(i, f):
    """A node pre-hook: handed grad_outputs."""
    def fn(grad_outputs):
        hook_log.append((i, _values(grad_outputs)))
        return _scaled(grad_outputs, f)
    return fn


def posthook(i, f):
    """A node post-hook: handed grad_inputs and grad_outputs; returns grad_inputs times f."""
    def fn(grad_inputs, grad_outputs):
        hook_log.append((i, _values(grad_inputs) + _values(grad_outputs)))
        return _scaled(grad_inputs, f)
    return fn


def acchook(i):
    """A post-accumulate-grad hook: handed the leaf; logs its .grad."""
    def fn(leaf):
        hook_log.append((i, _values([leaf.grad])))
    return fn


# Saved-tensor hooks (the API model's Note [Model saved-tensor hooks]): scope i's pack counts
# its calls in pack_calls[i] and keeps its input ('keep') or a clone ('clone'); unpack gives it
# back, times `scale` unless that is None. Entered and exited explicitly (s0.__enter__(),
# s0.__exit__(None, None, None)); open_scopes lists those still open, innermost last.
pack_calls = {}
open_scopes = []


class _SavedHooks(torch.autograd.graph.saved_tensors_hooks):
    def __enter__(self):
        open_scopes.append(self)
        return super().__enter__()

    def __exit__(self, *exc):
        open_scopes.remove(self)
        return super().__exit__(*exc)


def saved_hooks(i, pack, scale):
    pack_calls[i] = 0

    def pack_hook(t):
        pack_calls[i] += 1
        return t.clone() if pack == 'clone' else t

    def unpack_hook(p):
        return p if scale is None else p * scale

    return _SavedHooks(pack_hook, unpack_hook)


def show(names):
    """Prints what the state machine compares for each named tensor."""
    for name in names:
        t = globals().get(name)
        if t is None:
            continue
        g = t.grad
        print(f"{name}: {t.detach().flatten().tolist()} requires_grad={t.requires_grad} "
              f"is_leaf={t.is_leaf} version={t._version} "
              f"grad={None if g is None else g.detach().flatten().tolist()}")


if __name__ == "__main__" and len(sys.argv) > 1:
    lines = [l for l in open(sys.argv[1]).read().splitlines() if l.strip()]
    for line in lines:
        print(">>>", line)
        try:
            exec(line, globals())
        except Exception as e:  # noqa: BLE001  the state machine expects some calls to raise
            print("raised:", type(e).__name__, str(e).splitlines()[0])
    show(sorted({w for l in lines for w in l.replace("(", " ").replace(",", " ").split()
                 if w.startswith("t") and w[1:].isdigit()}, key=lambda s: int(s[1:])))
