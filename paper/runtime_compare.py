#!/usr/bin/env python3
"""Builds of our CPU runtime against each other and PyTorch on the CPU hessian (batch 1000), quiet
and under competing loads: how the parallel runtime (Note [Parallel runtime], ops/cpu/parallel.cc)
was chosen. paper/results/cpu_runtime.md holds the figures.

For each load (quiet, then paper/load_generator's bursty, compile and spin, as `reproduce --busy`
runs them), starts the load, then runs --rounds rounds, each running every benchmark once (ours:
paper/hessian_cpu_bench, one or more builds; PyTorch: paper/peers/hessian.py) in turn, so that the
load and the machine's other traffic land on all of them alike. Prints each figure's median over
rounds and the ratio to PyTorch (the median of the per-round ratios), with the machine's 1-minute
load average at each round.

  bazel build -c opt //paper:hessian_cpu_bench //paper:load_generator
  cp bazel-bin/paper/hessian_cpu_bench /tmp/bench_tbb
  # the same kernels on libgomp instead of oneTBB (only parallel.cc is rebuilt):
  bazel build -c opt --per_file_copt=ops/cpu/parallel.cc@-fopenmp,-DAG_PARALLEL_OPENMP \\
      --linkopt=-fopenmp //paper:hessian_cpu_bench
  cp bazel-bin/paper/hessian_cpu_bench /tmp/bench_omp
  paper/runtime_compare.py --bench onetbb=/tmp/bench_tbb --bench libgomp=/tmp/bench_omp \\
      --load-generator bazel-bin/paper/load_generator --torch ~/.cache/autograd-peers/venv/bin/python
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# load_generator's arguments for each load, as paper/harness/load.cc names them (2 threads).
LOADS = {
    "bursty": ["bursty", "2", "20", "20"],
    "compile": ["compile", "2"],
    "spin": ["spin", "1"],
}


def start_load(name, load_generator):
    """Starts the competing load `name`; returns the process or None when quiet."""
    if name == "quiet":
        return None
    if name not in LOADS:
        raise SystemExit("unknown load: %s (known: quiet, %s)" % (name, ", ".join(LOADS)))
    return subprocess.Popen([load_generator] + LOADS[name], stdout=subprocess.DEVNULL)


def stop_load(proc):
    if proc is not None:
        proc.send_signal(signal.SIGTERM)  # load_generator stops its threads and compiles
        proc.wait()


def run_figures(cmd):
    """Runs a benchmark printing figure lines; returns {metric: value} and its `peer` line."""
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    figures, peer = {}, ""
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0] == "figure":
            figures[parts[2]] = float(parts[3])
        elif parts[0] == "peer":
            peer = parts[1]
    return figures, peer


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", action="append", required=True,
                        help="NAME=PATH of a hessian_cpu_bench build (repeatable)")
    parser.add_argument("--load-generator", required=True, help="paper/load_generator's path")
    parser.add_argument("--torch", default=sys.executable, help="python with torch")
    parser.add_argument("--loads", default="quiet,bursty,compile,spin")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10, help="steps per variant and round")
    args = parser.parse_args()

    benches = [tuple(b.split("=", 1)) for b in args.bench]
    runs = [(name, [path, "--reps", str(args.reps)]) for name, path in benches]
    runs.append(("pytorch", [args.torch, os.path.join(HERE, "peers", "hessian.py"),
                             "--reps", str(args.reps)]))
    for load in args.loads.split(","):
        proc = start_load(load, args.load_generator)
        try:
            time.sleep(2 if load == "compile" else 0.5)
            rounds = []
            for _ in range(args.rounds):
                loadavg = os.getloadavg()[0]
                rounds.append(({name: run_figures(cmd) for name, cmd in runs}, loadavg))
        finally:
            stop_load(proc)
        report(load, rounds, [name for name, _ in runs])


def report(load, rounds, names):
    print("\n## load: %s (1-min load average at each round: %s)" %
          (load, ", ".join("%.1f" % avg for _, avg in rounds)))
    for name in names:
        print("#   %s: %s" % (name, rounds[0][0][name][1]))
    metrics = list(rounds[0][0]["pytorch"][0])
    print("| figure | " + " | ".join(names) + " | " +
          " | ".join("%s / pytorch" % n for n in names[:-1]) + " |")
    print("| --- |" + " ---: |" * (2 * len(names) - 1))
    for metric in metrics:
        values = [statistics.median(r[name][0][metric] for r, _ in rounds) for name in names]
        ratios = [statistics.median(r[name][0][metric] / r["pytorch"][0][metric] for r, _ in rounds)
                  for name in names[:-1]]
        print("| %s | %s | %s |" % (metric, " | ".join("%.1f ms" % v for v in values),
                                    " | ".join("%.2f" % q for q in ratios)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
