"""Runs conformance programs on PyTorch and prints their records (proptests/conformance/records.h).

A program is a PyTorch script that proptests/conformance/torch_script.cc renders:

    from torch_runtime import *
    run([
        S("v0 = leaf([2, 3], [0.5, ...], requires_grad=True)", results=["v0"], values=False),
        S("v1 = v0 * v0", reads=["v0"], results=["v1"]),
        S("v1.add_(v0)", reads=["v1", "v0"], target="v1", flags=["v2"]),
        ...
    ])

Each statement runs on its own: an exception is a statement that raises; a statement that reads a
value that is missing (its statement raised or was skipped, or it is None) is skipped. The
records are the same lines the engine's runner writes.

    python3 torch_runtime.py SCRIPT...     runs scripts, prints their records
    python3 torch_runtime.py --explain SCRIPT...   ... with each exception's message
    python3 torch_runtime.py --serve       reads scripts from stdin, each as "<bytes>\\n<script>",
                                           answers "<bytes>\\n<records>" on stdout (the fuzz
                                           driver's live mode)

Custom Functions' needs_input_grad: PyTorch's own ctx.needs_input_grad only says which inputs
require grad (PyTorch issue 56500). The records hold the ideal instead: input i is needed iff its
gradient edge reaches an edge the current grad()/backward() call requested (for backward()
without inputs: an AccumulateGrad whose leaf requires grad, or a node with hooks; and every input
that required grad, on a node with a post-hook), found by walking PyTorch's graph.
"""

import faulthandler
import math
import os
import sys
import warnings

if sys.argv[1:] == ["--serve"]:
    # An internal assert's message then carries PyTorch's native stack, for its signature's
    # frames (proptests/foreign/crash_signature.h); PyTorch reads it when it is imported.
    os.environ["TORCH_SHOW_CPP_STACKTRACES"] = "1"

import torch  # noqa: E402 - after the variable above
import torch.autograd.forward_ad as fwAD
import torch.nn.functional as F
import torch._prims_common  # noqa: E402 - _dense()

warnings.filterwarnings("ignore")
torch.set_num_threads(1)  # deterministic reductions; the programs are tiny

# ---- the program's helpers -------------------------------------------------------------------


# The engine's counter-based generator (ops/counter_rng.h), bit for bit: leaf values and dropout
# masks are the engine's, so both engines start from the same numbers.
_M64 = (1 << 64) - 1


def _mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _uniform01(seed, i):
    return (_mix64(seed ^ _mix64(i)) >> 11) * (1.0 / 9007199254740992.0)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def leaf(shape, seed, requires_grad):
    """ops::uniform(shape, -1, 1, seed) in float64."""
    values = [-1.0 + 2.0 * _uniform01(seed, i) for i in range(_numel(shape))]
    # clone(): reshape() returns a view of the flat tensor, and a leaf must not be a view (its
    # views' in-place ops would rebase onto the flat tensor instead).
    t = torch.tensor(values, dtype=torch.float64).reshape(shape).clone()
    return t.requires_grad_(requires_grad)


def _mask(shape, p, seed):
    keep = 1.0 - p
    scale = 1.0 / keep if keep > 0 else 0.0
    values = [scale if _uniform01(seed, i) < keep else 0.0 for i in range(_numel(shape))]
    return torch.tensor(values, dtype=torch.float64).reshape(shape)


def dropout(a, p, seed):
    """ops::dropout(a, p, train=True, seed): a times the engine's mask."""
    if p == 0:
        return F.dropout(a, 0.0, training=True)  # PyTorch returns `a` itself, as the engine does
    return a * _mask(a.shape, p, seed)


def dropout2d(a, p, seed):
    """ops::dropout2d: one mask entry per [N, C] channel."""
    if a.dim() < 2:
        raise ValueError("dropout2d: expected a [N, C, ...] tensor")
    if p == 0:
        return a
    return a * _mask(list(a.shape[:2]) + [1] * (a.dim() - 2), p, seed)


def add_scalar(a, s):
    """a + s with s a number, as the engine's add(Tensor, double): PyTorch's `a + s` wraps s in a
    tensor that its backward node saves (so a second backward would raise); aten's Scalar
    overload keeps s as a number, as the engine does."""
    return torch.ops.aten.add.Scalar(a, s)


