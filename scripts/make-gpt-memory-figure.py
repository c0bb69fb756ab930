#!/usr/bin/env python3
"""Writes figs/gpt_memory.svg: the memory of one of 4 data-parallel ranks training gpt_train's
default GPT, by category (parameters, gradients, Adam's states, activations, the step's other
buffers), in float and in bf16 at each ZeRO stage (--zero 0 to 3), with each recomputation
(--recompute none, selective, full): measured (the bars: --report's peak_bytes of rank 0), and the
model states counted from the shape (the dashed mark: Part 9.1's terms, 2 + 2 + 12 bytes a value
in bf16, ZeRO's shards ceil(n / p); bf16 at stage 3 is FSDP's, fp32 shards). Every bar
is a run: rerun this script when the trainer changes.

usage: scripts/make-gpt-memory-figure.py [BUILD_DIR] [OUTPUT]
       (defaults: build/, figs/gpt_memory.svg)
"""
import json
import os
import subprocess
import sys
import tempfile

from figure_svg import svg_opening, write_svg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
OUTPUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "figs", "gpt_memory.svg")
DP, STEPS = 4, 2
MPIRUN = [os.path.join(BUILD, "dtk-mpirun"), "--allow-run-as-root", "--oversubscribe",
          "--timeout", "600", "-n", str(DP)]
CATEGORIES = (("parameters", "#4e79a7"), ("gradients", "#f28e2b"), ("optimizer", "#59a14f"),
              ("activations", "#e15759"), ("transient", "#bab0ac"))
STATES = ("parameters", "gradients", "optimizer")
MIB = 1 << 20


def measure(dtype, zero, recompute, scratch):
    report = os.path.join(scratch, "%s-zero%d-%s.json" % (dtype, zero, recompute))
    subprocess.run(MPIRUN + [os.path.join(BUILD, "gpt_train"), "--dp", str(DP), "--dtype", dtype,
                             "--zero", str(zero), "--recompute", recompute, "--steps", str(STEPS),
                             "--report", report], check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        return json.load(f)


def figure(runs):
    left, top, row, width = 300, 130, 46, 1150
    right = width - 130
    widest = max(sum(r["ranks"][0]["peak_bytes"][c] for c, _ in CATEGORIES)
                 for _, _, _, r in runs)
    scale = (right - left) / widest
    model = runs[0][3]["model"]
    height = top + row * len(runs) + 30
    out = svg_opening(width, height, "Memory per rank by category: gpt_train's GPT on %d "
                      "data-parallel ranks, float and bf16, Adam" % DP,
                      ["gpt_train --dp %d --dtype D --zero Z --recompute R --steps %d --report: "
                       "rank 0's peak_bytes (%d layers, h %d, context %d, batch %d; %.2f M "
                       "parameters)" % (DP, STEPS, model["layers"], model["hidden"],
                                        model["seq_len"], runs[0][3]["batch_size"],
                                        model["parameters"] / 1e6),
                       "Bars measured; the dashed mark: the model states counted from the shape "
                       "(Part 9.1's terms, ZeRO's shards ceil(n / p))"])
    x = 150
    for name, colour in CATEGORIES:
        out.append('  <rect x="%d" y="84" width="14" height="14" fill="%s"/><text x="%d" y="96">'
                   '%s</text>' % (x, colour, x + 20, name))
        x += 150
    for i, (dtype, zero, recompute, r) in enumerate(runs):
        y = top + i * row
        peak = r["ranks"][0]["peak_bytes"]
        out.append('  <text x="%d" y="%d" text-anchor="end">%s, ZeRO %d, recompute %s</text>'
                   % (left - 10, y + 20, dtype, zero, recompute))
        x = left
        for name, colour in CATEGORIES:
            w = peak[name] * scale
            out.append('  <rect x="%.1f" y="%d" width="%.1f" height="26" fill="%s"><title>%s: '
                       '%.2f MiB</title></rect>' % (x, y + 2, w, colour, name, peak[name] / MIB))
            x += w
        total = sum(peak[c] for c, _ in CATEGORIES)
        out.append('  <text x="%.1f" y="%d" font-weight="bold">%.1f MiB</text>'
                   % (x + 8, y + 20, total / MIB))
        counted = left + sum(r["ranks"][0]["model_states_counted"][c] for c in STATES) * scale
        out.append('  <line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#222222" '
                   'stroke-width="2" stroke-dasharray="4 3"/>' % (counted, y - 2, counted, y + 32))
    return out


with tempfile.TemporaryDirectory() as scratch:
    runs = [(dtype, zero, recompute, measure(dtype, zero, recompute, scratch))
            for dtype in ("float", "bf16") for zero in (0, 1, 2, 3)
            for recompute in ("none", "selective", "full")]
write_svg(OUTPUT, figure(runs))
