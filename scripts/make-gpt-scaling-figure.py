#!/usr/bin/env python3
"""Writes figs/gpt_scaling.svg: the labs' scaling plots, measured. gpt_train on the same global
batch (strong scaling) with 1, 2, 4 ranks of data parallelism (--dp W) and of pipeline
parallelism (--pp W, 1F1B, 8 micro-batches), one thread per rank: tokens per second and the
step's time against the world size W (each the median of REPEATS runs, taken in turns), beside
perfect scaling from one rank. Worlds with more
ranks than the machine has cores are drawn hollow: their ranks take turns on the cores, so they
measure the scheduler, not the parallelism. It prints the table it draws; rerun it on a quiet
machine (it prints the load average before and after).

usage: scripts/make-gpt-scaling-figure.py [BUILD_DIR] [OUTPUT]
       (defaults: build/, figs/gpt_scaling.svg)
"""
import json
import math
import os
import subprocess
import sys
import tempfile
from xml.sax.saxutils import escape

from figure_svg import svg_opening, svg_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
OUTPUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "figs", "gpt_scaling.svg")
WORLDS = (1, 2, 4)
CORES = os.cpu_count() or 1
MODEL = ["--layers", "4", "--seq", "64", "--batch_size", "32", "--steps", "12", "--threads", "1"]
LAYOUTS = {"dp": lambda w: ["--dp", str(w)],
           "pp": lambda w: ["--pp", str(w), "--microbatches", "8"] if w > 1 else []}
COLOURS = {"dp": "#4e79a7", "pp": "#e15759"}
LABELS = {"dp": "data parallel (--dp W)", "pp": "pipeline (--pp W, 1F1B, m = 8)"}
REPEATS = 3


def measure(layout, world):
    """(tokens per second, seconds per step) of one run."""
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "report.json")
        # dtk-mpirun: mpirun with an Open MPI session directory of its own.
        subprocess.run([os.path.join(BUILD, "dtk-mpirun"), "--allow-run-as-root",
                        "--oversubscribe", "--timeout", "600", "-n", str(world),
                        os.path.join(BUILD, "gpt_train")] + LAYOUTS[layout](world) + MODEL +
                       ["--report", report], check=True, stdout=subprocess.DEVNULL)
        with open(report) as f:
            r = json.load(f)
    return r["tokens_per_second"], r["seconds"] / r["steps"]


def nice_step(top):
    """A step of 1, 2 or 5 times a power of ten that cuts 0 .. top into at most 6 ticks."""
    step = 10 ** math.floor(math.log10(top / 6))
    for factor in (1, 2, 5, 10):
        if top / (step * factor) <= 6:
            return step * factor
    return step * 10


def panel(x0, title, values, ideal, fmt, highest):
    """One plot, 300 wide: `values[layout]` by world size, `ideal` by world size."""
    step = nice_step(highest)
    ticks = math.ceil(highest / step)
    top_value = ticks * step
    left, right, top, bottom = x0 + 60, x0 + 330, 110, 380
    x_of = {w: left + (right - left) * i / (len(WORLDS) - 1) for i, w in enumerate(WORLDS)}

    def y_of(v):
        return bottom - (bottom - top) * v / top_value

    out = [f'  <text x="{(left + right) / 2:.0f}" y="{top - 14}" text-anchor="middle" '
           f'font-weight="bold">{escape(title)}</text>']
    for i in range(ticks + 1):
        v = step * i
        out.append(f'  <line x1="{left}" y1="{y_of(v):.1f}" x2="{right}" y2="{y_of(v):.1f}" '
                   f'stroke="#dddddd"/><text x="{left - 8}" y="{y_of(v) + 4:.1f}" '
                   f'text-anchor="end" font-size="11">{fmt(v)}</text>')
    for w, x in x_of.items():
        out.append(f'  <text x="{x:.1f}" y="{bottom + 20}" text-anchor="middle">{w}</text>')
    out.append(f'  <text x="{(left + right) / 2:.0f}" y="{bottom + 40}" text-anchor="middle">'
               'world size W (ranks)</text>')
    points = " ".join(f"{x_of[w]:.1f},{y_of(ideal[w]):.1f}" for w in WORLDS)
    out.append(f'  <polyline points="{points}" fill="none" stroke="#222222" stroke-width="1.5" '
               'stroke-dasharray="5 4" stroke-opacity="0.6"/>')
    for layout, by_world in values.items():
        colour = COLOURS[layout]
        points = " ".join(f"{x_of[w]:.1f},{y_of(by_world[w]):.1f}" for w in WORLDS)
        out.append(f'  <polyline points="{points}" fill="none" stroke="{colour}" '
                   'stroke-width="2"/>')
        for w in WORLDS:
            fill = colour if w <= CORES else "#ffffff"
            out.append(f'  <circle cx="{x_of[w]:.1f}" cy="{y_of(by_world[w]):.1f}" r="4.5" '
                       f'fill="{fill}" stroke="{colour}" stroke-width="2"/>')
    return out