def mul_scalar(a, s):
    """a * s with s a number (see add_scalar)."""
    return torch.ops.aten.mul.Scalar(a, s)


def targets(values):
    return torch.tensor(values, dtype=torch.long)


# ---- grad() and backward(), and the ideal needs_input_grad ------------------------------------


class _Call:
    """What the current grad()/backward() call requested, for the ideal needs_input_grad."""

    targets = None  # set of (id(node), output_nr), or None for "every leaf" (backward())
    retained = None  # backward(): the edges of tensors that retain grad (None: not read yet)
    keep = []  # the target nodes, alive while the call runs (ids stay unique)
    memo = {}
    hooked = {}  # hook number -> the node it is registered on, while registered (kept alive)
    post_hooked = {}  # the same, for the post-hooks (grad_fn.register_hook) alone
    detached = {}  # id(t) -> (t, its edge before t.detach_()), for a t that retained grad then


def _begin_call(inputs):
    _Call.memo = {}
    if inputs is None:
        _Call.targets, _Call.keep, _Call.retained = None, [], None
        return
    _Call.targets, _Call.keep = set(), []
    for t in inputs:
        # _retained_edge, not _edge: where PyTorch refuses to regenerate an input's history, its
        # own call raises at that input, after retaining grad on the non-leaf inputs before it
        # (run_backward); raising here, before the call, would skip that (found by a live fuzz
        # run: backward(inputs=[y, stale_view]) left y retaining grad in the engine only).
        edge = _retained_edge(t) if isinstance(t, torch.Tensor) and t.requires_grad else None
        if edge is not None:
            _Call.keep.append(edge.node)
            _Call.targets.add((id(edge.node), edge.output_nr))


def _retained_edges():
    """backward() without inputs writes the .grad of every tensor that retains grad as well as
    every leaf's: an edge to one is needed (found by a live fuzz run: a custom Function skipped the
    gradient of an input that retained grad, where the engine accumulated it). Its retains-grad
    hook lives on the node it had when it retained grad, which detach_() leaves there (found by
    fuzz --against pytorch: the hook still writes .grad, and `retains_grad` stays True).
    Read when a custom Function first asks, not as the call starts: reading a stale view's history
    regenerates it and moves its hook off the old node (PyTorch's VariableHooks::grad_fn), which
    PyTorch's own program, reading nothing, does not do (found by fuzz --against pytorch: the
    hook of a view that was stale at backward() no longer saw the gradient through its old node).
    """
    if _Call.retained is None:
        _Call.retained = set()
        for t in _run["values"]:
            if isinstance(t, torch.Tensor) and t.retains_grad:
                detached = _Call.detached.get(id(t))
                if detached is not None and detached[0] is t and t.grad_fn is None:
                    edge = detached[1]
                else:
                    edge = _retained_edge(t)
                if edge is not None:
                    _Call.keep.append(edge.node)
                    _Call.retained.add((id(edge.node), edge.output_nr))
    return _Call.retained


def _note_detach(s, ns):
    """Before `t.detach_()`: the edge of a t that retains grad, where its hook stays. Not for a
    view (detach_() refuses it), so reading the history changes nothing; nor for a t detached
    before (a leaf, whose hook stays where the first detach_() left it)."""
    t = ns.get(s.target) if s.target and s.text == s.target + ".detach_()" else None
    if (isinstance(t, torch.Tensor) and t.retains_grad and not t._is_view() and
            t.grad_fn is not None):
        edge = _retained_edge(t)
        if edge is not None:
            _Call.detached[id(t)] = (t, edge)


def _retained_edge(t):
    """_edge(t) for a tensor that retains grad, or None where PyTorch refuses to regenerate its
    history: a stale view of a view made by split/chunk/unbind or under no_grad, whose base was
    written since. Reading it is this runtime's own act, not the program's: PyTorch's call itself
    reads nothing of it, and does not raise (found by a live fuzz run: a backward() that both
    engines run raised here)."""
    try:
        return _edge(t)
    except RuntimeError:
        return None


