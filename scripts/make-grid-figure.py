#!/usr/bin/env python3
"""Writes figs/grid_5d.svg: the 16 ranks of tp = cp = dp = pp = 2 (Part 14.3's grid, tensor
parallelism fastest, the pipeline slowest), drawn six times, each time coloured by the groups of
one kind: Tensor, Context, Data, Pipeline and Stage (the ranks of one colour form one group). The
gradient sums are left out: working them out is the exercise. The layout follows the handout's
table: a block per stage, its columns dp_idx and tp_idx, its rows cp_idx.

usage: scripts/make-grid-figure.py [OUTPUT]      (default: figs/grid_5d.svg)
"""
import os
import sys
from xml.sax.saxutils import escape

from figure_svg import svg_opening, write_svg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "figs", "grid_5d.svg")
TP = CP = DP = PP = 2
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7"]
# Each group kind: its name, what its members share (tp, cp, dp, pp) and a line on what it does.
GROUPS = [
    ("Tensor", ("cp", "dp", "pp"), "split every matrix (all but tp_idx shared)"),
    ("Context", ("tp", "dp", "pp"), "ring attention over the positions"),
    ("Data", ("tp", "cp", "pp"), "replicas fed other sequences"),
    ("Pipeline", ("tp", "cp", "dp"), "the same slice in every stage"),
    ("Stage", ("pp",), "every rank of one pipeline stage"),
]
CELL, GAP, STAGE_GAP = 34, 4, 18
# Where the gradient sums would be: a question, not an answer (Part 14.3 asks it).
QUESTION = ["The gradient sums", "DenseGradients and ExpertGradients are yours",
            "to work out: which ranks hold the same slice", "of a parameter, and saw other tokens?"]
PANEL_W = 2 * (DP * TP * (CELL + GAP)) + STAGE_GAP
PANEL_H = CP * (CELL + GAP) + 66
COLUMNS = 2


def coordinates(rank):
    return {"tp": rank % TP, "cp": rank // TP % CP, "dp": rank // (TP * CP) % DP,
            "pp": rank // (TP * CP * DP)}


def group_key(rank, shared):
    at = coordinates(rank)
    return tuple(at[axis] for axis in shared)


def panel(x0, y0, name, shared, note):
    keys = sorted({group_key(r, shared) for r in range(TP * CP * DP * PP)})
    out = ['  <text x="%d" y="%d" font-weight="bold">GridGroup::%s</text>' % (x0, y0 + 14, name),
           '  <text x="%d" y="%d" fill="#555555" font-size="11">%s: %d groups of %d</text>'
           % (x0, y0 + 30, escape(note), len(keys), TP * CP * DP * PP // len(keys))]
    for stage in range(PP):
        out.append('  <text x="%d" y="%d" fill="#555555" font-size="10">stage %d</text>'
                   % (x0 + stage * (DP * TP * (CELL + GAP) + STAGE_GAP), y0 + 46 + CP * (CELL + GAP)
                      + 8, stage))
    for rank in range(TP * CP * DP * PP):
        at = coordinates(rank)
        x = x0 + at["pp"] * (DP * TP * (CELL + GAP) + STAGE_GAP) + (at["dp"] * TP + at["tp"]) * (
            CELL + GAP)
        y = y0 + 40 + at["cp"] * (CELL + GAP)
        colour = PALETTE[keys.index(group_key(rank, shared)) % len(PALETTE)]
        out.append('  <rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="%s"/>'
                   % (x, y, CELL, CELL, colour))
        out.append('  <text x="%d" y="%d" text-anchor="middle" fill="#ffffff" '
                   'font-weight="bold">%d</text>' % (x + CELL // 2, y + CELL // 2 + 5, rank))
    return out


def main():
    width = COLUMNS * PANEL_W + (COLUMNS + 1) * 30
    rows = (len(GROUPS) + 1 + COLUMNS - 1) // COLUMNS
    height = 90 + rows * (PANEL_H + 24)
    out = svg_opening(width, height, "The 16 ranks of tp = cp = dp = pp = 2, by group",
                      ["world rank = ((pp_idx · 2 + dp_idx) · 2 + cp_idx) · 2 + tp_idx; in each "
                       "panel the left block is stage 0, the right stage 1,",
                       "columns dp_idx then tp_idx, rows cp_idx: the ranks of one colour form "
                       "one group"])
    for i, (name, shared, note) in enumerate(GROUPS):
        x0 = 30 + (i % COLUMNS) * (PANEL_W + 30)
        y0 = 90 + (i // COLUMNS) * (PANEL_H + 24)
        out += panel(x0, y0, name, shared, note)
    x0 = 30 + (len(GROUPS) % COLUMNS) * (PANEL_W + 30)
    y0 = 90 + (len(GROUPS) // COLUMNS) * (PANEL_H + 24)
    for i, line in enumerate(QUESTION):
        out.append('  <text x="%d" y="%d" fill="#555555"%s>%s</text>'
                   % (x0, y0 + 14 + 18 * i, ' font-weight="bold"' if i == 0 else "", escape(line)))
    write_svg(OUTPUT, out)


if __name__ == "__main__":
    main()
