"""PyTorch from Python, the peer of every workload of paper/reproduce (protocol: common.py).

Tasks (times in seconds):
    tiny_graph ITERS                       grad(a*b, [a, b], ones) on 2x2 float32, per call
    scalar_chain LENGTH ITERS              grad(y.sum(), [x]), y = x * 1.0001 LENGTH times, per call
    hessian IMPL ACTIVATION FINAL BATCH HIDDEN MIN_SECONDS [THREADS]
                                           a hessian step (seed 001's MLP), per step over steps
                                           run back to back for MIN_SECONDS (once at least), IMPL:
                                             autograd     y_x = grad(y, x, create_graph),
                                                          y_xx = grad(y_x, x, create_graph)
                                             func_hessian vmap(torch.func.hessian) per sample
                                                          (= vmap(jacfwd(jacrev))), rows summed
                                             func_hvp     torch.func.jvp(grad(f), x, ones): H @ 1,
                                                          the same y_xx as autograd
                                           FINAL=1 adds y_xx.sum().backward() into the weights;
                                           THREADS > 0 runs this step at that many threads
    unrolled_loop STEPS BLOCK              differentiable SGD; seconds per BLOCK steps, a list
    jit_pass IR_FILE                       torch._C._jit_pass_create_autodiff_subgraphs(g, 2) on
                                           the TorchScript IR in IR_FILE (parse excluded)
    saved_bytes                            bytes autograd saves for ((x + 2) * m).sum()
    rnn BATCH STEPS WIDTH MIN_SECONDS [THREADS]
                                           issue 44's RNN over time slices (paper/workloads/
                                           view_workloads.h): h = tanh(x[:, t] @ W + h @ U),
                                           out[:, t] = h, then grad(out.sum(), [x, W, U]); per step
                                           over steps run back to back for MIN_SECONDS
    rnn_saved_bytes BATCH STEPS WIDTH      bytes its forward saves for backward, and the distinct
                                           bytes among them (see rnn_saved_bytes)
    rnn_checksum BATCH STEPS WIDTH         the gradient checksum of one step (gradient_checksum)
    join KIND SLICES WIDTH MIN_SECONDS [THREADS]
                                           cat, stack, split_cat or unbind_stack of SLICES slices of
                                           WIDTH, then grad(y, inputs, G); per step as rnn's
    join_checksum KIND SLICES WIDTH        the gradient checksum of one join step
    checkpoint_mlp LAYERS BATCH WIDTH P CHECKPOINTED MIN_SECONDS [THREADS]
                                           issue 45's residual MLP (paper/workloads/
                                           hook_workloads.h): forward and grad((h * h).sum(), Ws),
                                           CHECKPOINTED=1 runs each block under
                                           torch.utils.checkpoint.checkpoint(use_reentrant=False);
                                           per step as rnn's
    hooked_chain LENGTH HOOKED MIN_SECONDS [THREADS]
                                           scalar_chain's grad with an identity hook (a Python
                                           lambda returning None) on every intermediate if HOOKED=1
    pack_calls WORKLOAD [ARG...]           [calls, bytes] that one forward hands to
                                           saved_tensors_hooks' pack: dropout (seed 003's
                                           ((x + 2) * m).sum()), residual_mlp LAYERS BATCH WIDTH P,
                                           hessian_mlp BATCH HIDDEN (seed 001's ReLU MLP)
    mlp_jvp ACTIVATION BATCH HIDDEN DUAL MIN_SECONDS [THREADS]
                                           issue 46: seed 001's MLP forward of x (not requiring
                                           grad; the weights do, as a module's); DUAL=1 makes x
                                           dual (tangent ones) in torch.autograd.forward_ad's
                                           dual_level and unpacks the output's tangent; per step
                                           as rnn's
    jacobian IMPL WIDTH MIN_SECONDS [THREADS]
                                           issue 46: torch.func.IMPL (jacfwd or jacrev, both by
                                           vmap) of tanh(W2 tanh(W1 x)), x of WIDTH float32
                                           elements, W1 and W2 [WIDTH, WIDTH]; per step as rnn's
"""

