"""PyTorch peer of the hessian benchmark (seed 001, PR 82544's script): MLP, input 16, six hidden
Linear+activation layers of width 256, output 1 (ReLU as published, and Tanh); y_xx by two nested
grad(create_graph=True) w.r.t. x, without and with a final backward to the weights.

A standalone script: with --device cuda (batch 10000) it is the peer of paper/hessian_bench, run
beside it by gpu_bin/run_all.sh (tools/build_gpu_bundle.sh): every step ends with a device
synchronization, as ours does, and the times are medians of interleaved repetitions. --compile
adds torch.compile of the same step (the nested grads written with torch.func.grad, which
torch.compile traces; the final backward through the compiled graph's own backward), without and
with CUDA graphs, each checked against plain autograd's results; --tf32 lets the products use
TF32, as hessian_bench --tf32 does. On the CPU, paper/reproduce interleaves torch_peer.py's
hessian task with ours instead.

Prints `peer<TAB>...` and one `figure<TAB>variant<TAB>metric<TAB>value<TAB>unit` line per figure."""

import argparse
import statistics
import sys
import time

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--quick", action="store_true", help="a small version of the workload")
parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
parser.add_argument("--batch", type=int, default=0, help="default: 1000 on cpu, 10000 on cuda")
parser.add_argument("--reps", type=int, default=0, help="repetitions (median is reported)")
parser.add_argument("--tsv", help="append the figures here as paper/results/cuda/*.tsv rows")
parser.add_argument("--compile", action="store_true",
                    help="also time the step under torch.compile (Inductor), without and with "
                         "CUDA graphs (mode reduce-overhead)")
parser.add_argument("--only", choices=("ReLU", "Tanh"), help="one activation only")
parser.add_argument("--tf32", action="store_true",
                    help="float32 products on TF32 tensor cores (torch.backends.cuda.matmul."
                         "allow_tf32), as hessian_bench --tf32")
args = parser.parse_args()
try:
    import torch
except Exception as e:  # ImportError, or a broken install
    print("unavailable\ttorch not importable by %s: %s" % (sys.executable, e))
    sys.exit(3)
print("peer\tPyTorch %s, Python %d.%d, %d intra-op threads"
      % (torch.__version__, sys.version_info[0], sys.version_info[1], torch.get_num_threads()))


def figure(variant, metric, value, unit):
    print("figure\t%s\t%s\t%.6g\t%s" % (variant, metric, value, unit), flush=True)


def timed(fn, iters):
    """Mean seconds per call of fn() over iters calls."""
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - start) / iters

device = torch.device(args.device)
torch.backends.cuda.matmul.allow_tf32 = args.tf32
cuda = device.type == "cuda"
if cuda and not torch.cuda.is_available():
    print("unavailable\ttorch sees no CUDA device")
    raise SystemExit(3)
device_name = torch.cuda.get_device_name(device) if cuda else "cpu"
if cuda:
    print("peer-device\t%s" % device_name)

batch, hidden, reps = (100, 64, 3) if args.quick else (10000 if cuda else 1000, 256, 15)
batch = args.batch or batch
reps = args.reps or (20 if cuda else reps)
x = (torch.rand(batch, 16, device=device) * 2 - 1).requires_grad_()


def make_model(activation):
    layers = [torch.nn.Linear(16, hidden), activation()]
    for _ in range(5):
        layers += [torch.nn.Linear(hidden, hidden), activation()]
    layers += [torch.nn.Linear(hidden, 1)]
    return torch.nn.Sequential(*layers).to(device)


def finish(model, y_xx, final_backward):
    """The end of every contender's step: the final backward into the weights if asked, and a
    device synchronization."""
    if final_backward:
        model.zero_grad(set_to_none=True)
        y_xx.sum().backward()
    if cuda:
        torch.cuda.synchronize(device)
    return y_xx


def step(model, final_backward):
    y = model(x)
    y_x = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)[0]
    y_xx = torch.autograd.grad(y_x, x, torch.ones_like(y_x), create_graph=True)[0]
    return finish(model, y_xx, final_backward)


