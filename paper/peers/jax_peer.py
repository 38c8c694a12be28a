"""JAX (CPU), the peer of seed 001's hessian step (protocol: common.py).

Task (time in seconds):
    hessian IMPL JIT ACTIVATION FINAL BATCH HIDDEN MIN_SECONDS
        a step's time, per step over steps run back to back for MIN_SECONDS (once at least);
        IMPL hessian: jax.vmap(jax.hessian(f)) per sample, rows summed (the y_xx of the nested
                      grads, from the full 16x16 per-sample Hessian);
             hvp:     jax.jvp(jax.grad(f), x, ones): H @ 1, the same y_xx, as PyTorch's nested
                      grads compute it;
        JIT 1: the whole step under jax.jit (compiled on the first call, which the caller's
               warm-up absorbs); 0: op by op;
        FINAL 1: also the gradient of y_xx.sum() w.r.t. the weights (the final backward).
The thread count is set before jax is imported (XLA's CPU client reads it at start-up); see
thread_flags().
"""

import os
import sys

from common import parse_args, seconds_per_call_over, serve, unavailable

args = parse_args(__doc__)


def thread_flags(threads):
    """XLA's CPU backend runs its Eigen and thunk work on one pool of intra-op threads; this
    caps it at the same count as ours."""
    flags = os.environ.get("XLA_FLAGS", "")
    return (flags + " --xla_cpu_multi_thread_eigen=%s intra_op_parallelism_threads=%d"
            % ("true" if threads > 1 else "false", threads)).strip()


os.environ["XLA_FLAGS"] = thread_flags(args.threads)
os.environ.setdefault("JAX_PLATFORMS", "cpu")
try:
    import jax
    import jax.numpy as jnp
    import numpy as np
except Exception as e:
    unavailable("jax not importable by %s: %s" % (sys.executable, e))


def describe():
    return "JAX %s, jaxlib %s (XLA CPU, Python %d.%d), %d intra-op threads" % (
        jax.__version__, getattr(jax.lib, "__version__", None) or jax.__version__,
        sys.version_info[0], sys.version_info[1], args.threads)


def make_params(hidden, seed=0):
    """Seed 001's MLP, PyTorch's default Linear initialization (uniform +-1/sqrt(fan_in))."""
    rng = np.random.default_rng(seed)
    sizes = [16] + [hidden] * 6 + [1]
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(fan_in)
        params.append((jnp.asarray(rng.uniform(-bound, bound, (fan_in, fan_out)), jnp.float32),
                       jnp.asarray(rng.uniform(-bound, bound, (fan_out,)), jnp.float32)))
    return params


def forward(params, x, act):
    for w, b in params[:-1]:
        x = act(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def y_xx_of(impl, act):
    """Returns y_xx(params, x) [batch, 16] for IMPL."""
    def f_sample(params, xi):
        return forward(params, xi[None, :], act)[0, 0]

    def f_batch(params, x):
        return forward(params, x, act).sum()

    if impl == "hessian":
        per_sample = jax.vmap(jax.hessian(f_sample, argnums=1), in_axes=(None, 0))
        return lambda params, x: per_sample(params, x).sum(-1)
    if impl == "hvp":
        return lambda params, x: jax.jvp(lambda xx: jax.grad(f_batch, argnums=1)(params, xx),
                                         (x,), (jnp.ones_like(x),))[1]
    raise ValueError("unknown hessian implementation %r" % impl)


_steps = {}


def step_function(impl, jit, activation, final_backward, batch, hidden):
    key = (impl, jit, activation, final_backward, batch, hidden)
    if key not in _steps:
        act = {"relu": jax.nn.relu, "tanh": jnp.tanh}[activation]
        y_xx = y_xx_of(impl, act)
        if final_backward:
            # The weights' gradient of y_xx.sum(), with y_xx itself (PyTorch's step keeps both).
            step = jax.value_and_grad(lambda params, x: y_xx(params, x).sum())
        else:
            step = y_xx
        params = make_params(hidden)
        x = jnp.asarray(np.random.default_rng(1).uniform(-1, 1, (batch, 16)), jnp.float32)
        _steps[key] = (jax.jit(step) if jit else step, params, x)
    return _steps[key]


def hessian(impl, jit, activation, final_backward, batch, hidden, min_seconds):
    step, params, x = step_function(impl, jit == "1", activation, final_backward == "1",
                                    int(batch), int(hidden))
    return seconds_per_call_over(lambda: jax.block_until_ready(step(params, x)),
                                 float(min_seconds))


serve(describe(), {"hessian": hessian})