import os
import re
import sys
import time

from common import parse_args, seconds_per_call, seconds_per_call_over, serve, unavailable

args = parse_args(__doc__)
try:
    import torch
except Exception as e:  # ImportError, or a broken install
    unavailable("torch not importable by %s: %s" % (sys.executable, e))

torch.set_num_threads(args.threads)


def describe():
    """'PyTorch 2.15.0 (Python 3.11), MKL 2024.2, 2 intra-op threads (OpenMP)', from torch's
    own build configuration (not from whatever BLAS numpy loaded)."""
    config = torch.__config__.show()
    blas_info = re.search(r"BLAS_INFO=(\w+)", config)
    blas = {"mkl": "MKL", "open": "OpenBLAS", "flexi": "FlexiBLAS", "blis": "BLIS",
            "eigen": "Eigen", "accelerate": "Accelerate"}.get(
        blas_info.group(1) if blas_info else "", blas_info.group(1) if blas_info else "no BLAS")
    mkl = re.search(r"Math Kernel Library Version ([\d.]+)", config)
    if blas == "MKL" and mkl:
        blas += " " + mkl.group(1)
    backend = re.search(r"ATen parallel backend: (\w+)", torch.__config__.parallel_info())
    source = "Debian python3-torch" if torch.__file__.startswith("/usr/lib/python3/") else "PyPI wheel"
    # How idle OpenMP threads wait decides how PyTorch fares on a loaded machine: spinning workers
    # take the cores its own main thread needs. Named when the environment sets it.
    wait = os.environ.get("OMP_WAIT_POLICY")
    return "PyTorch %s (%s, Python %d.%d), %s, %d intra-op threads (%s%s)" % (
        torch.__version__.split("+")[0], source, sys.version_info[0], sys.version_info[1], blas,
        torch.get_num_threads(), backend.group(1) if backend else "unknown backend",
        ", OMP_WAIT_POLICY=" + wait if wait else "")


def tiny_graph(iters):
    a = torch.rand((2, 2), requires_grad=True)
    b = torch.rand((2, 2), requires_grad=True)
    gradient = torch.ones(2, 2)
    return seconds_per_call(lambda: torch.autograd.grad(a * b, [a, b], gradient), int(iters))


def chain_grad(x, length, hooked):
    """grad(y.sum(), [x]), y = x * 1.0001 `length` times; with an identity hook on every y."""
    y = x
    for _ in range(length):
        y = y * 1.0001
        if hooked:
            y.register_hook(lambda g: None)
    return torch.autograd.grad(y.sum(), [x])


def scalar_chain(length, iters):
    x = torch.rand(4, requires_grad=True)
    return seconds_per_call(lambda: chain_grad(x, int(length), False), int(iters))


_models = {}


def mlp(activation, batch, hidden):
    """Seed 001's MLP: 16 -> 6 x (Linear(hidden) + activation) -> Linear(1), and its input."""
    key = (activation, batch, hidden)
    if key not in _models:
        torch.manual_seed(0)
        act = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[activation]
        layers = [torch.nn.Linear(16, hidden), act()]
        for _ in range(5):
            layers += [torch.nn.Linear(hidden, hidden), act()]
        layers += [torch.nn.Linear(hidden, 1)]
        x = (torch.rand(batch, 16) * 2 - 1).requires_grad_()
        _models[key] = (torch.nn.Sequential(*layers), x)
    return _models[key]


def hessian_autograd(model, x):
    y = model(x)
    y_x = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)[0]
    return torch.autograd.grad(y_x, x, torch.ones_like(y_x), create_graph=True)[0]


def hessian_func(model, x):
    per_sample = torch.func.vmap(torch.func.hessian(lambda xi: model(xi).squeeze(-1)))(x)
    return per_sample.sum(-1)  # [batch, 16, 16] -> the row sums y_xx of the nested grads