def _reaches(node):
    """Whether some edge out of `node` (or a node below it) is requested."""
    key = id(node)
    if key in _Call.memo:
        return _Call.memo[key]
    _Call.memo[key] = False  # a DAG: no cycles, this only guards re-entry
    found = False
    if _Call.targets is None:
        # backward() without inputs: a node's hooks see the gradients it receives, so they are
        # needed whatever lies below it, as the engine's mark_runs_into_every_leaf (found by a
        # live fuzz run: a custom Function skipped the gradient into a node with a pre-hook,
        # which then saw None where the engine's saw the gradient).
        found = any(n is node for n in _Call.hooked.values())
        if not found and type(node).__name__ == "AccumulateGrad":
            found = node.variable.requires_grad
    for nxt, nr in node.next_functions:
        if found:
            break
        found = nxt is not None and _edge_needed(nxt, nr)
    _Call.memo[key] = found
    return found


def _edge_needed(node, output_nr):
    if node is None:
        return False
    if _Call.targets is not None and (id(node), output_nr) in _Call.targets:
        return True
    if _Call.targets is None and (id(node), output_nr) in _retained_edges():
        return True
    return _reaches(node)


def _ideal_needs(ctx):
    if _Call.targets is None and any(n is ctx for n in _Call.post_hooked.values()):
        # backward() without inputs: a node with a post-hook computes every gradient whose input
        # required grad, as PyTorch's, for the hook's grad_inputs (Note [Post-hooks see every
        # executed gradient], engine/hooks.h; found by a live fuzz run: a post-hook saw None
        # where PyTorch's saw the gradient of an input leading only to a leaf that no longer
        # requires grad).
        return [node is not None for node, _ in ctx.next_functions]
    return [_edge_needed(node, nr) for node, nr in ctx.next_functions]


def _note_hooks(text, ns):
    """After a statement that ran: notes the node a hook statement registered its hook on (a
    leaf's tensor hooks and post-accumulate hooks are its AccumulateGrad's), or forgets a removed
    one. PyTorch does not say which nodes have hooks; the statements' spelling (torch_script.cc,
    Note [Conformance hooks]) does."""
    words = text.split(" = ", 1)
    if len(words) == 2 and words[0].startswith("h") and ".register_" in words[1]:
        tensor = ns[words[1].split(".", 1)[0]]
        node = tensor.grad_fn if words[1].split(".")[1] == "grad_fn" else _node(tensor)
        if node is not None:
            _Call.hooked[int(words[0][1:])] = node
            if ".grad_fn.register_hook(" in words[1]:
                _Call.post_hooked[int(words[0][1:])] = node
    elif text.startswith("h") and text.endswith(".remove()"):
        _Call.hooked.pop(int(text[1:-len(".remove()")]), None)
        _Call.post_hooked.pop(int(text[1:-len(".remove()")]), None)


def _edge(t):
    """PyTorch's gradient edge of `t`, or None where it has none: a view made without a history
    that requires grad only through its base has neither a grad_fn nor an AccumulateGrad."""
    try:
        return torch.autograd.graph.get_gradient_edge(t)
    except AssertionError:
        return None


def _node(t):
    edge = _edge(t)
    return None if edge is None else edge.node


def _check_reachable(outputs, inputs):
    """Raises unless every input's node is reachable from the outputs, before anything runs, as
    the engine checks (unused-input-checked-first): PyTorch runs the graph first, freeing saved
    tensors without retain_graph, and raises afterwards."""
    seen, keep = set(), []
    stack = [_node(t) for t in outputs if isinstance(t, torch.Tensor) and t.requires_grad]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)
        stack.extend(nxt for nxt, _ in node.next_functions)
    for i, t in enumerate(inputs):
        if isinstance(t, torch.Tensor) and t.requires_grad and id(_node(t)) not in seen:
            raise RuntimeError("grad(): input %d is not reachable from the outputs" % i)


def grad(outputs, inputs, grad_outputs, allow_unused=False, **kwargs):
    if not allow_unused:
        _check_reachable(outputs, inputs)
    _begin_call(inputs)
    try:
        return torch.autograd.grad(outputs, inputs, grad_outputs, allow_unused=allow_unused,
                                   **kwargs)
    finally:
        _begin_call([])


