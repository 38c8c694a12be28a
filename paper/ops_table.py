#!/usr/bin/env python3
"""Runs //paper:ops_bench (ours vs the same computation in plain Eigen) and writes the ratios as
a Markdown table, paper/results/ops_bench.md.

    paper/ops_table.py [--reps N]      (builds it with bazel build -c opt)

Each op and size runs in its own process, N repetitions with Google Benchmark's random
interleaving, so a slow spell of a shared machine is spread over ours and Eigen alike."""

import argparse
import collections
import json
import os
import platform
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpuinfo(key):
    """The value of /proc/cpuinfo's first `key` line ("model name", "flags"), or None."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_name():
    model = cpuinfo("model name")
    return "%s, %d cores" % (model, os.cpu_count()) if model else platform.machine()


def has_avx512():
    """Whether this CPU has the AVX-512 subsets the kernels use (ops/cpu/cpu_features.h)."""
    flags = set((cpuinfo("flags") or "").split())
    return {"avx512f", "avx512vl", "avx512dq", "avx512bw"} <= flags


def ops_bench_binary(given):
    """The -c opt ops_bench: the given path, else built here with bazel, its plain-Eigen baselines
    for AVX-512 or, on a CPU without it, AVX2 (paper/isa_guard.cc)."""
    if given:
        return given
    flags = ["-c", "opt"] + ([] if has_avx512() else ["--define=ag_isa=avx2"])
    subprocess.run(["bazel", "build"] + flags + ["//paper:ops_bench"], cwd=ROOT, check=True,
                   stderr=subprocess.DEVNULL)
    bin_dir = subprocess.run(["bazel", "info"] + flags + ["bazel-bin"], cwd=ROOT, check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True).stdout.strip()
    return os.path.join(bin_dir, "paper", "ops_bench")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--binary", help="an ops_bench built with -c opt (default: built here)")
    parser.add_argument("--out", default=os.path.join(ROOT, "paper/results/ops_bench.md"))
    args = parser.parse_args()
    binary = ops_bench_binary(args.binary)

    names = subprocess.run([binary, "--benchmark_list_tests=true"], check=True,
                           stdout=subprocess.PIPE, text=True).stdout.split()
    # One process per (op, size): ours and Eigen's side by side, interleaved, in a fresh heap.
    # (In one long process the heap left by the large sizes slows Eigen's small allocations.)
    pairs = sorted({n.replace("_Eigen/", "_Ours/") for n in names if "_Ours/" in n or
                    "_Eigen/" in n})
    times = {}  # (op, size) -> (unit, {"Ours": [times], "Eigen": [times]})
    for ours in pairs:
        op, size = ours[len("BM_"):].split("_Ours/")
        run = subprocess.run(
            [binary, "--benchmark_filter=^BM_%s_(Ours|Eigen)/%s$" % (op, size),
             "--benchmark_format=json", "--benchmark_repetitions=%d" % args.reps,
             "--benchmark_enable_random_interleaving=true", "--benchmark_min_time=0.05"],
            check=True, stdout=subprocess.PIPE, text=True)
        by = collections.defaultdict(list)
        unit = "ns"
        for b in json.loads(run.stdout)["benchmarks"]:
            if b.get("run_type") == "iteration":
                by[b["run_name"].split("/")[0].rsplit("_", 1)[1]].append(b["real_time"])
                unit = b["time_unit"]
        times[(op, int(size))] = (unit, by)

    lines = [
        "## Op forwards vs the same computation in plain Eigen",
        "",
        "`paper/ops_table.py` on %s, %s; float32, `-c opt`. Each op and size runs in its own "
        "process, ours and Eigen's interleaved, %d repetitions; the table gives medians and "
        "their ratio, and the ratio of the fastest repetitions. Ours includes everything an op "
        "does (argument checks, dispatch, a fresh output with exact byte accounting); Eigen also "
        "writes into a freshly allocated output, except for sum, whose Eigen side returns a "
        "plain float while ours returns a 0-d tensor (an allocation Eigen does not make, which "
        "dominates at 1000 elements). At 1000 elements Eigen's time varies between repetitions "
        "with where glibc places its fresh output: an output a little above an input modulo "
        "4096 makes the kernel's loads wait on its stores (4K aliasing), which our allocator's "
        "alignment rules out (Note [Data block alignment], engine/memory/allocator.cc). The last column "
        "compares both sides at their fastest." % (time.strftime("%Y-%m-%d"), cpu_name(),
                                                    args.reps),
        "",
        "| op | size | ours (median) | Eigen (median) | ours / Eigen | fastest: ours / Eigen |",
        "|---|---|---|---|---|---|",
    ]
    for (op, size), (unit, by) in sorted(times.items()):
        ours, eigen = statistics.median(by["Ours"]), statistics.median(by["Eigen"])
        label = "%dx%d" % (size, size) if op in ("Mm", "Linear") else "%d" % size
        lines.append("| %s | %s | %.4g %s | %.4g %s | %.2f | %.2f |"
                     % (op.lower(), label, ours, unit, eigen, unit, ours / eigen,
                        min(by["Ours"]) / min(by["Eigen"])))
    with open(args.out, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
