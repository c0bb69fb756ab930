#!/usr/bin/python3
"""Self-test of dtk-grade's failure path: when the grader itself fails (here: a manifest that is
not JSON), it still writes results.json (score 0, the error for the course staff) and a
totals.json of nothing graded, and exits 1.

usage: internal_error.py <dtk-grade> <work dir> <submission dir>
"""
import json
import os
import re
import shutil
import subprocess
import sys


def fail(message):
    print(f"grader self-test internal_error: {message}", file=sys.stderr)
    sys.exit(1)


def main(grader, work, submission):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    manifest, results = os.path.join(work, "manifest.json"), os.path.join(work, "results.json")
    totals = os.path.join(work, "totals.json")
    with open(manifest, "w") as file:
        file.write("{ this is not JSON")
    grading = [grader, submission, "--manifest", manifest, "--results", results]
    done = subprocess.run(grading, capture_output=True, text=True, errors="replace")
    print(done.stdout + done.stderr)
    if done.returncode != 1:
        fail(f"dtk-grade exited with {done.returncode}, expected 1")
    if not os.path.exists(results):
        fail("no results.json")
    with open(results) as file:
        text = file.read()
    written = json.loads(text)
    if written["score"] != 0 or not re.match(
            r"Internal error, please tell the course staff: .*not valid JSON", written["output"], re.S):
        fail(f"results.json should give 0 and the error, holds:\n{text}")
    # And no totals.json of an earlier grading beside it: one that says nothing was graded.
    with open(totals, "w") as file:
        file.write('{"parts": {"1": {"score": 10, "max": 10}}}')
    subprocess.run(grading, capture_output=True)
    with open(totals) as file:
        text = file.read()
    parts = json.loads(text).get("parts")
    if not isinstance(parts, dict) or parts:
        fail(f"totals.json should say that nothing was graded, holds:\n{text}")


if __name__ == "__main__":
    main(*sys.argv[1:])