def _readable_leaf(t):
    """t.is_leaf, or False where PyTorch refuses to read it: a stale view made under no_grad or
    by split/chunk/unbind (a view with a history, so no leaf), whose grad_fn raises."""
    try:
        return t.is_leaf
    except RuntimeError:
        return False


def backward(tensors, grad_tensors, inputs=None, **kwargs):
    # Copies of the caller's gradients: PyTorch's AccumulateGrad may keep a view of one as a
    # leaf's .grad, sharing the caller's storage; the engine never does
    # (backward-grad-tensors-copied).
    # Not a gradient that shares storage with a program value's .grad: accumulating into that
    # .grad in place writes into the gradient in both engines, and a copy would hide the write.
    # Under create_graph AccumulateGrad copies anyway, and a copy here would hide the formulas'
    # reads of the caller's gradients (an in-place write into one then fails their version check).
    # .grad first: `is_leaf` reads grad_fn, which regenerates a stale view's history (PyTorch's
    # VariableHooks::grad_fn), a side effect that requires_grad_() would see later. And
    # `retains_grad` (a flag) before it: a tensor that retains grad is no leaf, and regenerating
    # its history moves its retains-grad hook off the old grad_fn, so a gradient that still flows
    # through the old one would no longer reach its .grad (found by a live fuzz run: a view's
    # .grad took a gradient twice in PyTorch's own program, once here).
    # Only where a copy would be made, and only for a .grad that shares storage with one of the
    # gradients (the side effect again: found by a live fuzz run, `v2.grad = v3` on a view `v2`
    # whose base then required grad, which PyTorch's own program never regenerates).
    # The copies are made with grad mode off: a recorded clone reads its input's grad_fn, which
    # would regenerate a stale view's history (the side effect above), where the engine's call
    # reads nothing of the gradients' histories without create_graph.
    if not kwargs.get("create_graph", False):
        given = {g.untyped_storage().data_ptr() for g in grad_tensors
                 if isinstance(g, torch.Tensor)}
        held = {t.grad.untyped_storage().data_ptr() for t in _run["values"]
                if isinstance(t, torch.Tensor) and t.grad is not None and
                t.grad.untyped_storage().data_ptr() in given and not t.retains_grad and
                _readable_leaf(t)}
        with torch.no_grad():
            grad_tensors = [g.clone() if isinstance(g, torch.Tensor) and
                            g.untyped_storage().data_ptr() not in held else g
                            for g in grad_tensors]
    _begin_call(inputs)
    try:
        torch.autograd.backward(tensors, grad_tensors, inputs=inputs, **kwargs)
    finally:
        _begin_call([])


# ---- torch.func transforms (Note [Conformance forward mode], program.h) -------------------------


def transform(kind, f, args, n):
    """The results of a transform statement: `kind` of f at the primals args[:n] (detached: the
    transforms' results are compared, not their history), as transform_runner.cc's."""
    args = [a.detach() for a in args]
    primals = args[:n]
    if kind == "jvp":
        out, tangent = torch.func.jvp(f, tuple(primals), tuple(args[n:2 * n]))
        return [out, tangent]
    if kind == "vjp":
        out, fn = torch.func.vjp(f, *primals)
        return [out] + list(fn(args[n]))
    if kind in ("jacrev", "jacfwd"):
        return list(getattr(torch.func, kind)(f, argnums=tuple(range(n)))(*primals))
    if kind == "hessian":
        return [torch.func.hessian(f)(primals[0])]
    if kind == "hvp":  # forward-over-reverse, as ag::func::hvp
        return [torch.func.jvp(torch.func.grad(f), (primals[0],), (args[1],))[1]]
    if kind == "eager_vjp":
        return _autograd_vjp(f, primals, args[n])
    if kind == "compiled_vjp":
        torch._dynamo.reset()  # each body is a new function: no cache to grow
        return _autograd_vjp(torch.compile(f, backend="aot_eager"), primals, args[n])
    if kind == "dual_jvp":
        with fwAD.dual_level():
            out = f(*[fwAD.make_dual(p, t) for p, t in zip(primals, args[n:2 * n])])
            primal, tangent = fwAD.unpack_dual(out)
            tangent = torch.zeros_like(primal) if tangent is None else tangent.clone()
            return [primal.clone(), tangent]
    raise ValueError("unknown transform " + kind)


