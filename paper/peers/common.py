"""Shared helpers for the PyTorch peers of paper/reproduce.

Every peer script prints machine-readable lines on stdout, one per figure:
    figure<TAB>variant<TAB>metric<TAB>value<TAB>unit
plus one line naming the peer:
    peer<TAB>PyTorch <version> (<details>)
and exits 0. When torch cannot be imported it prints `unavailable<TAB><reason>` and exits 3.
"""

import argparse
import statistics
import sys
import time


def parse_args(description, add_arguments=None):
    """--quick, plus whatever add_arguments(parser) adds for one script."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="a small version of the workload")
    if add_arguments:
        add_arguments(parser)
    return parser.parse_args()


def import_torch():
    try:
        import torch  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        print("unavailable\ttorch not importable by %s: %s" % (sys.executable, e))
        sys.exit(3)
    import torch

    blas = "unknown BLAS"
    try:
        torch.ones(64, 64) @ torch.ones(64, 64)  # loads the BLAS library
        with open("/proc/self/maps") as maps:
            libs = maps.read()
        for marker, name in (("openblas", "OpenBLAS"), ("libmkl", "MKL"), ("blis", "BLIS"),
                             ("/blas/libblas", "reference BLAS")):
            if marker in libs:
                blas = name
                break
    except Exception:
        pass
    version = torch.__version__
    try:
        import subprocess

        deb = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "python3-torch"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        if deb and torch.__file__.startswith("/usr/lib/python3/"):
            version = "%s (Debian python3-torch %s)" % (version, deb)
    except Exception:
        pass
    print(
        "peer\tPyTorch %s, Python %d.%d, %s, %d intra-op threads"
        % (version, sys.version_info[0], sys.version_info[1], blas, torch.get_num_threads())
    )
    sys.stdout.flush()
    return torch


def figure(variant, metric, value, unit):
    print("figure\t%s\t%s\t%.6g\t%s" % (variant, metric, value, unit))
    sys.stdout.flush()


def timed(fn, iters):
    """Mean seconds per call of fn() over iters calls."""
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - start) / iters


def median_time(fn, iters, reps):
    return statistics.median(timed(fn, iters) for _ in range(reps))
