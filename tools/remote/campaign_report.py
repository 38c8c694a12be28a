#!/usr/bin/env python3
"""Merges the shards of one //proptests:campaign_test run into one campaign report.

Each shard's JUnit XML (bazel-testlogs/proptests/campaign_test/shard_K_of_N/test.xml) holds one
test case per (property, slice) with the properties proptests/campaign_test.cc records: seed,
cases, the replay command and the slice's coverage. This script checks that every expected slice
came back exactly once (none lost, none run twice) and, with --shards, that every shard reported;
sums the coverage, lists the failures with their shard, seed and replay command, prints the
summary and writes it as Markdown.

  campaign_report.py --testlogs DIR... --expected LIST --cases N [--shards N] [--bazel-log LOG]
                     [--bep JSON] [--out FILE.md] [--title T] [--note LINE]...

--testlogs is given once per test target: a campaign of more than 50 shards is several targets,
NAME_part_P, of the same shard count (proptests/campaign.bzl); shard K of part P is shard
P * count + K of the campaign. --expected is the output of `campaign_test --gtest_list_tests`
(the slices that must come back).
Exit status: 0 all slices passed, 1 a slice failed, 2 a slice or shard is missing, a slice
duplicated or short.
"""

import argparse
import collections
import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

# crashes: None, or (--against campaigns, proptests/against_shard.py) "SIGNATURE=N" lines.
Slice = collections.namedtuple("Slice", "name property slice seed cases shard replay coverage failure crashes")


def read_expected(path):
    """Test names ("Slice/P_0") from `--gtest_list_tests` output."""
    names = []
    with open(path) as f:
        for line in f:
            if line.startswith("  ") and line.strip():
                names.append(line.split("#")[0].strip())
    return names


def campaign_shard(part, shard, count):
    """The campaign-wide shard number (1-based) of Bazel's shard `shard` (1-based) of `count` in
    part `part` (0-based) of the campaign (campaign_shard.sh numbers them so)."""
    return part * count + shard


def target_part(name):
    """P of a target (or test-log folder) named ..._part_P; 0 for a campaign of one target."""
    m = re.search(r"_part_(\d+)$", name.rstrip("/"))
    return int(m.group(1)) if m else 0


def read_shards(testlogs_dirs):
    """{campaign-wide shard number (1-based): [Slice]} from every test.xml under the folders."""
    shards = {}
    xmls = [(d, x) for d in testlogs_dirs
            for x in sorted(glob.glob(os.path.join(d, "**", "test.xml"), recursive=True))]
    for testlogs, xml in xmls:
        m = re.search(r"shard_(\d+)_of_(\d+)", xml)
        shard = campaign_shard(target_part(testlogs), int(m.group(1)), int(m.group(2))) if m else 1
        slices = []
        for case in ET.parse(xml).getroot().iter("testcase"):
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            failure = case.find("failure")
            slices.append(Slice(
                name=case.get("name"), property=props.get("property", "?"), slice=props.get("slice", "?"),
                seed=props.get("seed", "?"), cases=int(props.get("cases", 0)), shard=shard,
                replay=props.get("replay", ""), coverage=props.get("coverage", ""), crashes=props.get("crashes"),
                failure=None if failure is None else (failure.get("message") or failure.text or "failed")))
        shards[shard] = slices
    return shards


def merge_coverage(slices):
    graphs, largest, counts = 0, 0, collections.defaultdict(collections.Counter)
    for s in slices:
        for item in filter(None, s.coverage.split(";")):
            key, _, value = item.rpartition("=")
            if key == "graphs":
                graphs += int(value)
            elif key == "largest":
                largest = max(largest, int(value))
            else:
                category, _, label = key.partition("/")
                counts[category][label] += int(value)
    return graphs, largest, counts


def merge_crashes(slices):
    """[(signature, programs, [shards])], most programs first: the crashes of every shard of an
    --against campaign, merged by signature."""
    programs, shards = collections.Counter(), collections.defaultdict(set)
    for s in slices:
        for line in filter(None, (s.crashes or "").split("\n")):
            signature, _, n = line.rpartition("=")
            programs[signature] += int(n)
            shards[signature].add(s.shard)
    return [(sig, n, sorted(shards[sig])) for sig, n in programs.most_common()]


def bep_attempts(path):
    """{campaign-wide shard: (strategy, attempt, status)} of each shard's final attempt, from a BEP
    JSON file."""
    out = {}
    if not path or not os.path.exists(path):
        return out
    with open(path) as f:
        events = [json.loads(line) for line in f]
    # Each target's shard count, for the campaign-wide numbers of a campaign of several targets.
    counts = {e["id"]["testSummary"].get("label"): e["testSummary"].get("shardCount", 1)
              for e in events if "testSummary" in e}
    for event in events:
        if "testResult" in event:
            tid = event["id"]["testResult"]
            result = event["testResult"]
            label = tid.get("label", "")
            shard = campaign_shard(target_part(label), tid.get("shard", 1), counts.get(label, 1))
            out[shard] = (result.get("executionInfo", {}).get("strategy", "?"), tid.get("attempt", 1),
                          result.get("status", "?"))
    return out


