"""JAX as a foreign engine for the functional subset: leaves, ops and transform statements
(Note [Engine adapters], proptests/conformance/foreign_engine.h).

A script is torch_script.cc's own: torch_runtime.py runs and records it as for PyTorch, with its
`transform` replaced by this module's, which runs the statement's body on JAX arrays (the body's
code rebound to `torch` and `F` namespaces over jax.numpy, below) and returns its results as
float64 torch tensors. The transforms, jit off and on:
    vjp, eager_vjp   jax.vjp                  jvp        jax.jvp
    compiled_vjp     jax.jit of jax.vjp       dual_jvp   jax.jit of jax.jvp
An op outside the namespaces (sum_to_size, scatter_add, ...) raises: the statement "raises".
Usage: python3 jax_runtime.py [--serve | SCRIPT...], as torch_runtime.py.
"""

import sys
import types

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import torch  # noqa: E402 - after JAX's configuration
import torch_runtime  # noqa: E402


class _Cast:
    """A comparison's mask; .to(dtype) makes it 0 and 1 (Note [Masks are 0 and 1])."""

    def __init__(self, mask):
        self.mask = mask

    def to(self, dtype):
        return self.mask.astype(jnp.float64)


class _Values:
    def __init__(self, values):
        self.values = values


def _reduce(fn):
    def reduce(a, dim=None, keepdim=False):
        return fn(a, axis=dim, keepdims=keepdim)
    return reduce


def _nll_loss(a, t):
    return -jnp.mean(jnp.take_along_axis(a, t.reshape(-1, 1), axis=1))


_torch = types.SimpleNamespace(
    pow=jnp.power, sum=_reduce(jnp.sum), mean=_reduce(jnp.mean), broadcast_to=jnp.broadcast_to,
    reshape=jnp.reshape, transpose=jnp.swapaxes, mm=jnp.matmul, bmm=jnp.matmul,
    matmul=jnp.matmul, addmm=lambda c, a, b: c + a @ b,
    log_softmax=lambda a, d: jax.nn.log_softmax(a, axis=d),
    softmax=lambda a, d: jax.nn.softmax(a, axis=d), cumsum=lambda a, d: jnp.cumsum(a, axis=d),
    cat=lambda xs, d: jnp.concatenate(xs, axis=d), stack=lambda xs, d: jnp.stack(xs, axis=d),
    clone=lambda a: a, maximum=jnp.maximum, minimum=jnp.minimum,
    gt=lambda a, b: _Cast(jnp.greater(a, b)), where=jnp.where,
    masked_fill=lambda a, m, s: jnp.where(m, s, a), clamp=jnp.clip,
    clamp_min=jnp.maximum, clamp_max=jnp.minimum,
    max=lambda a, d, keepdim=False: _Values(jnp.max(a, axis=d, keepdims=keepdim)),
    min=lambda a, d, keepdim=False: _Values(jnp.min(a, axis=d, keepdims=keepdim)),
    index_select=lambda a, d, i: jnp.take(a, i, axis=d),
    gather=lambda a, d, i: jnp.take_along_axis(a, i, axis=d),
    abs=jnp.abs, cos=jnp.cos, exp=jnp.exp, log=jnp.log, neg=jnp.negative, relu=jax.nn.relu,
    sigmoid=jax.nn.sigmoid, sign=jnp.sign, sin=jnp.sin, sqrt=jnp.sqrt, tanh=jnp.tanh,
)
_F = types.SimpleNamespace(
    linear=lambda x, w, b=None: x @ w.T + (0 if b is None else b),
    nll_loss=_nll_loss, cross_entropy=lambda a, t: _nll_loss(jax.nn.log_softmax(a, axis=1), t),
)
_body_globals = {
    "torch": _torch, "F": _F, "add_scalar": lambda a, s: a + s, "mul_scalar": lambda a, s: a * s,
    "targets": lambda values: jnp.asarray(values, dtype=jnp.int64),
    "dropout": lambda a, p, seed: a if p == 0 else None,
    "dropout2d": lambda a, p, seed: a if p == 0 else None,
}


def _jax(t):
    return jnp.asarray(t.detach().numpy())


def _torch_tensor(x):
    return torch.from_numpy(np.array(x, dtype=np.float64))


def transform(kind, f, args, n):
    """torch_runtime.transform's statement, run by JAX (see the module's docstring)."""
    g = types.FunctionType(f.__code__, _body_globals)
    args = [_jax(a) for a in args]
    primals = tuple(args[:n])

    def vjp(primals, cotangent):
        out, pullback = jax.vjp(g, *primals)
        return [out] + list(pullback(cotangent))

    def jvp(primals, tangents):
        return list(jax.jvp(g, primals, tangents))

    if kind in ("vjp", "eager_vjp"):
        out = vjp(primals, args[n])
    elif kind == "compiled_vjp":
        out = jax.jit(vjp)(primals, args[n])
    elif kind == "jvp":
        out = jvp(primals, tuple(args[n:2 * n]))
    elif kind == "dual_jvp":
        out = jax.jit(jvp)(primals, tuple(args[n:2 * n]))
    else:
        raise ValueError("jax_runtime: no transform " + kind)
    return [_torch_tensor(x) for x in out]


torch_runtime.transform = transform

if __name__ == "__main__":
    torch_runtime.main(sys.argv)
