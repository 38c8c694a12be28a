#!/usr/bin/env python3
"""One shard of the --against campaign (//proptests:against_campaign_test_N_shards).

Runs one batch of the fuzz driver's `--against pytorch`: CAMPAIGN_CASES conformance programs
(default 20) with batch seed CAMPAIGN_SEED * 1000 + shard (the campaign-wide shard number, as
campaign_shard.sh counts it), PyTorch in the interpreter CAMPAIGN_AGAINST_PYTHON. Its crashes go
to the test's undeclared outputs (findings/crashes.txt). It writes the shard's result as the
campaign test's JUnit XML does (one test case, the same properties, and `crashes`: each crash
signature with its count), so tools/remote/campaign_report.py merges the shards' findings by
signature. Without CAMPAIGN_AGAINST_PYTHON it passes at once and says it skipped. A batch that
runs into Bazel's timeout (TEST_TIMEOUT; RapidCheck shrinking a mismatch through PyTorch can take
minutes) is stopped 30 s before it, and the shard fails with its seed and the output so far, so
the report still names it.

  against_shard.py FUZZ PART PARTS   (Bazel's sh_test; python3 from PATH)
"""

import collections
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def campaign_shard(part, parts):
    """(shard, shards): this shard's campaign-wide number (0-based) and the campaign's count."""
    count = int(os.environ.get("TEST_TOTAL_SHARDS") or 0)
    if count <= 0:
        return 0, 1
    return part * count + int(os.environ.get("TEST_SHARD_INDEX", 0)), parts * count


def crash_signatures(path):
    """{signature: programs} of a crashes.txt the fuzz driver wrote (crash_log_entry)."""
    counts = collections.Counter()
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            counts.update(line[len("signature "):].rstrip("\n") for line in f if line.startswith("signature "))
    return counts


def write_junit(path, name, props, failure):
    suite = ET.Element("testsuite", name="AgainstCampaign", tests="1", failures=str(int(failure is not None)))
    case = ET.SubElement(suite, "testcase", name=name, classname="AgainstCampaign")
    properties = ET.SubElement(case, "properties")
    for key, value in props.items():
        ET.SubElement(properties, "property", name=key, value=str(value))
    if failure is not None:
        ET.SubElement(case, "failure", message=failure.splitlines()[0] if failure else "failed").text = failure
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def main(argv):
    fuzz, part, parts = argv[1], int(argv[2]), int(argv[3])
    if os.environ.get("TEST_SHARD_STATUS_FILE"):  # this test knows it is sharded
        open(os.environ["TEST_SHARD_STATUS_FILE"], "a").close()
    shard, shards = campaign_shard(part, parts)
    python = os.environ.get("CAMPAIGN_AGAINST_PYTHON", "")
    if not python:
        print(f"against campaign shard {shard} of {shards}: skipped, no --test_env=CAMPAIGN_AGAINST_PYTHON")
        return 0
    seed = int(os.environ.get("CAMPAIGN_SEED", "1")) * 1000 + shard
    cases = int(os.environ.get("CAMPAIGN_CASES", "20"))
    findings = os.path.join(os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", "."), "findings")
    os.makedirs(findings, exist_ok=True)
    command = [fuzz, "--against", "pytorch", "--seed", str(seed), "--batch-seed", str(seed), "--batch", str(cases),
               "--findings", findings, "--no-reduce"]
    budget = max(10, int(os.environ.get("TEST_TIMEOUT", "300")) - 30)
    try:
        run = subprocess.run(command, env=dict(os.environ, AG_PEER_PYTHON=python), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=budget)
        returncode, stdout = run.returncode, run.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:  # the child is killed; its output so far is bytes
        returncode, stdout = None, (e.stdout or b"").decode(errors="replace")
    sys.stdout.write(stdout)
    ran = re.search(r"^(\d+) cases in ", stdout, re.M)
    crashes = crash_signatures(os.path.join(findings, "crashes.txt"))
    replay = f"bazel run -c opt //proptests:fuzz -- --against pytorch --batch-seed {seed} --batch {cases}"
    failure = None
    if returncode is None:
        failure = f"fuzz did not finish in {budget} s (seed {seed}); its output so far:\n{stdout[-4000:]}"
    elif returncode != 0:
        failed = stdout.find("\nFAILED ")
        failure = stdout[failed + 1:] if failed >= 0 else f"fuzz exit {returncode}\n{stdout[-4000:]}"
    props = {"property": "AgainstPytorch", "slice": shard, "seed": seed, "cases": ran.group(1) if ran else 0,
             "shard": shard, "replay": replay, "coverage": f"graphs={ran.group(1) if ran else 0}",
             # One line per signature (a headline may hold ';' or '='; the count follows the last '=').
             "crashes": "\n".join(f"{sig}={n}" for sig, n in sorted(crashes.items()))}
    if os.environ.get("XML_OUTPUT_FILE"):
        write_junit(os.environ["XML_OUTPUT_FILE"], f"Against/pytorch_{shard}", props, failure)
    return 0 if returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