def _autograd_vjp(f, primals, cotangent):
    """The mode check's reverse modes (Note [PyTorch against itself], mode_check.h): f on fresh
    leaves, then torch.autograd.grad; zeros where f's result does not depend on an input."""
    xs = [p.clone().requires_grad_(True) for p in primals]
    out = f(*xs)
    if not out.requires_grad:
        return [out.detach()] + [torch.zeros_like(x) for x in xs]
    grads = torch.autograd.grad(out, xs, cotangent, allow_unused=True, materialize_grads=True)
    return [out.detach()] + list(grads)


def _exit_dual_levels():
    """Exits a dual level still live at the end of a program (the engine's ends with it)."""
    while fwAD._current_level >= 0:
        fwAD.exit_dual_level()


# ---- ops the engine defines differently (each names its entry in DEVIATIONS.md) -----------------


def whole(src, target, copy=False):
    """`src` for an in-place op on `target`: a copy where PyTorch's overlap check cannot tell
    (TOO_HARD: either tensor reaches an element at several indices or leaves gaps) and lets the
    write run in element order over elements it already wrote, where the engine reads such an
    operand before the write (Note [Operands read before the write], ops/inplace.cc; DEVIATIONS.md,
    too-hard-overlaps-read-first). Every overlap PyTorch's check can tell reaches it as it is, and
    both refuse the partial ones (a [3, 1] view of a [1, 3, 1] tensor, x[1:] into x[:-1], a
    permuted view into its base). Not for copy_ from the very elements of the target in the same
    layout, which PyTorch returns from before any overlap check (`copy=True`: the op is copy_).
    """
    same_data = (isinstance(src, torch.Tensor) and src.shape == target.shape
                 and src.stride() == target.stride()
                 and src.storage_offset() == target.storage_offset())
    if (isinstance(src, torch.Tensor) and src is not target and src.numel() > 0
            and target.numel() > 0
            and src.untyped_storage().data_ptr() == target.untyped_storage().data_ptr()
            and not (_dense(src) and _dense(target)) and not (copy and same_data)):
        return src.clone()
    return src


def _dense(t):
    """PyTorch's is_non_overlapping_and_dense: without it, its overlap checks answer TOO_HARD."""
    return torch._prims_common.is_non_overlapping_and_dense_or_false(t)


# ---- custom Functions (the same formulas as custom_functions.cc) --------------------------------

_run = {"stmt": -1, "needs": [], "values": [], "fires": []}  # values: the program's, as the statement starts


def _log_needs(ctx):
    needs = _ideal_needs(ctx)
    _run["needs"].append((ctx.stmt, needs))
    return needs


class Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.stmt = _run["stmt"]
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        needs = _log_needs(ctx)
        a, b = ctx.saved_tensors
        return ((g * b).sum_to_size(a.shape) if needs[0] else None,
                (g * a).sum_to_size(b.shape) if needs[1] else None)


