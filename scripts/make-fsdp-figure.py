#!/usr/bin/env python3
"""Writes figs/fsdp_timeline.svg: the parameter bytes one rank holds along one training step of a
model of 4 blocks fully sharded over 4 ranks (Part 16.3's FullyShardedBlocks), beside plain data
parallelism's (every parameter, all the time). The bytes follow the contract: every block's
shard (s_b = ceil(numel_b / p) values) all the time, and a block's numel_b values from its gather
to its release; below the curve, each call and the collective it makes.

usage: scripts/make-fsdp-figure.py [OUTPUT]      (default: figs/fsdp_timeline.svg)
"""
import os
import sys

from figure_svg import svg_opening, write_svg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "figs", "fsdp_timeline.svg")
P = 4
NUMEL = [2_000_000, 3_000_000, 3_000_000, 2_000_000]  # the blocks' parameters (float: 4 bytes)
MB = 4 / 1e6  # megabytes per parameter
LEFT, TOP, PLOT_W, PLOT_H = 70, 70, 760, 250
WIDTH, HEIGHT = LEFT + PLOT_W + 110, TOP + PLOT_H + 150


def shard(numel):
    return -(-numel // P)


def events():
    """(label, collective, bytes held after it) along one step: a forward, then a backward of one
    micro-batch, last block first."""
    base = sum(shard(n) for n in NUMEL) * MB
    out = [("", "", base)]
    for b in range(len(NUMEL)):
        out += [("gather %d" % b, "Allgather", base + NUMEL[b] * MB),
                ("release %d" % b, "", base)]
    for b in reversed(range(len(NUMEL))):
        out += [("gather %d" % b, "Allgather", base + NUMEL[b] * MB),
                ("reduce %d" % b, "Reduce_scatter", base + NUMEL[b] * MB),
                ("release %d" % b, "", base)]
    return out


def main():
    steps = events()
    whole = sum(NUMEL) * MB
    top = whole * 1.1
    x_of = lambda i: LEFT + PLOT_W * i / (len(steps) - 1)  # noqa: E731
    y_of = lambda mb: TOP + PLOT_H * (1 - mb / top)  # noqa: E731
    out = svg_opening(WIDTH, HEIGHT,
                      "FSDP in time: one rank's parameter bytes along one step",
                      ["4 blocks of 2, 3, 3 and 2 million float parameters on 4 ranks: every "
                       "block's shard always, one block whole from its gather to its release"])
    for mb in range(0, int(top) + 1, 10):
        y = y_of(mb)
        out.append('  <line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>'
                   % (LEFT, y, LEFT + PLOT_W, y))
        out.append('  <text x="%d" y="%.1f" text-anchor="end" fill="#555555">%d MB</text>'
                   % (LEFT - 6, y + 4, mb))
    # Plain data parallelism: every parameter all the time.
    out.append('  <line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e15759" stroke-width="2" '
               'stroke-dasharray="6,4"/>' % (LEFT, y_of(whole), LEFT + PLOT_W, y_of(whole)))
    out.append('  <text x="%d" y="%.1f" fill="#e15759">plain data parallelism (and ZeRO-1, '
               'ZeRO-2): %.0f MB</text>' % (LEFT + 8, y_of(whole) - 6, whole))
    # FSDP: a step function, held from one call to the next.
    points = []
    for i, (_, _, held) in enumerate(steps):
        if i:
            points.append("%.1f,%.1f" % (x_of(i), y_of(steps[i - 1][2])))
        points.append("%.1f,%.1f" % (x_of(i), y_of(held)))
    out.append('  <polyline points="%s" fill="none" stroke="#4e79a7" stroke-width="2.5"/>'
               % " ".join(points))
    peak = max(held for _, _, held in steps)
    out.append('  <text x="%.1f" y="%.1f" fill="#4e79a7">fully sharded: %.0f MB of shards, '
               '%.0f MB at the peak</text>'
               % (x_of(1), y_of(peak) - 8, steps[0][2], peak))
    # The calls under the curve, and where the forward ends.
    middle = x_of(2 * len(NUMEL) + 0.5)
    out.append('  <line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999999" '
               'stroke-dasharray="3,3"/>' % (middle, TOP, middle, TOP + PLOT_H))
    out.append('  <text x="%.1f" y="%d" text-anchor="middle" fill="#555555">forward</text>'
               % ((LEFT + middle) / 2, TOP + PLOT_H - 8))
    out.append('  <text x="%.1f" y="%d" text-anchor="middle" fill="#555555">backward</text>'
               % ((middle + LEFT + PLOT_W) / 2, TOP + PLOT_H - 8))
    for i, (label, collective, _) in enumerate(steps):
        if not label:
            continue
        x, y = x_of(i), TOP + PLOT_H + 14
        colour = "#4e79a7" if collective else "#555555"
        out.append('  <text transform="translate(%.1f,%d) rotate(60)" fill="%s" '
                   'font-size="11">%s%s</text>'
                   % (x, y, colour, label, " (%s)" % collective if collective else ""))
    write_svg(OUTPUT, out)


main()
