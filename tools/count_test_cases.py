#!/usr/bin/env python3
"""Counts the test cases of one `bazel test` run: prints "PASSED FAILED" (two integers).

Usage: tools/count_test_cases.py LOG BAZEL_EXIT_CODE
       tools/count_test_cases.py --junit XML EXIT_CODE    (a step that is not a `bazel test` run)

The per-target summary lines of the run's log say which targets ran (and their status); each
target's JUnit XML under bazel-testlogs/ (written by gtest, or by Bazel for non-gtest tests and
crashes) gives the test cases. A target that did not pass but has no failing test case in its XML
(crash, timeout, failed to build) counts as 1 failed. Bazel exit code 4 means "no test targets":
0 passed, 0 failed. Any other non-zero exit code with no failing case counts as 1 failed (a build
or analysis error). Exits 0 iff nothing failed.

With --junit, the cases of one JUnit XML file (skipped ones count neither way); a non-zero exit
code of its step with no failing case in the file counts as 1 failed.
"""
import glob, os, re, sys
import xml.etree.ElementTree as ET

line_re = re.compile(
    r"^(//\S*|@\S+)\s+(?:\(cached\) )?"
    r"(PASSED|FLAKY|FAILED TO BUILD|FAILED|TIMEOUT|NO STATUS|INCOMPLETE|REMOTE FAILURE)\b")

def count_xml(path):
    """Returns (passed, failed) test cases in one JUnit XML file."""
    passed = failed = 0
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return 0, 1
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("status") == "notrun":
            pass  # disabled/skipped: neither passed nor failed
        else:
            passed += 1
    return passed, failed

if sys.argv[1] == "--junit":
    passed, failed = count_xml(sys.argv[2])
    if int(sys.argv[3]) != 0 and failed == 0:
        failed = 1
    print(passed, failed)
    sys.exit(0 if failed == 0 else 1)

log_path, bazel_rc = sys.argv[1], int(sys.argv[2])
status = {}
with open(log_path, errors="replace") as f:
    for line in f:
        m = line_re.match(line.rstrip("\n"))
        if m:
            status[m.group(1)] = m.group(2)

total_passed = total_failed = 0
for label, st in sorted(status.items()):
    passed = failed = 0
    if st not in ("FAILED TO BUILD", "NO STATUS"):  # otherwise any XML there is stale
        pkg, _, name = label.lstrip("/").partition(":")
        testdir = os.path.join("bazel-testlogs", pkg, name)
        for xml in glob.glob(os.path.join(testdir, "**", "test.xml"), recursive=True):
            p, f = count_xml(xml)
            passed, failed = passed + p, failed + f
    if st not in ("PASSED", "FLAKY") and failed == 0:
        failed = 1
    total_passed += passed
    total_failed += failed

ok = bazel_rc in (0, 4) and total_failed == 0
if not ok and total_failed == 0:
    total_failed = 1  # bazel itself failed (e.g. build or analysis error)
print(total_passed, total_failed)
sys.exit(0 if ok else 1)
