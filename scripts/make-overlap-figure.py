#!/usr/bin/env python3
"""Writes figs/overlap_timeline.svg: one training step of gpt_train at --dp 2, as its --trace
records it, with one Allreduce after the backward (--bucket_mb 0) and with buckets of 1 MB
reduced during the backward (Part 15's, the reference's). Each rank has a row of computation (the
forward, the backward) and a row of time spent inside a Communicator call (the Allreduce, the
rings' Isend, Irecv and completions); the communication after the backward, which nothing hid,
is drawn darker. Runs gpt_train itself (the kit's build, reference code), on a quiet machine.

usage: scripts/make-overlap-figure.py BUILD_DIR [OUTPUT]   (default: figs/overlap_timeline.svg)
"""
import json
import os
import subprocess
import sys
import tempfile

from figure_svg import svg_opening, write_svg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if len(sys.argv) < 2:
    sys.exit(__doc__)
BUILD = sys.argv[1]
OUTPUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "figs", "overlap_timeline.svg")
STEP = 2  # the first step pays for warming up
RUNS = [("one Allreduce after the backward (--bucket_mb 0)", "0"),
        ("buckets of 1 MB reduced during the backward (--bucket_mb 1)", "1")]
COLORS = {"forward": "#d6e6f4", "backward": "#fbe3bf"}
STROKES = {"forward": "#4e79a7", "backward": "#e08a1e"}
HIDDEN, EXPOSED = "#9fb8cf", "#c0392b"


def step_events(bucket_mb, scratch):
    """The X events of step STEP, by rank, times in ms from the step's first event."""
    trace = os.path.join(scratch, "trace-%s.json" % bucket_mb)
    command = [os.path.join(BUILD, "dtk-mpirun"), "-n", "2"]
    command += ["--allow-run-as-root"] if os.geteuid() == 0 else []
    command += [os.path.join(BUILD, "gpt_train"), "--dp", "2", "--steps", str(STEP),
                "--eval_every", str(STEP), "--bucket_mb", bucket_mb, "--trace", trace]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(trace) as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("ph") == "X" and e.get("args", {}).get("step") == STEP]
    start = min(e["ts"] for e in events)
    by_rank = {}
    for e in events:
        by_rank.setdefault(e["pid"], []).append(
            (e["name"], e["cat"], (e["ts"] - start) / 1e3, e["dur"] / 1e3))
    return by_rank


def panel(y0, title, by_rank, x0, scale):
    """One run's rows; returns its elements and the communication it exposed, per rank (ms)."""
    parts = ['<text x="%d" y="%d" font-weight="bold">%s</text>' % (x0, y0, title)]
    exposed = {}
    for row, rank in enumerate(sorted(by_rank)):
        y = y0 + 14 + row * 52
        events = by_rank[rank]
        backward_end = max((t + d for n, c, t, d in events if n == "backward"), default=0)
        parts.append('<text x="%d" y="%d" text-anchor="end" font-size="12">rank %d</text>'
                     % (x0 - 8, y + 14, rank))
        parts.append('<text x="%d" y="%d" text-anchor="end" font-size="10" fill="#777777">'
                     'MPI</text>' % (x0 - 8, y + 36))
        exposed[rank] = 0.0
        for name, cat, t, d in events:
            if name in COLORS:
                parts.append('<rect x="%.1f" y="%d" width="%.1f" height="20" fill="%s" '
                             'stroke="%s"/>' % (x0 + t * scale, y, max(d * scale, 0.5),
                                                COLORS[name], STROKES[name]))
                if d * scale > 60:
                    parts.append('<text x="%.1f" y="%d" text-anchor="middle" font-size="11">%s'
                                 '</text>' % (x0 + (t + d / 2) * scale, y + 14, name))
            elif cat == "communication":
                after = t >= backward_end
                exposed[rank] += d if after else 0
                parts.append('<rect x="%.1f" y="%d" width="%.1f" height="12" fill="%s"/>'
                             % (x0 + t * scale, y + 26, max(d * scale, 0.8),
                                EXPOSED if after else HIDDEN))
    return parts, exposed


def main():
    with tempfile.TemporaryDirectory() as scratch:
        runs = [(title, step_events(mb, scratch)) for title, mb in RUNS]
    longest = max(t + d for _, by_rank in runs for events in by_rank.values()
                  for _, _, t, d in events)
    width, x0 = 960, 70
    scale = (width - x0 - 30) / longest
    elements = svg_opening(width, 420, "One step of gpt_train at --dp 2, as its trace records it",
                           ["the default model in float, step %d; under each rank, the time "
                            "it spent inside Communicator calls:" % STEP,
                            "grey-blue during the backward (hidden behind it), red after it "
                            "(exposed)"])
    y = 96
    for title, by_rank in runs:
        parts, exposed = panel(y, title, by_rank, x0, scale)
        elements += parts
        elements.append('<text x="%d" y="%d" font-size="11" fill="#555555">communication after '
                        'the backward: %s</text>'
                        % (x0, y + 128, ", ".join("rank %d %.1f ms" % (r, exposed[r])
                                                  for r in sorted(exposed))))
        print("%s: exposed %s" % (title, exposed))
        y += 150
    axis_y = y - 10
    elements.append('<line x1="%d" y1="%d" x2="%.1f" y2="%d" stroke="#999999"/>'
                    % (x0, axis_y, x0 + longest * scale, axis_y))
    tick = 100 if longest > 400 else 50
    for ms in range(0, int(longest) + 1, tick):
        elements.append('<text x="%.1f" y="%d" text-anchor="middle" font-size="10" '
                        'fill="#777777">%d ms</text>' % (x0 + ms * scale, axis_y + 14, ms))
    write_svg(OUTPUT, elements)


main()
