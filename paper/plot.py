"""Draws the paper's curves from figures.tsv (written by paper/reproduce).

    /usr/bin/python3 paper/plot.py RESULTS/figures.tsv OUT_DIR

unrolled_loop.png: time per 100 steps over the unrolled loop, per engine option set (and PyTorch).
jit_pass.png:      create_autodiff_subgraphs time vs graph size, AliasDb rebuilt vs incremental.
Uses Debian's python3-matplotlib (tools/setup.sh installs it); exits 3 when it is missing.
"""

import collections
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except Exception as e:
    print("matplotlib not importable by %s: %s" % (sys.executable, e))
    sys.exit(3)


def read(path):
    series = collections.defaultdict(list)  # (workload, variant, metric name) -> [(x, y)]
    device = ""
    with open(path) as f:
        next(f)
        for line in f:
            workload, variant, metric, value, unit, device = line.rstrip("\n").split("\t")
            if "@" not in metric:
                continue
            name, at = metric.split("@", 1)
            key, x = at.split("=", 1)
            series[(workload, variant, name, unit)].append((float(x), float(value)))
    return series, device


def plot(series, workload, path, title, xlabel, loglog, logy=False):
    curves = {k: sorted(v) for k, v in series.items() if k[0] == workload}
    if not curves:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (_, variant, _, unit), points in sorted(curves.items()):
        xs, ys = zip(*points)
        ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, label=variant)
        ax.set_ylabel(unit)
    if loglog:
        ax.set_xscale("log")
    if loglog or logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    tsv, out = sys.argv[1], sys.argv[2]
    series, device = read(tsv)
    made = []
    if plot(series, "unrolled_loop", os.path.join(out, "unrolled_loop.png"),
            "Unrolled loop: time per 100 steps (%s)" % device, "step", False, logy=True):
        made.append("unrolled_loop.png")
    if plot(series, "create_autodiff_subgraphs", os.path.join(out, "jit_pass.png"),
            "create_autodiff_subgraphs: pass time vs graph size", "nodes", True):
        made.append("jit_pass.png")
    print("wrote " + ", ".join(made) if made else "no curves to plot")


main()
