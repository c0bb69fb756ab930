#!/usr/bin/env python3
"""No measured figure in the kit's prose that docs/measurements.md does not hold.

usage: check_measured_figures.py KIT_ROOT

A time or a speed measured on some machine goes stale by hand: the benchmarks write them into
docs/measurements.md (bench/record.sh), and the prose quotes that file or links to it. This scans
the prose of README.md, handout.md and docs/ (not docs/handouts/, rendered from handout.md; not
code blocks, whose sample outputs show times as `...`) for figures with a unit of
time or speed (`0.0153 s per step`, `5,827 and 5,892 tokens/s`, `12 ms`, `181 GFLOP/s`) and
fails on each whose numbers docs/measurements.md does not print. A GPU's datasheet figures
(989 TFLOP/s) are the kit's cluster configs' (starter/src/planning/configs/), not measurements:
those numbers pass too.
"""
import glob
import re
import sys

ROOT = sys.argv[1]
NUMBER = r"\d[\d,]*(?:\.\d+)?"
UNITS = r"(?:tokens/s|GFLOP/s|TFLOP/s|GB/s|MB/s|ms|µs|us|s per step|s a step|s an epoch|s a public case)"
FIGURE = re.compile(rf"({NUMBER})(?:\s+(?:to|and)\s+|\s*[-–]\s*)?({NUMBER})?\s+{UNITS}(?![\w/])")


def prose(path):
    """(line number, line) of the prose: fenced and indented code left out."""
    fenced = False
    with open(path) as file:
        for number, line in enumerate(file, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced and not line.startswith("    "):
                yield number, line


def printed(text):
    """Every number `text` holds, thousands separators dropped."""
    return {n.replace(",", "") for n in re.findall(NUMBER, text)}


def main():
    recorded = set()
    for path in [f"{ROOT}/docs/measurements.md"] + glob.glob(
            f"{ROOT}/starter/src/planning/configs/*.json"):
        with open(path) as file:
            recorded |= printed(file.read())
    stale = []
    documents = ["README.md", "handout.md"] + sorted(
        path[len(ROOT) + 1:] for path in glob.glob(f"{ROOT}/docs/**/*.md", recursive=True)
        if not path.endswith("/measurements.md") and "/docs/handouts/" not in path)
    for name in documents:
        lines = list(prose(f"{ROOT}/{name}"))
        # A figure may break across two lines of a paragraph: read each line with the next.
        for (number, line), (_, following) in zip(lines, lines[1:] + [(0, "")]):
            joined = line.rstrip("\n") + " " + following.lstrip()
            for match in FIGURE.finditer(joined):
                if match.start() >= len(line):
                    break  # the next line's own, read with it
                missing = [n for n in match.groups() if n and n.replace(",", "") not in recorded]
                if missing:
                    stale.append(f"{name}:{number}: \"{match.group(0)}\": "
                                 f"{', '.join(missing)} is in no section of docs/measurements.md (nor a cluster config)")
    for problem in stale:
        print("FAIL: " + problem)
    if stale:
        print("A measured figure in the prose must be one a benchmark recorded (bench/, which "
              "writes docs/measurements.md): quote that section, or link to it instead.")
        return 1
    print(f"ok: every measured figure of {len(documents)} documents is one docs/measurements.md "
          "holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