def hessian_hvp(model, x):
    y_x = torch.func.grad(lambda xx: model(xx).sum())
    return torch.func.jvp(y_x, (x,), (torch.ones_like(x),))[1]


HESSIANS = {"autograd": hessian_autograd, "func_hessian": hessian_func, "func_hvp": hessian_hvp}


def hessian(impl, activation, final_backward, batch, hidden, min_seconds, threads="0"):
    model, x = mlp(activation, int(batch), int(hidden))
    compute = HESSIANS[impl]
    process_threads = torch.get_num_threads()
    if int(threads) > 0:  # this step only, at that many intra-op threads
        torch.set_num_threads(int(threads))

    def step():
        y_xx = compute(model, x)
        if final_backward == "1":
            model.zero_grad(set_to_none=True)
            y_xx.sum().backward()

    try:
        return seconds_per_call_over(step, float(min_seconds))
    finally:
        torch.set_num_threads(process_threads)


def unrolled_loop(steps, block):
    steps, block = int(steps), int(block)
    torch.manual_seed(0)
    x = torch.rand(300, 32) * 2 - 1
    targets = torch.tensor([(i * 7 + 3) % 3 for i in range(300)])
    w = ((torch.rand(32, 3) * 2 - 1) * 0.1).requires_grad_()
    b = torch.zeros(3, requires_grad=True)
    blocks = []
    start = time.perf_counter()
    for step in range(1, steps + 1):
        loss = torch.nn.functional.cross_entropy(x @ w + b, targets)
        gw, gb = torch.autograd.grad(loss, [w, b], create_graph=True)
        w = w - 1e-3 * gw
        b = b - 1e-3 * gb
        if step % block == 0:
            blocks.append(time.perf_counter() - start)
            start = time.perf_counter()
    return blocks


def jit_pass(ir_file):
    with open(ir_file) as f:
        graph = torch._C.parse_ir(f.read())
    start = time.perf_counter()
    torch._C._jit_pass_create_autodiff_subgraphs(graph, 2)
    return time.perf_counter() - start


def saved_bytes():
    x = torch.randn(2, 3, 10, 10, requires_grad=True)
    m = torch.randn(1, 3, 1, 1)
    saved = []

    def pack(t):
        saved.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        ((x + 2) * m).sum()
    return sum(saved)


# Issue 44 (paper/workloads/view_workloads.h): the same inputs as ours, element for element.


def pattern(shape, salt, scale):
    """view_workloads.h's pattern_values: (((i * 2654435761 + salt) mod 2^32) / 2^32 * 2 - 1)
    * scale in float64, rounded once to float32."""
    n = 1
    for d in shape:
        n *= d
    bits = (torch.arange(n, dtype=torch.int64) * 2654435761 + salt) % 4294967296
    return ((bits.double() / 4294967296.0 * 2 - 1) * scale).float().reshape(shape)


def gradient_checksum(grads):
    """view_workloads.h's gradient_checksum: sum of g_k * (k mod 7 + 1) over every element k of
    the gradients in order, in float64."""
    flat = torch.cat([g.detach().reshape(-1).double() for g in grads])
    return float((flat * (torch.arange(flat.numel()) % 7 + 1).double()).sum())


_rnn_inputs = {}


def rnn_inputs(batch, steps, width):
    key = (batch, steps, width)
    if key not in _rnn_inputs:
        _rnn_inputs.clear()  # one size at a time: x is 16 MB at the paper's size
        _rnn_inputs[key] = (pattern((batch, steps, width), 1, 1.0).requires_grad_(),
                            pattern((width, width), 2, 1.0 / 16).requires_grad_(),
                            pattern((width, width), 3, 1.0 / 16).requires_grad_())
    return _rnn_inputs[key]


def rnn_forward(x, w, u):
    batch, steps, width = x.shape
    h = torch.zeros(batch, width)
    out = torch.zeros(batch, steps, width)
    for t in range(steps):
        h = torch.tanh(x[:, t] @ w + h @ u)
        out[:, t] = h  # copy_ into a select view: CopySlices
    return out