def svg(tokens, steps):
    width, height = 760, 500
    out = svg_opening(width, height, "The GPT's scaling on this machine, measured", [
        "gpt_train " + " ".join(MODEL) + ": the same global batch on W ranks, one thread each",
        f"the median of {REPEATS} runs; "
        f"this machine has {CORES} cores: hollow points oversubscribe them (ranks take turns)"])
    ideal_tokens = {w: tokens["dp"][1] * w for w in WORLDS}
    ideal_steps = {w: steps["dp"][1] / w for w in WORLDS}
    top_tokens = max(max(ideal_tokens.values()), max(max(v.values()) for v in tokens.values()))
    top_steps = max(max(v.values()) for v in steps.values())
    out += panel(20, "tokens per second", tokens, ideal_tokens, lambda v: f"{v:,.0f}", top_tokens)
    out += panel(390, "seconds per step", steps, ideal_steps, lambda v: f"{v:.2f}", top_steps)
    legend = [(LABELS[layout], COLOURS[layout], "") for layout in LAYOUTS]
    legend.append(("perfect scaling from one rank", "#222222", ' stroke-dasharray="5 4"'))
    for i, (label, colour, dash) in enumerate(legend):
        x = 40 + 235 * i
        out.append(f'  <line x1="{x}" y1="{height - 40}" x2="{x + 24}" y2="{height - 40}" '
                   f'stroke="{colour}" stroke-width="2"{dash}/><text x="{x + 30}" '
                   f'y="{height - 36}" font-size="12">{escape(label)}</text>')
    return svg_text(out)


def main():
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    runs = {(layout, w): [] for layout in LAYOUTS for w in WORLDS}
    for _ in range(REPEATS):  # in turns, so that a burst of load spreads over every layout
        for layout, w in runs:
            runs[layout, w].append(measure(layout, w))
    median = lambda values: sorted(values)[len(values) // 2]
    tokens = {layout: {w: median([t for t, _ in runs[layout, w]]) for w in WORLDS}
              for layout in LAYOUTS}
    steps = {layout: {w: median([s for _, s in runs[layout, w]]) for w in WORLDS}
             for layout in LAYOUTS}
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"{'layout':>6} {'W':>2} {'tokens/s':>9} {'(runs)':>20} {'s/step':>7} {'speed-up':>8}")
    for layout in LAYOUTS:
        for w in WORLDS:
            each = "/".join(f"{t:.0f}" for t, _ in runs[layout, w])
            print(f"{layout:>6} {w:>2} {tokens[layout][w]:>9.0f} {each:>20} "
                  f"{steps[layout][w]:>7.3f} {tokens[layout][w] / tokens[layout][1]:>8.2f}"
                  + ("" if w <= CORES else "  (more ranks than cores)"))
    with open(OUTPUT, "w") as f:
        f.write(svg(tokens, steps))
    print(OUTPUT)


if __name__ == "__main__":
    main()
