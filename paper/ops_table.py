#!/usr/bin/env python3
"""Runs //paper:ops_bench (ours vs the same computation in plain Eigen) and writes the ratios as
a Markdown table, paper/results/ops_bench.md.

    paper/ops_table.py [--reps N]      (builds and runs it with bazel run -c opt)

Each benchmark runs N times with Google Benchmark's random interleaving, so a slow spell of a
shared machine is spread over ours and Eigen alike; the table gives medians and their ratio."""

import argparse
import collections
import json
import os
import platform
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_name():
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return "%s, %d cores" % (line.split(":", 1)[1].strip(), os.cpu_count())
    except OSError:
        pass
    return platform.machine()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--binary", help="an ops_bench built with -c opt (default: bazel run)")
    parser.add_argument("--out", default=os.path.join(ROOT, "paper/results/ops_bench.md"))
    args = parser.parse_args()

    command = [args.binary] if args.binary else ["bazel", "run", "-c", "opt", "//paper:ops_bench",
                                                  "--"]
    run = subprocess.run(
        command + ["--benchmark_format=json", "--benchmark_repetitions=%d" % args.reps,
                   "--benchmark_enable_random_interleaving=true", "--benchmark_min_time=0.05"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
    # (op, size, unit) -> {"Ours": [times], "Eigen": [times]}
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    for b in json.loads(run.stdout)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name, size = b["run_name"].split("/")
        op, who = name[len("BM_"):].rsplit("_", 1)
        times[(op, int(size), b["time_unit"])][who].append(b["real_time"])

    lines = [
        "## Op forwards vs the same computation in plain Eigen",
        "",
        "`paper/ops_table.py` on %s, %s; float32, `-c opt`; medians of %d interleaved "
        "repetitions. Ours includes everything an op does (argument checks, dispatch, a fresh "
        "output with exact byte accounting); Eigen also writes into a freshly allocated output."
        % (time.strftime("%Y-%m-%d"), cpu_name(), args.reps),
        "",
        "| op | size | ours | Eigen | ours / Eigen |",
        "|---|---|---|---|---|",
    ]
    for (op, size, unit), by in sorted(times.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        ours, eigen = statistics.median(by["Ours"]), statistics.median(by["Eigen"])
        label = "%d" % size if op not in ("Mm", "Linear") else "%dx%d" % (size, size)
        lines.append("| %s | %s | %.4g %s | %.4g %s | %.2f |"
                     % (op.lower(), label, ours, unit, eigen, unit, ours / eigen))
    with open(args.out, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