class Two(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.stmt = _run["stmt"]
        ctx.save_for_backward(a, b)
        return a * b, a + b

    @staticmethod
    def backward(ctx, g0, g1):
        needs = _log_needs(ctx)
        a, b = ctx.saved_tensors
        return ((g0 * b + g1).sum_to_size(a.shape) if needs[0] else None,
                (g0 * a + g1).sum_to_size(b.shape) if needs[1] else None)


class Split(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.stmt = _run["stmt"]
        out = (mul_scalar(a, 2.0), -a)
        ctx.mark_non_differentiable(out[1])
        return out

    @staticmethod
    def backward(ctx, g0, g1):
        needs = _log_needs(ctx)
        return mul_scalar(g0, 2.0) if needs[0] else None


# ---- hooks (Note [Conformance hooks], program.h) -------------------------------------------------
# Each logs what it is handed, one record line per firing: "fire hK [2,3] = ..." ("none" for a
# None gradient; a node hook's slots joined by " | ", a post-hook's grad_inputs and grad_outputs
# by " / ").


def _handed(t):
    return "none" if t is None else _shape(t) + " =" + "".join(" " + _num(x) for x in _values(t))


def _handed_all(ts):
    return " | ".join(_handed(t) for t in ts) or "empty"


def _fire(hook, handed):
    _run["fires"].append("fire h%d %s" % (hook, handed))


def tensor_hook(hook, scale):
    """A hook for Tensor.register_hook: logs the gradient, returns it times `scale` (1: None)."""
    def fn(grad):
        _fire(hook, _handed(grad))
        return None if scale == 1 or grad is None else mul_scalar(grad, scale)
    return fn


def pre_hook(hook):
    """A hook for Node.register_prehook: logs grad_outputs."""
    return lambda grad_outputs: _fire(hook, _handed_all(grad_outputs))


def post_hook(hook):
    """A hook for Node.register_hook: logs grad_inputs and grad_outputs."""
    return lambda grad_inputs, grad_outputs: _fire(
        hook, _handed_all(grad_inputs) + " / " + _handed_all(grad_outputs))


def post_accumulate_hook(hook):
    """A hook for Tensor.register_post_accumulate_grad_hook: logs the leaf's .grad."""
    return lambda leaf: _fire(hook, _handed(leaf.grad))


# ---- records ----------------------------------------------------------------------------------


def _num(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def _shape(t):
    return "[" + ",".join(str(d) for d in t.shape) + "]"


def _values(t):
    """t's values, row-major. A gradient PyTorch returns may be one of its internal "efficient zero"
    tensors (abs's second derivative, through sgn's: torch.autograd.grad hands it to the caller),
    which has no storage and whose tolist() raises; its values are zeros."""
    if t._is_zerotensor():
        return [0.0] * t.numel()
    return t.detach().reshape(-1).tolist()


def _flags(t):
    try:
        return "%s rg=%d leaf=%d" % (_shape(t), t.requires_grad, t.is_leaf)
    except RuntimeError:  # PyTorch forbids reading some views (a view made in no_grad mode
        return None  # whose base was then modified in place)


def _same(ns, names, t, self):
    """"same=vK " when `t` is the very tensor value K names (K the smallest such, not `self`)."""
    for name in names:
        if ns.get(name) is t:
            return "" if name == self else "same=%s " % name
    return ""


def _state(ns, names, t, self, values):
    if t is None:
        return "none"
    s = _flags(t)
    if s is None:
        return "unreadable"
    same = _same(ns, names, t, self)
    if same:
        s += " " + same[:-1]
    if values:
        s += " =" + "".join(" " + _num(x) for x in _values(t))
    return s


def _digest(t):
    d = a = 0.0
    values = _values(t)
    for i, x in enumerate(values):
        w = 1.0 + math.fmod(i * 0.6180339887498949, 1.0)
        d += x * w
        a += abs(x) * w
    return "d=%s a=%s n=%d" % (_num(d), _num(a), len(values))


class S:
    """One statement: its code and what to record after it."""

    def __init__(self, code, reads=(), results=(), values=True, target=None, flags=(), grads=()):
        self.code = compile(code, "<statement>", "exec")
        self.text = code
        self.reads, self.results, self.values = reads, results, values
        self.target, self.flags, self.grads = target, flags, grads


def _error_kind(message):
    """" freed", " version" or "" (records.h's error_kind)."""
    if "backward through the graph a second time" in message:
        return " freed"
    if "modified by an in" in message:  # in-place, inplace
        return " version"
    return ""


def _grad_of(t):
    return None if t is None else t.grad


def run_program(stmts):
    """Runs a list of S; returns the record lines."""
    _Call.hooked, _Call.post_hooked, _Call.detached = {}, {}, {}
    ns = {k: v for k, v in globals().items() if not k.startswith("_")}
    names = set()
    for s in stmts:
        names.update(s.results)
    lines = []

    def present(name):
        return ns.get(name) is not None

    names = sorted(names, key=lambda n: int(n[1:]))
    for i, s in enumerate(stmts):
        sid = "s%d" % i
        if not all(present(r) for r in s.reads):
            for r in s.results:
                ns[r] = None
            lines.append(sid + " skip")
            continue
        _run["stmt"], _run["needs"], _run["fires"] = i, [], []
        _run["values"] = [ns.get(n) for n in names]
        _note_detach(s, ns)
        try:
            exec(s.code, ns)
        except Exception as e:  # noqa: BLE001 - any exception is "this statement raises"
            for r in s.results:
                ns[r] = None
            message = " ".join(str(e).split())
            if "INTERNAL ASSERT FAILED" in message:  # PyTorch's own bug: nothing to compare
                if _serving:  # for the driver's crash signature (foreign_engine.cc)
                    sys.stderr.write(str(e) + "\n")
                    sys.stderr.flush()
                lines.append(sid + " reference-failed" + (" # " + message if _explain else ""))
                return lines
            lines.append(sid + " raise" + _error_kind(message) +
                         (" # " + message if _explain else ""))
            continue
        _note_hooks(s.text, ns)
        lines.append(sid + " ok")
        lines.extend(sid + " " + fire for fire in _run["fires"])
        for r in s.results:
            lines.append("%s %s %s" % (sid, r, _state(ns, names, ns[r], r, s.values)))
        if s.target:
            lines.append("%s %s %s" % (sid, s.target, _state(ns, names, ns[s.target], s.target, True)))
        for v in s.flags:
            t = ns.get(v)
            lines.append("%s flags %s %s" % (sid, v, "none" if t is None else _flags(t) or "unreadable"))
        for v in s.grads:
            lines.append("%s grad %s %s" % (sid, v, _state(ns, names, _grad_of(ns.get(v)), None, True)))
        needs = ["%s needs s%d [%s]" % (sid, stmt, ",".join("1" if n else "0" for n in flags))
                 for stmt, flags in _run["needs"]]
        lines.extend(sorted(needs))
    for v in names:
        t = ns.get(v)
        if t is None:
            lines.append("end %s none" % v)
            continue
        flags = _flags(t)
        lines.append("end %s %s" % (v, "unreadable" if flags is None else
                                    "rg=%d leaf=%d %s" % (t.requires_grad, t.is_leaf, _digest(t))))
        g = t.grad
        lines.append("end %s grad %s" % (v, "none" if g is None else
                                         _same(ns, names, g, None) + _digest(g)))
    return lines


_collected = []
_serving = False  # serve(): internal asserts' messages go to stderr too
_explain = False  # raise lines carry the exception's message (--explain; not comparable)


def run(stmts):
    """A script's entry point: runs its program and keeps the records for the caller."""
    try:
        _collected.append(run_program(stmts))
    finally:
        _exit_dual_levels()


def run_script(text):
    """Runs one script's text; returns its records (one program per script)."""
    del _collected[:]
    exec(compile(text, "<program>", "exec"), {"__name__": "conformance_program"})
    return "".join(line + "\n" for line in _collected[0])


def serve():
    # A crash or a hang (the driver's SIGABRT) dumps the Python stacks on stderr, which the
    # driver reads for the crash's signature (proptests/foreign/crash_signature.h).
    global _serving
    _serving = True
    # PyTorch's own handler prints every thread's native stack (c10::FatalSignalHandler, "frame #3:
    # sym + 0x1a (0x7f.. in libtorch_cpu.so)"): the frames of a signature where the Python stacks
    # all end in the same call. faulthandler, enabled after it, dumps the Python stacks first.
    if hasattr(torch._C, "_set_print_stack_traces_on_fatal_signal"):
        torch._C._set_print_stack_traces_on_fatal_signal(True)
    faulthandler.enable()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        header = stdin.readline()
        if not header:
            return
        text = stdin.read(int(header)).decode()
        try:
            out = run_script(text)
        except Exception as e:  # noqa: BLE001 - a broken script is reported, not fatal
            out = "error %s\n" % repr(e).replace("\n", " ")
        data = out.encode()
        stdout.write(b"%d\n" % len(data) + data)
        stdout.flush()


def main(argv):
    global _explain
    if argv[1:] == ["--serve"]:
        serve()
        return
    if argv[1:2] == ["--explain"]:
        _explain = True
        argv = argv[1:]
    for path in argv[1:]:
        with open(path) as f:
            sys.stdout.write(run_script(f.read()))


if __name__ == "__main__":
    sys.modules.setdefault("torch_runtime", sys.modules[__name__])
    main(sys.argv)
