#!/usr/bin/env python3
"""Writes figs/cp_work_per_rank.svg: the work of causal attention per rank of a context-parallel
group, with contiguous and with zig-zag slices (Part 11.1). Computed exactly from the causal
mask: a query at position t scores the t + 1 keys at positions 0 .. t, so a rank's work is the
sum of t + 1 over the positions it holds. Prints the same counts, and those of a longer
sequence, for the handout.

usage: scripts/make-cp-work-figure.py [OUTPUT]   (default: figs/cp_work_per_rank.svg)
"""
import os
import sys

from figure_svg import svg_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "figs", "cp_work_per_rank.svg")
LENGTH, RANKS = 16, 4
COLORS = ("#d6e6f4", "#fbe3bf", "#cdede3", "#f3dcea")  # rank 0 .. 3, as figs/ring_*.svg
STROKES = ("#4e79a7", "#e08a1e", "#3b9a6e", "#b5588f")


def positions(length, p, r, zigzag):
    """Part 11.1's layouts: slice r of p, or chunks r and 2p - 1 - r of 2p."""
    chunks = 2 * p if zigzag else p
    chunk = length // chunks
    owned = [r, chunks - 1 - r] if zigzag else [r]
    return [c * chunk + i for c in owned for i in range(chunk)]


def work(length, p, r, zigzag):
    """Query-key pairs rank r scores under the causal mask."""
    return sum(t + 1 for t in positions(length, p, r, zigzag))


def owner(length, p, zigzag):
    """The rank holding each position."""
    ranks = [0] * length
    for r in range(p):
        for t in positions(length, p, r, zigzag):
            ranks[t] = r
    return ranks


def panel(x0, title, zigzag):
    cell, top = 15, 118
    ranks = owner(LENGTH, RANKS, zigzag)
    parts = [f'<text x="{x0 + 8 * cell}" y="96" class="heading mid">{title}</text>',
             f'<text x="{x0 - 8}" y="{top - 6}" class="sub end">query</text>',
             f'<text x="{x0 + LENGTH * cell / 2}" y="{top - 6}" class="sub mid">keys 0 .. {LENGTH - 1}</text>']
    for t in range(LENGTH):
        y = top + t * cell
        parts.append(f'<text x="{x0 - 8}" y="{y + 11.5}" class="small end">{t}</text>')
        for j in range(LENGTH):
            x = x0 + j * cell
            if j <= t:  # scored: the key is at or before the query
                parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                             f'fill="{COLORS[ranks[t]]}" stroke="#ffffff" stroke-width="1"/>')
            else:
                parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                             f'fill="#f6f6f6" stroke="#ffffff" stroke-width="1"/>')
    parts.append(f'<rect x="{x0}" y="{top}" width="{LENGTH * cell}" height="{LENGTH * cell}" '
                 f'fill="none" stroke="#444444" stroke-width="1"/>')
    # Bars: each rank's pairs, against the largest rank of the contiguous layout.
    counts = [work(LENGTH, RANKS, r, zigzag) for r in range(RANKS)]
    largest = max(work(LENGTH, RANKS, r, False) for r in range(RANKS))
    bar_top, bar_height, bar_width = top + LENGTH * cell + 30, 22, 170
    for r, count in enumerate(counts):
        y = bar_top + r * (bar_height + 8)
        width = bar_width * count / largest
        held = positions(LENGTH, RANKS, r, zigzag)
        parts.append(f'<text x="{x0 - 8}" y="{y + 16}" class="end">rank {r}</text>')
        parts.append(f'<rect x="{x0}" y="{y}" width="{width:.1f}" height="{bar_height}" '
                     f'fill="{COLORS[r]}" stroke="{STROKES[r]}" stroke-width="1.5"/>')
        parts.append(f'<text x="{x0 + width + 6:.1f}" y="{y + 16}" class="code">{count} pairs '
                     f'(positions {held[0]}..{held[len(held) // 2 - 1] if zigzag else held[-1]}'
                     + (f', {held[len(held) // 2]}..{held[-1]}' if zigzag else '') + ')</text>')
    mean = sum(counts) / RANKS
    parts.append(f'<text x="{x0 + 8 * cell}" y="{bar_top + RANKS * (bar_height + 8) + 18}" '
                 f'class="sub mid">slowest rank: {max(counts) / mean:.2f} × the mean</text>')
    return parts


def svg():
    width, height = 920, 560
    contiguous = [work(LENGTH, RANKS, r, False) for r in range(RANKS)]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" '
        'font-size="14">',
        f'  <title>Causal attention work per rank on {RANKS} ranks, {LENGTH} positions: contiguous '
        f'slices {", ".join(map(str, contiguous))} query-key pairs, zig-zag '
        f'{work(LENGTH, RANKS, 0, True)} each</title>',
        '  <style>',
        '    text { fill: #222222; }',
        '    .heading { font-size: 16px; font-weight: bold; }',
        '    .sub { font-size: 13px; fill: #555555; }',
        '    .small { font-size: 10px; fill: #555555; }',
        '    .code { font-family: DejaVu Sans Mono, Menlo, Consolas, monospace; font-size: 12px; }',
        '    .mid { text-anchor: middle; } .end { text-anchor: end; }',
        '  </style>',
        f'  <rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'  <text x="{width / 2}" y="30" class="heading mid">Causal attention: the work of each '
        f'rank ({LENGTH} positions on {RANKS} ranks)</text>',
        f'  <text x="{width / 2}" y="54" class="sub mid">a query at position t scores the keys '
        'at 0 .. t (filled cells, colored by the rank holding the query); '
        'a rank\'s work is its rows\' cells</text>',
    ]
    parts += ["  " + p for p in panel(70, "contiguous slices", False)]
    parts += ["  " + p for p in panel(560, "zig-zag: chunks r and 2p - 1 - r", True)]
    return svg_text(parts)


def main():
    with open(OUTPUT, "w") as f:
        f.write(svg())
    print(f"wrote {OUTPUT}")
    for length, p in ((LENGTH, RANKS), (8192, 8)):
        for zigzag in (False, True):
            counts = [work(length, p, r, zigzag) for r in range(p)]
            print(f"{length} positions on {p} ranks, {'zig-zag' if zigzag else 'contiguous'}: "
                  f"{counts}, slowest {max(counts) / (sum(counts) / p):.3f} x the mean")


if __name__ == "__main__":
    main()
