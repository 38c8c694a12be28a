"""PyTorch peer of the hessian benchmark (seed 001, PR 82544's script): MLP, input 16, six hidden
Linear+activation layers of width 256, output 1 (ReLU as published, and Tanh); y_xx by two nested
grad(create_graph=True) w.r.t. x, without and with a final backward to the weights.

A standalone script: with --device cuda (batch 10000) it is the peer of cuda/hessian_bench, run
beside it by gpu_bin/run_all.sh (tools/build_gpu_bundle.sh): every step ends with a device
synchronization, as ours does, and the times are medians of interleaved repetitions. On the CPU,
paper/reproduce interleaves torch_peer.py's hessian task with ours instead.

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


def step(model, final_backward):
    y = model(x)
    y_x = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)[0]
    y_xx = torch.autograd.grad(y_x, x, torch.ones_like(y_x), create_graph=True)[0]
    if final_backward:
        model.zero_grad(set_to_none=True)
        y_xx.sum().backward()
    if cuda:
        torch.cuda.synchronize(device)
    return y_xx


# Interleaved, as ours: each repetition times every variant once, so a slow spell of a shared
# machine lands on all variants instead of one.
variants = []
for name, activation in (("ReLU", torch.nn.ReLU), ("Tanh", torch.nn.Tanh)):
    model = make_model(activation)
    for final_backward, label in ((False, "no final backward"), (True, "with final backward")):
        variants.append((name, label, model, final_backward))
for _, _, model, final_backward in variants:
    for _ in range(3):
        step(model, final_backward)  # warm-up (cuBLAS handles, the caching allocator)
times = [[] for _ in variants]
for _ in range(reps):
    for i, (_, _, model, final_backward) in enumerate(variants):
        times[i].append(timed(lambda: step(model, final_backward), 1))
for (name, label, _, _), t in zip(variants, times):
    ms = statistics.median(t) * 1e3
    figure("pytorch", "%s step time, %s" % (name, label), ms, "ms")
    if args.tsv:
        with open(args.tsv, "a") as out:
            out.write("%s\t%s\thessian (%s, batch %d)\tPyTorch %s\tstep time, %s\t%.4g\tms\n"
                      % (time.strftime("%Y-%m-%d", time.gmtime()), device_name, name, batch,
                         torch.__version__, label, ms))
