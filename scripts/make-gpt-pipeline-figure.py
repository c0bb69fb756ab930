#!/usr/bin/env python3
"""Writes figs/gpt_pipeline_bubble.svg: the GPT pipelined over 2 stages (gpt_train --pp 2, one
rank per core), each stage's measured bubble (the share of the schedules' time it waited, from
--report) against the number of micro-batches m, for GPipe, 1F1B and the interleaved 1F1B of
V = 2 chunks per stage (m even), beside the theory (p - 1)/(m + p - 1) and (p - 1)/(V m + p - 1).
It also prints the table it draws. The points are measured, not drawn by
hand: rerun it when the trainer changes, on a quiet machine.

usage: scripts/make-gpt-pipeline-figure.py [BUILD_DIR] [OUTPUT]
       (defaults: build/, figs/gpt_pipeline_bubble.svg)
"""
import json
import os
import subprocess
import sys
import tempfile
from xml.sax.saxutils import escape

from figure_svg import svg_opening, svg_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
OUTPUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "figs", "gpt_pipeline_bubble.svg")
PP, VIRTUAL, MICROBATCHES = 2, 2, (1, 2, 4, 8, 16)
SCHEDULES = ("gpipe", "1f1b", "interleaved")
MODEL = ["--layers", "4", "--seq", "64", "--batch_size", "32", "--steps", "20", "--threads", "1"]
# dtk-mpirun: mpirun with an Open MPI session directory of its own (cmake/dtk-mpirun.in).
MPIRUN = [os.path.join(BUILD, "dtk-mpirun"), "--allow-run-as-root", "--oversubscribe",
          "--timeout", "600", "-n", str(PP)]
COLOURS = {"gpipe": "#4e79a7", "1f1b": "#e15759", "interleaved": "#59a14f"}
LABELS = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": f"interleaved, V = {VIRTUAL}"}


def chunks(schedule):
    return VIRTUAL if schedule == "interleaved" else 1


def theory(m, v=1):
    return (PP - 1) / (v * m + PP - 1)


def runs(schedule):
    """The counts of micro-batches a schedule takes: interleaved, multiples of the stages."""
    return [m for m in MICROBATCHES if schedule != "interleaved" or m % PP == 0]


def measure(schedule, m):
    """Each stage's bubble, in stage order."""
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "report.json")
        subprocess.run(MPIRUN + [os.path.join(BUILD, "gpt_train"), "--pp", str(PP),
                                 "--microbatches", str(m), "--schedule", schedule,
                                 "--virtual", str(chunks(schedule)), "--report", report] + MODEL,
                       check=True, stdout=subprocess.DEVNULL)
        with open(report) as f:
            ranks = json.load(f)["ranks"]
    return [r["bubble"] for r in sorted(ranks, key=lambda r: r["pp_idx"])]


def svg(bubbles):
    width, height = 800, 470
    left, right, top, bottom = 80, 560, 90, 410
    x_of = {m: left + (right - left) * i / (len(MICROBATCHES) - 1)
            for i, m in enumerate(MICROBATCHES)}

    def y_of(share):
        return bottom - (bottom - top) * share / 0.6

    title = "The GPT's pipeline bubble on 2 stages, measured"
    out = svg_opening(width, height, title, [
        "gpt_train --pp 2 --microbatches m " + " ".join(MODEL) + ": each stage's waiting share"])
    for share in (0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6):  # the y axis
        y = y_of(share)
        out.append(f'  <line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#dddddd"/>'
                   f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{share:.1f}</text>')
    for m, x in x_of.items():  # the x axis
        out.append(f'  <text x="{x:.1f}" y="{bottom + 20}" text-anchor="middle">{m}</text>')
    out.append(f'  <text x="{(left + right) / 2:.0f}" y="{bottom + 42}" text-anchor="middle">'
               'micro-batches per step, m</text>')
    out.append(f'  <text x="22" y="{(top + bottom) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 22 {(top + bottom) / 2:.0f})">bubble: share of the '
               'schedule waited</text>')
    legend_y = top - 24
    for v, label, ms in ((1, "(p − 1)/(m + p − 1)", MICROBATCHES),
                         (VIRTUAL, f"(p − 1)/({VIRTUAL} m + p − 1)", runs("interleaved"))):
        points = " ".join(f"{x_of[m]:.1f},{y_of(theory(m, v)):.1f}" for m in ms)
        colour = "#222222" if v == 1 else COLOURS["interleaved"]
        out.append(f'  <polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2" '
                   'stroke-dasharray="5 4" stroke-opacity="0.6"/>')
        legend_y += 24
        out.append(f'  <line x1="{right + 20}" y1="{legend_y}" x2="{right + 44}" y2="{legend_y}" '
                   f'stroke="{colour}" stroke-width="2" stroke-dasharray="5 4" '
                   f'stroke-opacity="0.6"/><text x="{right + 50}" y="{legend_y + 4}">'
                   f'{escape(label)}</text>')
    for schedule in SCHEDULES:
        for stage, dash in ((0, ""), (1, ' stroke-dasharray="2 3"')):
            ms = runs(schedule)
            values = [bubbles[schedule, m][stage] for m in ms]
            points = " ".join(f"{x_of[m]:.1f},{y_of(v):.1f}" for m, v in zip(ms, values))
            colour = COLOURS[schedule]
            out.append(f'  <polyline points="{points}" fill="none" stroke="{colour}" '
                       f'stroke-width="2"{dash}/>')
            for m, v in zip(ms, values):
                out.append(f'  <circle cx="{x_of[m]:.1f}" cy="{y_of(v):.1f}" r="3.5" '
                           f'fill="{colour}"/>')
            legend_y += 24
            label = f"{LABELS[schedule]}, stage {stage}"
            out.append(f'  <line x1="{right + 20}" y1="{legend_y}" x2="{right + 44}" '
                       f'y2="{legend_y}" stroke="{colour}" stroke-width="2"{dash}/>'
                       f'<text x="{right + 50}" y="{legend_y + 4}">{escape(label)}</text>')
    out.append(f'  <text x="{right + 20}" y="{legend_y + 36}" font-size="12" fill="#555555">'
               'Stage 1 holds the head,</text>')
    out.append(f'  <text x="{right + 20}" y="{legend_y + 52}" font-size="12" fill="#555555">'
               'the heavier stage: it waits less.</text>')
    return svg_text(out)


bubbles = {(s, m): measure(s, m) for s in SCHEDULES for m in runs(s)}
print(f"{'m':>3} {'theory':>7} {'V=2':>7} " + " ".join(f"{s[:5] + ' s' + str(p):>9}"
                                                       for s in SCHEDULES for p in range(PP)))
for m in MICROBATCHES:
    cells = [f"{bubbles[s, m][p]:>9.3f}" if (s, m) in bubbles else f"{'-':>9}"
             for s in SCHEDULES for p in range(PP)]
    print(f"{m:>3} {theory(m):>7.3f} {theory(m, VIRTUAL):>7.3f} " + " ".join(cells))
with open(OUTPUT, "w") as f:
    f.write(svg(bubbles))
print(f"wrote {OUTPUT}")