def rnn_step(x, w, u):
    return torch.autograd.grad(rnn_forward(x, w, u).sum(), [x, w, u])


def with_threads(threads, fn):
    """fn() at `threads` intra-op threads (0: the process's count)."""
    process_threads = torch.get_num_threads()
    if int(threads) > 0:
        torch.set_num_threads(int(threads))
    try:
        return fn()
    finally:
        torch.set_num_threads(process_threads)


def rnn(batch, steps, width, min_seconds, threads="0"):
    x, w, u = rnn_inputs(int(batch), int(steps), int(width))
    return with_threads(threads, lambda: seconds_per_call_over(lambda: rnn_step(x, w, u),
                                                               float(min_seconds)))


def rnn_saved_bytes(batch, steps, width):
    """Bytes of the tensors the forward packs for backward (saved_tensors_hooks), numel * element
    size of each packed tensor, each pack counted, as the engine's bytes_saved counter counts its
    saves; and the distinct bytes among them: each storage element range counted once (W, saved
    by every step's product, once; a view of x, its elements)."""
    x, w, u = rnn_inputs(int(batch), int(steps), int(width))
    total = [0]
    ranges = set()

    def pack(t):
        total[0] += t.numel() * t.element_size()
        ranges.add((t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape),
                    t.stride(), t.element_size()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        rnn_forward(x, w, u)
    distinct = sum(e * _numel(shape) for _, _, shape, _, e in ranges)
    return [total[0], distinct]


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def rnn_checksum(batch, steps, width):
    return gradient_checksum(rnn_step(*rnn_inputs(int(batch), int(steps), int(width))))


_join_inputs = {}


def join_inputs(kind, slices, width):
    key = (kind, slices, width)
    if key not in _join_inputs:
        values = pattern((slices, width), 4, 1.0)
        if kind in ("cat", "stack"):
            inputs = [values[i].reshape(1, width) if kind == "cat" else values[i].clone()
                      for i in range(slices)]
            inputs = [t.clone().requires_grad_() for t in inputs]
        else:
            inputs = [values.requires_grad_()]
        _join_inputs[key] = (inputs, pattern((slices, width), 5, 1.0))
    return _join_inputs[key]


def join_step(kind, inputs, weights):
    if kind == "cat":
        y = torch.cat(inputs, 0)
    elif kind == "stack":
        y = torch.stack(inputs, 0)
    elif kind == "split_cat":
        y = torch.cat(inputs[0].split(1, 0), 0)
    elif kind == "unbind_stack":
        y = torch.stack(inputs[0].unbind(0), 0)
    else:
        raise ValueError("unknown join %r" % kind)
    return torch.autograd.grad(y, inputs, weights)


def join(kind, slices, width, min_seconds, threads="0"):
    inputs, weights = join_inputs(kind, int(slices), int(width))
    return with_threads(threads, lambda: seconds_per_call_over(
        lambda: join_step(kind, inputs, weights), float(min_seconds)))


def join_checksum(kind, slices, width):
    inputs, weights = join_inputs(kind, int(slices), int(width))
    return gradient_checksum(join_step(kind, inputs, weights))


# Issue 45 (paper/workloads/hook_workloads.h): checkpointing, tensor hooks, pack calls.
_residual_mlps = {}


def residual_mlp(layers, batch, width):
    """[(W1, W2)] * layers and x, scaled as make_residual_mlp's (values differ: torch.rand)."""
    key = (layers, batch, width)
    if key not in _residual_mlps:
        torch.manual_seed(0)
        scale = width ** -0.5
        weights = [(((torch.rand(width, 4 * width) * 2 - 1) * scale).requires_grad_(),
                    ((torch.rand(4 * width, width) * 2 - 1) * scale / 2).requires_grad_())
                   for _ in range(layers)]
        _residual_mlps[key] = (weights, torch.rand(batch, width) * 2 - 1)
    return _residual_mlps[key]


def residual_block(h, w1, w2, p):
    inner = torch.nn.functional.dropout(torch.tanh(h @ w1), p, training=True)
    return h + torch.tanh(inner @ w2)


def residual_mlp_forward(weights, x, p, checkpointed):
    h = x
    for w1, w2 in weights:
        if checkpointed:
            h = torch.utils.checkpoint.checkpoint(residual_block, h, w1, w2, p,
                                                  use_reentrant=False)
        else:
            h = residual_block(h, w1, w2, p)
    return (h * h).sum()


def checkpoint_mlp(layers, batch, width, p, checkpointed, min_seconds, threads="0"):
    weights, x = residual_mlp(int(layers), int(batch), int(width))
    flat = [w for pair in weights for w in pair]

    def step():
        loss = residual_mlp_forward(weights, x, float(p), checkpointed == "1")
        torch.autograd.grad(loss, flat)

    return with_threads(threads, lambda: seconds_per_call_over(step, float(min_seconds)))


def hooked_chain(length, hooked, min_seconds, threads="0"):
    x = torch.rand(4, requires_grad=True)
    call = lambda: chain_grad(x, int(length), hooked == "1")  # noqa: E731
    return with_threads(threads, lambda: seconds_per_call_over(call, float(min_seconds)))


def pack_calls(workload, *args):
    if workload == "dropout":
        x = torch.randn(2, 3, 10, 10, requires_grad=True)
        m = torch.randn(1, 3, 1, 1)
        forward = lambda: ((x + 2) * m).sum()
    elif workload == "residual_mlp":
        layers, batch, width, p = args
        weights, x = residual_mlp(int(layers), int(batch), int(width))
        forward = lambda: residual_mlp_forward(weights, x, float(p), False)
    elif workload == "hessian_mlp":
        model, x = mlp("relu", int(args[0]), int(args[1]))
        forward = lambda: model(x)
    else:
        raise ValueError("unknown workload %r" % workload)
    count = [0, 0]

    def pack(t):
        count[0] += 1
        count[1] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    return count


def mlp_jvp(activation, batch, hidden, dual, min_seconds, threads="0"):
    model, x = mlp(activation, int(batch), int(hidden))
    x = x.detach()
    tangent = torch.ones_like(x)
    fwAD = torch.autograd.forward_ad

    def step():
        if dual == "0":
            return model(x)
        with fwAD.dual_level():
            return fwAD.unpack_dual(model(fwAD.make_dual(x, tangent))).tangent

    return with_threads(threads, lambda: seconds_per_call_over(step, float(min_seconds)))


def jacobian(impl, width, min_seconds, threads="0"):
    width = int(width)
    torch.manual_seed(0)
    bound = 1.0 / width ** 0.5
    w1 = (torch.rand(width, width) * 2 - 1) * bound
    w2 = (torch.rand(width, width) * 2 - 1) * bound
    x = torch.rand(width) * 2 - 1
    jac = {"jacfwd": torch.func.jacfwd, "jacrev": torch.func.jacrev}[impl](
        lambda v: torch.tanh(w2 @ torch.tanh(w1 @ v)))
    return with_threads(threads, lambda: seconds_per_call_over(lambda: jac(x), float(min_seconds)))


serve(describe(), {"tiny_graph": tiny_graph, "scalar_chain": scalar_chain, "hessian": hessian,
                   "unrolled_loop": unrolled_loop, "jit_pass": jit_pass,
                   "saved_bytes": saved_bytes, "rnn": rnn, "rnn_saved_bytes": rnn_saved_bytes,
                   "rnn_checksum": rnn_checksum, "join": join, "join_checksum": join_checksum,
                   "checkpoint_mlp": checkpoint_mlp, "hooked_chain": hooked_chain,
                   "pack_calls": pack_calls, "mlp_jvp": mlp_jvp, "jacobian": jacobian})
