"""The peer protocol of paper/reproduce (paper/peers/README.md), for the Python peers.

A peer is a long-running process. reproduce starts it once, reads its name, then sends one task
per line on stdin and reads one answer per line on stdout, so that it can interleave every
repetition of a peer with ours (and run them all under the same competing load):

    peer -> reproduce   peer<TAB><description: version, BLAS, threads>   once, first
                        ready                                            once, then tasks
    reproduce -> peer   <task><TAB><arg>...                              one per line
    peer -> reproduce   ok<TAB><value>[<TAB><value>...]                  one per task
                        error<TAB><message>                              (the peer goes on)

A peer that cannot run here prints `unavailable<TAB><reason>` and exits 3.
"""

import argparse
import os
import sys
import time
import traceback


def parse_args(description):
    """--threads N: the intra-op thread count, the same as our engine's in this run."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads")
    return parser.parse_args()


def unavailable(reason):
    print("unavailable\t%s" % reason.replace("\n", " "), flush=True)
    sys.exit(3)


def seconds_per_call(fn, iters):
    """Mean seconds per call of fn() over iters calls."""
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - start) / iters


def seconds_per_call_over(fn, min_seconds):
    """Mean seconds per call of fn(), called back to back until min_seconds have passed (once at
    least): reproduce's stretch of steps (paper/workloads/timing.h, Note [A stretch of steps])."""
    calls = 0
    start = time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / calls


def serve(description, tasks):
    """Prints the peer line and `ready`, then answers tasks until EOF or `quit`.

    tasks maps a task name to a function taking the task's string arguments and returning a
    number or a list of numbers."""
    print("peer\t%s" % description, flush=True)
    print("ready", flush=True)
    for line in sys.stdin:
        fields = line.rstrip("\n").split("\t")
        if not fields[0] or fields[0] == "quit":
            break
        try:
            task = tasks.get(fields[0])
            if task is None:
                raise ValueError("unknown task %r (known: %s)" % (fields[0], ", ".join(tasks)))
            values = task(*fields[1:])
            if not isinstance(values, (list, tuple)):
                values = [values]
            print("ok\t" + "\t".join("%.17g" % v for v in values), flush=True)
        except Exception as e:  # report and keep serving: one failed task is one empty cell
            message = "%s: %s" % (type(e).__name__, e)
            if os.environ.get("AG_PEER_DEBUG"):
                traceback.print_exc()
            print("error\t%s" % message.replace("\n", " ").replace("\t", " "), flush=True)