def bazel_lines(path):
    """Bazel's process summary ("N processes: ... N remote.") and elapsed-time lines."""
    lines = []
    if path and os.path.exists(path):
        with open(path, errors="replace") as f:
            lines = [l.strip() for l in f if re.match(r"INFO: (\d+ process|Elapsed time)", l)]
    return lines


def report(args):
    shards = read_shards(args.testlogs)
    slices = [s for shard in shards.values() for s in shard]
    expected = read_expected(args.expected) if args.expected else [s.name for s in slices]
    seen = collections.Counter(s.name for s in slices)
    missing = [n for n in expected if seen[n] == 0]
    duplicated = [n for n, k in seen.items() if k > 1]
    short = [s for s in slices if s.failure is None and s.cases != args.cases]
    failed = [s for s in slices if s.failure is not None]
    total = sum(s.cases for s in slices)
    attempts = bep_attempts(args.bep)
    # A shard with no XML lost its slices (they are missing too), unless it had none to run.
    silent_shards = [k for k in range(1, (args.shards or 0) + 1) if k not in shards]

    out = [f"# {args.title}", ""] + [f"{n}  " for n in args.note] + [""]
    out += [f"Bazel: `{l}`  " for l in bazel_lines(args.bazel_log)] + [""]
    lost = len(missing) + len(duplicated) + len(short) + len(silent_shards)
    out += [f"{total} cases in {len(slices)} slices of {len(expected)} expected ({args.cases} cases per slice), "
            f"{len(shards)} shards: {len(failed)} failed, {len(missing)} missing, {len(duplicated)} duplicated, "
            f"{len(short)} short.", ""]
    if args.shards:
        out += [f"{args.shards - len(silent_shards)} of {args.shards} shards reported.", ""]
    out += ["| shard | slices | cases | failed | ran | attempt | status |", "|---|---|---|---|---|---|---|"]
    for shard, ss in sorted(shards.items()):
        strategy, attempt, status = attempts.get(shard, ("?", "?", "?"))
        out.append(f"| {shard} | {len(ss)} | {sum(s.cases for s in ss)} | {sum(s.failure is not None for s in ss)} "
                   f"| {strategy} | {attempt} | {status} |")
    out.append("")
    if failed or lost:
        out += ["## Failures", ""]
        for s in failed:
            out += [f"- {s.property} slice {s.slice}, shard {s.shard}, seed {s.seed}: replay with `{s.replay}`",
                    "", "```", s.failure.strip(), "```", ""]
        out += [f"- missing: {n}" for n in missing] + [f"- ran more than once: {n}" for n in duplicated]
        out += [f"- {s.name}: {s.cases} cases instead of {args.cases}" for s in short]
        out += [f"- shard {k} of {args.shards} did not report" for k in silent_shards] + [""]

    if any(s.crashes is not None for s in slices):
        crashes = merge_crashes(slices)
        out += ["## Crash signatures (all shards merged)", ""]
        out += [f"- `{sig}`: {n} programs, shards {', '.join(map(str, shards))}" for sig, n, shards in crashes]
        out += [f"{len(crashes)} signatures; each shard's crashing programs are in its test.outputs "
                "(findings/crashes.txt), for `fuzz --against pytorch --reduce-crashes`.", ""]

    graphs, largest, counts = merge_coverage(slices)
    per_property = collections.Counter()
    for s in slices:
        per_property[s.property] += s.cases
    cov = [f"{total} cases, {len(failed)} failures", "cases per property:"]
    cov += [f"  {p:<60} {n:>10}" for p, n in sorted(per_property.items())]
    cov.append(f"graphs generated: {graphs}, largest: {largest}")
    for category, labels in sorted(counts.items()):
        cov.append(f"{category}:")
        cov += [f"  {label:<50} {n:>10}" for label, n in sorted(labels.items())]
    out += ["## Coverage (all shards merged)", "", "```"] + cov + ["```", ""]

    text = "\n".join(out)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 2 if lost else 1 if failed else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--testlogs", required=True, action="append",
                        help="bazel-testlogs/proptests/TARGET of the run, once per test target")
    parser.add_argument("--shards", type=int, help="the campaign's shard count: each must report")
    parser.add_argument("--expected", help="`campaign_test --gtest_list_tests` output")
    parser.add_argument("--cases", type=int, required=True, help="CAMPAIGN_CASES of the run")
    parser.add_argument("--bazel-log", help="Bazel's console output, for its process summary")
    parser.add_argument("--bep", help="--build_event_json_file of the run, for how each shard ran")
    parser.add_argument("--out", help="Markdown file to write")
    parser.add_argument("--title", default="Remote fuzz campaign")
    parser.add_argument("--note", action="append", default=[], help="a line for the report's header")
    return report(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
