#!/usr/bin/env python3
"""Ours against PyTorch on the CPU hessian (batch 1000), quiet and under competing loads.

For each load (quiet; `spin`: one plain busy loop; `bursty`: two threads busy 20 ms / idle 20 ms;
`build`: a loop of two parallel g++ -O2 compiles of an Eigen file), starts the load, then runs
--rounds rounds, each running every benchmark once (ours: paper/hessian_cpu_bench, possibly several
builds; PyTorch: paper/peers/hessian.py) in turn, so that the load and the machine's other
traffic land on all of them alike. Prints each figure's median over rounds and the ratio to
PyTorch (the median of the per-round ratios).

  bazel build -c opt //paper:hessian_cpu_bench //paper:busy_load
  paper/busy_compare.py --bench ours=bazel-bin/paper/hessian_cpu_bench \\
      --busy-load bazel-bin/paper/busy_load --torch /work/torchvenv/bin/python
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

EIGEN_SOURCE = r"""
#include <Eigen/Dense>
Eigen::MatrixXf f(const Eigen::MatrixXf& a, const Eigen::MatrixXf& b) {
  Eigen::MatrixXf c = a * b + a.transpose() * b;
  return c.inverse() * c.llt().solve(b) + c.householderQr().solve(a);
}
Eigen::MatrixXd g(const Eigen::MatrixXd& a) { return a.jacobiSvd(Eigen::ComputeThinU).matrixU(); }
"""


def start_load(name, busy_load, workdir):
    """Starts the competing load `name`; returns the process (group leader) or None."""
    if name == "quiet":
        return None
    if name in ("spin", "bursty"):
        args = [busy_load, "spin"] if name == "spin" else [busy_load, "bursty", "2", "20", "20"]
        return subprocess.Popen(args, start_new_session=True)
    if name == "build":
        src = os.path.join(workdir, "eigen_job.cc")
        with open(src, "w") as f:
            f.write(EIGEN_SOURCE)
        job = "g++ -std=c++17 -O2 -I/usr/include/eigen3 -c %s -o /dev/null" % src
        loop = "while true; do %s & %s & wait; done" % (job, job)
        return subprocess.Popen(["bash", "-c", loop], start_new_session=True)
    raise SystemExit("unknown load: %s" % name)


def stop_load(proc):
    if proc is not None:
        os.killpg(proc.pid, signal.SIGKILL)
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
    parser.add_argument("--busy-load", required=True, help="path of the busy_load binary")
    parser.add_argument("--torch", default=sys.executable, help="python with torch")
    parser.add_argument("--loads", default="quiet,spin,bursty,build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10, help="steps per variant and round")
    args = parser.parse_args()

    benches = [tuple(b.split("=", 1)) for b in args.bench]
    runs = [(name, [path, "--reps", str(args.reps)]) for name, path in benches]
    runs.append(("pytorch", [args.torch, os.path.join(HERE, "peers", "hessian.py"),
                             "--reps", str(args.reps)]))
    with tempfile.TemporaryDirectory() as workdir:
        for load in args.loads.split(","):
            proc = start_load(load, args.busy_load, workdir)
            try:
                time.sleep(2 if load == "build" else 0.5)
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
