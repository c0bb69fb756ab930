#!/usr/bin/env python3
"""docs/measurements.md holds only what the benchmarks wrote, and the recorder writes it right.

usage: check_measurements.py KIT_ROOT

1. Every section of the kit's docs/measurements.md carries the checksum the recorder wrote:
   a hand edit of a figure breaks it (re-run the benchmark instead).
2. bench/record_measurement.py, run on a scratch file: a new section is added, a second one is
   kept in name order, recording the first again replaces it and leaves the second untouched.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
sys.path.insert(0, os.path.join(ROOT, "bench"))
from record_measurement import SECTION, checksum  # noqa: E402

failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def sections(path):
    with open(path) as measurements:
        return {match["name"]: match for match in SECTION.finditer(measurements.read())}


def record(path, name, output):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as figures:
        figures.write(output)
    subprocess.run([os.path.join(ROOT, "bench", "record_measurement.py"), path, name,
                    f"Title of {name}", f"bench/{name}.sh --flag", "0.50", "abc1234", figures.name],
                   check=True, capture_output=True)
    os.unlink(figures.name)


kit_file = os.path.join(ROOT, "docs", "measurements.md")
if os.path.exists(kit_file):
    for name, match in sections(kit_file).items():
        check(checksum(match["text"]) == match["sum"],
              f"docs/measurements.md, section {name}: as its benchmark wrote it (checksum "
              f"{match['sum']}; edited by hand? re-run the benchmark)")

with tempfile.TemporaryDirectory() as scratch:
    path = os.path.join(scratch, "measurements.md")
    record(path, "zeta", "zeta: 1.0 s\n")
    record(path, "alpha", "alpha: 2.0 s\n")
    first = sections(path)
    check(list(first) == ["alpha", "zeta"], f"sections in name order: {list(first)}")
    record(path, "alpha", "alpha: 3.0 s\n")
    second = sections(path)
    check("alpha: 3.0 s" in second["alpha"]["text"] and "2.0 s" not in second["alpha"]["text"],
          "recording again replaces the section")
    check(second["zeta"][0] == first["zeta"][0], "and leaves the other section as it was")
    stamp = re.search(r"Measured \d{4}-\d\d-\d\d \d\d:\d\d UTC on .+, \d+ cores, \d+ GiB; "
                      r"load 0.50 before, [0-9.]+ after; commit abc1234\.", second["alpha"]["text"])
    check(stamp is not None, "the stamp says when, on what machine, at what load, which commit")
    check("bench/alpha.sh --flag" in second["alpha"]["text"], "and with which command")
    with open(path) as text:
        edited = text.read().replace("zeta: 1.0 s", "zeta: 0.5 s")
    with open(path, "w") as text:
        text.write(edited)
    zeta = sections(path)["zeta"]
    check(checksum(zeta["text"]) != zeta["sum"], "a figure edited by hand breaks its checksum")

sys.exit(1 if failures else 0)
