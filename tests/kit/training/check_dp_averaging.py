#!/usr/bin/env python3
"""Kit self-test of dp_averaging (assignment 4's 14.5 program), run against the reference: on
uneven shares, gradient averaging lands on one rank's weights (to rounding) whatever the optimizer;
weight averaging does too with SGD averaged every step, and not with Adam or with local steps
(the handout's measured table says the same); the mean of the ranks' means is not, on uneven
shares; a share of 0 changes nothing; a bad command line is one line and exit 2. The handout's
table of 14.5 is what these runs print (its cells above rounding to the 2 digits shown, its
rounding cells below 1e-12).

usage: check_dp_averaging.py <handout.md> <dp_averaging> <mpirun> [mpirun flags...]
"""
import re
import subprocess
import sys

HANDOUT, PROGRAM, MPIRUN = sys.argv[1], sys.argv[2], sys.argv[3:]
failures = []


def run(ranks, *flags):
    """ranks 1: started alone, without mpirun (which takes 2 s to report a non-zero exit)."""
    command = ([] if ranks == 1 else MPIRUN + ["-n", str(ranks)]) + [PROGRAM, *flags]
    return subprocess.run(command, capture_output=True, text=True), " ".join(command)


def distances(ranks, *flags):
    """{"gradient averaging": |w - w1| / |w1|, "weight averaging": ...} of one run."""
    done, command = run(ranks, *flags)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: {command} exited {done.returncode}\n{done.stdout}{done.stderr}")
    found = dict(re.findall(r"^(gradient averaging|weight averaging|mean of the means)\s+(\S+)",
                            done.stdout, re.M))
    if len(found) != 3:
        raise SystemExit(f"FAIL: {command} printed no table:\n{done.stdout}")
    return {name: float(value) for name, value in found.items()}


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


ROUNDING, APART = 1e-12, 1e-6
measured = {}  # the handout's columns: flags -> distances
for ranks, flags, weights_equal in [
        (3, [], True),
        (3, ["--optimizer", "adam"], False),
        (3, ["--local_steps", "4"], False),
        (2, ["--shares", "0.9,0.1", "--optimizer", "adam", "--local_steps", "3"], False),
        (3, ["--shares", "0.6,0,0.4"], True),  # a rank without examples
]:
    d = distances(ranks, *flags)
    measured[" ".join(flags)] = d
    label = f"{ranks} ranks {' '.join(flags) or '(defaults)'}"
    check(d["gradient averaging"] < ROUNDING,
          f"{label}: gradient averaging is one rank's weights ({d['gradient averaging']:.1e})")
    check(not d["mean of the means"] < APART,  # NaN too, with a rank of no examples
          f"{label}: the mean of the ranks' means is not ({d['mean of the means']:.1e})")
    if weights_equal:
        check(d["weight averaging"] < ROUNDING,
              f"{label}: weight averaging is too ({d['weight averaging']:.1e})")
    else:
        check(d["weight averaging"] > APART,
              f"{label}: weight averaging is not ({d['weight averaging']:.1e})")

# The handout's table: its rows, and its columns in the order of the runs above.
ROWS = {"gradient averaging": "gradient averaging", "weight averaging": "weight averaging",
        "mean of the ranks' means": "mean of the means"}
COLUMNS = ["", "--optimizer adam", "--local_steps 4"]
table = {}
for line in open(HANDOUT, encoding="utf-8"):
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    if cells[0] in ROWS and len(cells) == 1 + len(COLUMNS):
        table[ROWS[cells[0]]] = cells[1:]
check(len(table) == len(ROWS), f"the handout has the table's {len(ROWS)} rows ({len(table)})")
for row, cells in table.items():
    for flags, cell in zip(COLUMNS, cells):
        value = measured[flags][row]
        shown = float(cell)
        same = value < ROUNDING and shown < ROUNDING if shown < ROUNDING else f"{value:.1e}" == cell
        check(same, f"handout: {row}, '{flags or 'defaults'}': {cell}, measured {value:.1e}")

for ranks, flags, says in [
        (2, ["--shares", "0.5,0.3,0.2"], "--shares gives 3 fractions for 2 ranks"),
        (1, ["--shares", "0.5,0.6"], "--shares gives 2 fractions for 1 rank:"),
        (1, ["--shares", "1.1"], "--shares sum to 1.100000, not 1"),
        (1, ["--optimizer", "lion"], "--optimizer expects adam or sgd, got 'lion'"),
        (1, ["--steps", "0"], "--steps expects a positive integer, got '0'"),
        (1, ["--shares"], "--shares needs a value"),
        (1, ["--bucket"], "unknown flag '--bucket'"),
]:
    done, command = run(ranks, *flags)
    # mpirun adds lines of its own about the exit status; the program's own is one line.
    lines = [line for line in done.stderr.splitlines() if line.startswith("dp_averaging: ")]
    check(done.returncode == 2 and len(lines) == 1 and says in lines[0],
          f"{' '.join(flags)}: one line naming it, exit 2 (got {done.returncode}: {lines})")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("dp_averaging: every check passed")
