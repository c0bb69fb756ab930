#!/usr/bin/env python3
"""Writes one benchmark's figures into docs/measurements.md, replacing its earlier section.

usage: record_measurement.py MEASUREMENTS_MD NAME TITLE COMMAND LOAD_BEFORE COMMIT OUTPUT_FILE

The file is never edited by hand: each section is what a benchmark printed, under a stamp of
when, on what machine, at what load, from which commit and with which command it was measured
(bench/record.sh calls this). Sections stay in the order of their NAME, so a re-run moves
nothing but its own lines.
"""
import datetime
import hashlib
import os
import re
import subprocess
import sys

HEADER = """# Measurements

Every figure below was written by the benchmark that measured it (`bench/*.sh`, through
`bench/record.sh`), never by hand: re-run a benchmark to refresh its section. A figure from a
busy machine (its load is in the stamp) is a figure of that load.
"""
# A section: its name, its text, and the checksum of that text, which a hand edit breaks
# (tests/kit/bench/check_measurements.py checks every section's).
SECTION = re.compile(r"<!-- measurement: (?P<name>[a-z0-9_-]+) -->\n(?P<text>.*?)"
                     r"<!-- end of measurement (?P<sum>[0-9a-f]{16}) -->\n", re.S)


def checksum(text):
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def machine():
    """The processor, its cores and memory, as `lscpu` and /proc/meminfo tell."""
    model = "unknown processor"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    with open("/proc/meminfo") as meminfo:
        kib = int(meminfo.readline().split()[1])
    return f"{model}, {os.cpu_count()} cores, {kib / 2**20:.0f} GiB"


def section(name, title, command, load_before, commit, output):
    with open("/proc/loadavg") as loadavg:
        load_after = loadavg.read().split()[0]
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"## {title}\n\n"
            f"Measured {stamp} on {machine()}; load {load_before} before, {load_after} after; "
            f"commit {commit}.\n\n"
            f"```sh\n{command}\n```\n\n```\n{output.rstrip()}\n```\n")
    return f"<!-- measurement: {name} -->\n{text}<!-- end of measurement {checksum(text)} -->\n"


def main():
    if len(sys.argv) != 8:
        sys.exit(__doc__.split("\n\n")[1])
    path, name, title, command, load_before, commit, output_file = sys.argv[1:]
    if not re.fullmatch(r"[a-z0-9_-]+", name):
        sys.exit(f"record_measurement.py: bad name {name!r} (lower-case letters, digits, - and _)")
    with open(output_file) as output:
        new = section(name, title, command, load_before, commit, output.read())
    sections = {}
    if os.path.exists(path):
        with open(path) as old:
            sections = {match["name"]: match[0] for match in SECTION.finditer(old.read())}
    sections[name] = new
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as out:
        out.write(HEADER + "".join("\n" + sections[key] for key in sorted(sections)))
    os.replace(path + ".tmp", path)
    # On stderr: a benchmark's standard output is its data (planner_validation.sh reads
    # planner_calibration.sh's JSON from it).
    print(f"Recorded in {os.path.relpath(path)}: {title}", file=sys.stderr)


if __name__ == "__main__":
    main()
