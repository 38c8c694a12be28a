#!/usr/bin/env python3
"""campaign_report.py on synthetic shard results: a complete run, and each way a slice can be lost.

Run by Bazel as an sh_test (no Python toolchain needed); writes its cases as JUnit XML to
$XML_OUTPUT_FILE so that every case counts in the test summary.
"""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest
from xml.sax.saxutils import quoteattr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import campaign_report  # noqa: E402  (beside this file, in the source tree and in runfiles)

CASES = 20


def testcase(prop, sl, cases=CASES, failure=None, coverage="graphs=20;largest=7;op/add=30;options/topo_nr per_call=5"):
    name = f"Slice/{prop.replace('.', '_')}_{sl}"
    props = dict(property=prop, slice=sl, seed=1000 + sl, cases=cases, shard=sl,
                 replay=f"bazel run -c opt //proptests:fuzz -- --property {prop} --batch-seed {1000 + sl}",
                 coverage=coverage)
    body = "".join(f'<property name="{k}" value="{v}"/>' for k, v in props.items())
    fail = f'<failure message="{failure}"/>' if failure else ""
    return f'<testcase name="{name}" classname="AllProperties/Campaign"><properties>{body}</properties>{fail}</testcase>'


class CampaignReportTest(unittest.TestCase):
    PROPS = ["A.One", "B.Two"]

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        with open(os.path.join(self.dir, "expected.txt"), "w") as f:
            f.write("AllProperties/Campaign.\n")
            for p in self.PROPS:
                for sl in range(2):
                    f.write(f"  Slice/{p.replace('.', '_')}_{sl}  # GetParam() = ...\n")

    def write_shard(self, shard, cases, target="testlogs", count=2):
        path = os.path.join(self.dir, target, f"shard_{shard}_of_{count}")
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "test.xml"), "w") as f:
            f.write(f'<?xml version="1.0"?><testsuites><testsuite>{"".join(cases)}</testsuite></testsuites>')

    def run_report(self, *flags, targets=("testlogs",)):
        out = io.StringIO()
        md = os.path.join(self.dir, "report.md")
        testlogs = [f"--testlogs={os.path.join(self.dir, t)}" for t in targets]
        with contextlib.redirect_stdout(out):
            rc = campaign_report.main(testlogs + ["--expected", os.path.join(self.dir, "expected.txt"),
                                                  "--cases", str(CASES), "--out", md, *flags])
        with open(md) as f:
            self.assertEqual(f.read().rstrip("\n"), out.getvalue().rstrip("\n"))
        return rc, out.getvalue()

    def complete_run(self):
        for shard in (1, 2):
            self.write_shard(shard, [testcase(p, shard - 1) for p in self.PROPS])

    def test_complete_run_merges_every_shard(self):
        self.complete_run()
        rc, text = self.run_report()
        self.assertEqual(rc, 0)
        self.assertIn("80 cases in 4 slices of 4 expected (20 cases per slice), 2 shards: "
                      "0 failed, 0 missing, 0 duplicated, 0 short.", text)
        self.assertIn("graphs generated: 80, largest: 7", text)
        self.assertRegex(text, r"\n  add +120\n")
        self.assertRegex(text, r"\n  topo_nr per_call +20\n")
        self.assertRegex(text, r"\n  A\.One +40\n")
        self.assertNotIn("## Failures", text)

    def test_missing_slice_is_lost(self):
        self.write_shard(1, [testcase(p, 0) for p in self.PROPS])
        self.write_shard(2, [testcase("A.One", 1)])
        rc, text = self.run_report()
        self.assertEqual(rc, 2)
        self.assertIn("- missing: Slice/B_Two_1", text)

    def test_lost_shard_is_lost(self):
        self.write_shard(1, [testcase(p, 0) for p in self.PROPS])
        rc, text = self.run_report()
        self.assertEqual(rc, 2)
        self.assertIn("2 missing", text)

    def test_every_shard_must_report(self):
        self.complete_run()
        rc, text = self.run_report("--shards", "3")
        self.assertEqual(rc, 2)
        self.assertIn("2 of 3 shards reported.", text)
        self.assertIn("- shard 3 of 3 did not report", text)
        rc, text = self.run_report("--shards", "2")
        self.assertEqual(rc, 0)
        self.assertIn("2 of 2 shards reported.", text)

    def test_parts_of_a_campaign_are_numbered_campaign_wide(self):
        # 4 shards as 2 targets of 2 (campaign.bzl's NAME_part_P): slice k of each property in shard k.
        for part in (0, 1):
            for shard in (1, 2):
                sl = part * 2 + shard - 1
                self.write_shard(shard, [testcase(p, sl) for p in self.PROPS], target=f"c_4_shards_part_{part}")
        with open(os.path.join(self.dir, "expected.txt"), "a") as f:
            f.writelines(f"  Slice/{p.replace('.', '_')}_{sl}\n" for p in self.PROPS for sl in (2, 3))
        bep = os.path.join(self.dir, "bep.json")
        with open(bep, "w") as f:
            for part in (0, 1):
                label = f"//proptests:c_4_shards_part_{part}"
                f.write(json.dumps({"id": {"testSummary": {"label": label}}, "testSummary": {"shardCount": 2}}) + "\n")
                for shard in (1, 2):
                    f.write(json.dumps({"id": {"testResult": {"label": label, "shard": shard, "attempt": 1}},
                                        "testResult": {"status": "PASSED" if part == 0 else f"P{shard}",
                                                       "executionInfo": {"strategy": "remote"}}}) + "\n")
        targets = ("c_4_shards_part_1", "c_4_shards_part_0")
        rc, text = self.run_report("--shards", "4", "--bep", bep, targets=targets)
        self.assertEqual(rc, 0)
        self.assertIn("160 cases in 8 slices of 8 expected (20 cases per slice), 4 shards: 0 failed", text)
        self.assertIn("4 of 4 shards reported.", text)
        self.assertIn("| 2 | 2 | 40 | 0 | remote | 1 | PASSED |", text)
        self.assertIn("| 3 | 2 | 40 | 0 | remote | 1 | P1 |", text)
        self.assertIn("| 4 | 2 | 40 | 0 | remote | 1 | P2 |", text)
        rc, text = self.run_report("--shards", "4", targets=targets[:1])
        self.assertEqual(rc, 2)
        self.assertIn("- shard 1 of 4 did not report", text)
        self.assertIn("- shard 2 of 4 did not report", text)

    def test_against_crashes_merge_by_signature(self):
        def against(shard, crashes):
            props = dict(property="AgainstPytorch", slice=shard, seed=1000 + shard, cases=CASES, crashes=crashes)
            body = "".join(f'<property name="{k}" value={quoteattr(str(v))}/>' for k, v in props.items())
            return f'<testcase name="Against/pytorch_{shard}"><properties>{body}</properties></testcase>'
        with open(os.path.join(self.dir, "expected.txt"), "w") as f:
            f.write("AgainstCampaign.\n  Against/pytorch_0\n  Against/pytorch_1\n")
        self.write_shard(1, [against(0, "signal: SIGSEGV in at::x=2\nhang: a=b; c=1")])
        self.write_shard(2, [against(1, "signal: SIGSEGV in at::x=3")])
        rc, text = self.run_report("--shards", "2")
        self.assertEqual(rc, 0)
        self.assertIn("- `signal: SIGSEGV in at::x`: 5 programs, shards 1, 2", text)
        self.assertIn("- `hang: a=b; c`: 1 programs, shards 1", text)
        self.assertIn("2 signatures;", text)

    def test_slice_run_twice_is_reported(self):
        self.complete_run()
        self.write_shard(2, [testcase(p, 1) for p in self.PROPS] + [testcase("A.One", 0)])
        rc, text = self.run_report()
        self.assertEqual(rc, 2)
        self.assertIn("- ran more than once: Slice/A_One_0", text)

    def test_short_slice_is_reported(self):
        self.complete_run()
        self.write_shard(2, [testcase("A.One", 1, cases=CASES - 1), testcase("B.Two", 1)])
        rc, text = self.run_report()
        self.assertEqual(rc, 2)
        self.assertIn("- Slice/A_One_1: 19 cases instead of 20", text)

    def test_failure_names_shard_seed_and_replay(self):
        self.complete_run()
        self.write_shard(2, [testcase("A.One", 1, cases=3, failure="Falsifiable after 4 tests"), testcase("B.Two", 1)])
        rc, text = self.run_report()
        self.assertEqual(rc, 1)
        self.assertIn("- A.One slice 1, shard 2, seed 1001: replay with "
                      "`bazel run -c opt //proptests:fuzz -- --property A.One --batch-seed 1001`", text)
        self.assertIn("Falsifiable after 4 tests", text)
        self.assertIn("| 2 | 2 | 23 | 1 |", text)


def write_junit(result, path):
    """One <testcase> per test: failures and errors carry their traceback."""
    bad = {test.id(): trace for test, trace in result.failures + result.errors}
    cases = []
    for test in result.tests:
        name = quoteattr(test.id().rsplit(".", 1)[-1])
        trace = bad.get(test.id())
        cases.append(f"<testcase classname=\"CampaignReportTest\" name={name}>"
                     + (f"<failure message={quoteattr(trace)}/>" if trace else "") + "</testcase>")
    with open(path, "w") as f:
        f.write(f'<?xml version="1.0"?><testsuites><testsuite name="CampaignReportTest" tests="{len(cases)}" '
                f'failures="{len(bad)}">{"".join(cases)}</testsuite></testsuites>\n')


class RecordingResult(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tests = []

    def startTest(self, test):
        super().startTest(test)
        self.tests.append(test)


if __name__ == "__main__":
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(CampaignReportTest)
    result = unittest.TextTestRunner(resultclass=RecordingResult, verbosity=2).run(suite)
    if os.environ.get("XML_OUTPUT_FILE"):
        write_junit(result, os.environ["XML_OUTPUT_FILE"])
    sys.exit(0 if result.wasSuccessful() else 1)
