#!/usr/bin/env python3
"""Sums an Nsight Compute CSV (ncu --csv --metrics gpu__time_duration.sum) by kernel name.

    ncu --clock-control none --metrics gpu__time_duration.sum --csv PROGRAM ... > kernels.csv
    tools/ncu_summary.py kernels.csv --steps N

Prints, per kernel name, its launches and GPU time per step (the CSV's totals divided by N, the
steps the program ran under ncu), largest first, then the total: the GPU's busy time per step
with every kernel run alone, to set beside a step's wall time (the difference is launch gaps and
host time)."""
import argparse
import collections
import csv
import io
import sys

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
parser.add_argument("csv")
parser.add_argument("--steps", type=int, default=1, help="steps the profiled program ran")
parser.add_argument("--width", type=int, default=90, help="kernel names are cut to this width")
args = parser.parse_args()

with open(args.csv, errors="replace") as f:
    text = f.read()
start = text.find('"ID"')  # ncu prints its own lines and the program's before the table
if start < 0:
    sys.exit("ncu_summary: no ncu table in %s" % args.csv)
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
launches = collections.Counter()
micros = collections.Counter()
for row in csv.DictReader(io.StringIO(text[start:])):
    if row.get("Metric Name") != "gpu__time_duration.sum":
        continue
    name = row["Kernel Name"]
    launches[name] += 1
    micros[name] += float(row["Metric Value"].replace(",", "")) * scale[row["Metric Unit"]]

total = sum(micros.values())
print("%10s %8s %6s  %s" % ("us/step", "launches", "share", "kernel"))
for name, us in micros.most_common():
    print("%10.1f %8.1f %5.1f%%  %s" % (us / args.steps, launches[name] / args.steps,
                                        100 * us / total, name[:args.width]))
print("%10.1f %8.1f %6s  total GPU time per step (kernels run one at a time)"
      % (total / args.steps, sum(launches.values()) / args.steps, ""))