def nested_grads_func(model):
    """The same y_xx through torch.func, the form torch.compile traces: grad of sum(y) w.r.t. x is
    grad(y, x, ones), and grad of sum(y_x) is grad(y_x, x, ones)."""
    y_x = torch.func.grad(lambda xx: model(xx).sum())
    return torch.func.grad(lambda xx: y_x(xx).sum())


def compiled_step(model, mode):
    """step() with the nested grads compiled by torch.compile; the final backward runs through
    the compiled graph's own backward. Under CUDA graphs (mode reduce-overhead) each step starts
    a new replay, as torch.compiler.cudagraph_mark_step_begin says."""
    fn = torch.compile(nested_grads_func(model), mode=mode)

    def run(final_backward):
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        return finish(model, fn(x), final_backward)
    return run


# Interleaved, as ours: each repetition times every variant once, so a slow spell of a shared
# machine lands on all variants instead of one.
def contender(figure_name, what, make):
    """(its name in the figures, its name in the .tsv rows, a function of the model that makes
    its step, a function of final_backward), both names marked when the products use TF32."""
    tf32 = ", TF32" if args.tf32 else ""
    return (figure_name + tf32.replace(", ", "+"),
            "PyTorch %s%s%s" % (torch.__version__, what, tf32), make)


contenders = [contender("pytorch", "", lambda m: lambda fb: step(m, fb))]
if args.compile:
    contenders += [
        contender("torch.compile", " torch.compile", lambda m: compiled_step(m, "default")),
        contender("torch.compile+cudagraphs", " torch.compile (CUDA graphs)",
                  lambda m: compiled_step(m, "reduce-overhead")),
    ]
variants = []
activations = (("ReLU", torch.nn.ReLU), ("Tanh", torch.nn.Tanh))
for name, activation in activations:
    if args.only and name != args.only:
        continue
    model = make_model(activation)
    for figure_name, tsv_name, make in contenders:
        run = make(model)
        for final_backward, label in ((False, "no final backward"), (True, "with final backward")):
            variants.append((name, label, figure_name, tsv_name, run, final_backward, model))

def relative_error(got, want):
    """The largest difference, relative to want's largest magnitude."""
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))


def grads_of(model):
    """Every parameter's .grad, flattened (zeros where none reached it: the last bias)."""
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten()
                      for p in model.parameters()]).detach()


for name, label, figure_name, _, run, final_backward, model in variants:
    start = time.perf_counter()
    for _ in range(3):
        y_xx = run(final_backward)  # warm-up (cuBLAS handles, the caching allocator, compilation)
    print("warm-up\t%s\t%s, %s\t%.1f s" % (figure_name, name, label, time.perf_counter() - start),
          flush=True)
    # Every contender computes what plain autograd computes (to float32 rounding).
    y_xx = y_xx.detach().clone()
    got_grads = grads_of(model).clone() if final_backward else None
    want = step(model, final_backward).detach()
    error = relative_error(y_xx, want)
    if final_backward:
        error = max(error, relative_error(got_grads, grads_of(model)))
    print("check\t%s\t%s, %s\tlargest difference from autograd, relative to its largest value: "
          "%.2g" % (figure_name, name, label, error), flush=True)
times = [[] for _ in variants]
for _ in range(reps):
    for i, (_, _, _, _, run, final_backward, _) in enumerate(variants):
        times[i].append(timed(lambda: run(final_backward), 1))
for (name, label, figure_name, tsv_name, _, _, _), t in zip(variants, times):
    ms = statistics.median(t) * 1e3
    figure(figure_name, "%s step time, %s" % (name, label), ms, "ms")
    if args.tsv:
        with open(args.tsv, "a") as out:
            out.write("%s\t%s\thessian (%s, batch %d)\t%s\tstep time, %s\t%.4g\tms\n"
                      % (time.strftime("%Y-%m-%d", time.gmtime()), device_name, name, batch,
                         tsv_name, label, ms))
