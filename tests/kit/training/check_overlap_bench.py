#!/usr/bin/env python3
"""Kit self-test of overlap_bench (assignment 4's Part 15 program), run against the reference: on
2 ranks and on 3 (odd ring, buckets smaller than the ring), small sizes, every table has its rows
and no result is wrong (the program checks its sums against MPI's and every attended block
against its owner's, and exits 1 otherwise); --what picks a table; a bad command line is one line
and exit 2. Timings are printed, never judged (the machine is shared).

usage: check_overlap_bench.py <overlap_bench> <mpirun> [mpirun flags...]
"""
import re
import subprocess
import sys

PROGRAM, MPIRUN = sys.argv[1], sys.argv[2:]
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def run(ranks, *flags):
    """ranks 1: started alone, without mpirun (whose own lines follow a non-zero exit)."""
    command = ([] if ranks == 1 else MPIRUN + ["-n", str(ranks)]) + [PROGRAM, *flags]
    return subprocess.run(command, capture_output=True, text=True), " ".join(command)


ROWS = {"buckets": ["compute", "after", "one ring", "buckets"],
        "ring": ["compute", "blocking", "pipelined"]}
SMALL = ["--layers", "5", "--width", "24", "--bucket_mb", "0.004", "--block_rows", "40",
         "--block_cols", "8", "--steps", "2"]

for ranks in (2, 3):
    done, command = run(ranks, *SMALL)
    check(done.returncode == 0, f"{command} exits 0 (got {done.returncode}: {done.stderr[-300:]})")
    for table, rows in ROWS.items():
        for row in rows:
            check(re.search(rf"^  {row} +[0-9.]+ +[0-9.]+ +[0-9.]+$", done.stdout, re.M),
                  f"{ranks} ranks: the {table} table has its '{row}' row")
    check("WRONG" not in done.stdout, f"{ranks} ranks: every result right")
    print(done.stdout)

done, command = run(2, *SMALL, "--what", "ring")
check(done.returncode == 0 and "Ring:" in done.stdout and "Gradient buckets" not in done.stdout,
      "--what ring prints the ring's table alone")

for flags, message in [(["--width", "0"], "--width"), (["--what", "all"], "--what expects"),
                       (["--bucket_mb"], "needs a value"), (["--speed", "2"], "unknown flag")]:
    done, command = run(1, *flags)
    lines = done.stderr.strip().splitlines()
    check(done.returncode == 2 and len(lines) == 1 and message in lines[0],
          f"{command}: one line naming {message!r}, exit 2 (got {done.returncode}: {lines})")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
