#!/usr/bin/python3
"""Self-test of how dtk-grade runs a submission's tests: all of them in one launch of the runner
on as many ranks as the largest needs (each process pays Open MPI's start-up once), and a
runner that waits asleep (it exports its own sched_yield, which Open MPI's calls bind to).

usage: one_launch.py <dtk-grade> <runner> <submission dir> -- <dtk-grade options>...
"""
import os
import re
import shutil
import subprocess
import sys


def fail(message):
    print(f"grader self-test one_launch: {message}", file=sys.stderr)
    sys.exit(1)


def main(grader, runner, submission, options):
    symbols = subprocess.run(["nm", "-D", "--defined-only", runner], capture_output=True,
                             text=True, check=True).stdout
    if not re.search(r" T sched_yield$", symbols, re.M):
        fail(f"{runner} does not export sched_yield: Open MPI's waiting ranks would spin")
    done = subprocess.run([grader, submission, "--keep-scratch", *options], capture_output=True,
                          text=True, errors="replace")
    print(done.stdout + done.stderr)
    kept = re.search(r"Scratch directory kept: (\S+)", done.stdout + done.stderr)
    if done.returncode != 0 or not kept:
        fail(f"dtk-grade exited with {done.returncode}, or kept no scratch directory")
    try:
        launches = sorted(os.listdir(os.path.join(kept.group(1), "runs")))
    finally:
        shutil.rmtree(kept.group(1), ignore_errors=True)
    if len(launches) != 1:
        fail(f"the tests ran in {len(launches)} launches ({', '.join(launches)}), expected one")
    print(f"one launch: {launches[0]}")


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[4] != "--":
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5:])
