#!/usr/bin/env python3
"""Writes figs/interleaved_chunks.svg: the model cut into p · V = 8 chunks for Part 14's
interleaved pipeline (p = 4 ranks, V = 2 chunks each), chunk c on rank c mod p. Above, the model
as a row of chunks coloured by the rank that holds them; below, each rank's lane with its own
chunks 0 and 1, and a micro-batch's forward going from chunk to chunk: round the ranks V times,
rank p - 1 handing over to rank 0 between the rounds.

usage: scripts/make-chunks-figure.py [OUTPUT]      (default: figs/interleaved_chunks.svg)
"""
import os
import sys

from figure_svg import svg_opening, write_svg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "figs",
                                                             "interleaved_chunks.svg")
P, V = 4, 2
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#59a14f"]
BOX_W, BOX_H, GAP = 108, 38, 12
LEFT = 110  # the lanes' labels
MODEL_Y, LANES_Y, LANE_H = 86, 176, 62
WIDTH = LEFT + P * V * (BOX_W + GAP) + 30
HEIGHT = LANES_Y + P * LANE_H + 40


def chunk_x(chunk):
    return LEFT + chunk * (BOX_W + GAP)


def lane_y(rank):
    return LANES_Y + rank * LANE_H


def what_chunk_holds(chunk):
    if chunk == 0:
        return "embedding, blocks"
    if chunk == P * V - 1:
        return "blocks, head"
    return "blocks"


def box(x, y, colour, top, bottom):
    return ['  <rect x="%d" y="%d" width="%d" height="%d" rx="5" fill="%s"/>'
            % (x, y, BOX_W, BOX_H, colour),
            '  <text x="%d" y="%d" text-anchor="middle" fill="#ffffff" font-weight="bold">%s'
            '</text>' % (x + BOX_W // 2, y + 16, top),
            '  <text x="%d" y="%d" text-anchor="middle" fill="#ffffff" font-size="11">%s</text>'
            % (x + BOX_W // 2, y + 31, bottom)]


def arrow(x1, y1, x2, y2, colour="#333333", dash=False):
    return ['  <line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.6"%s '
            'marker-end="url(#head)"/>' % (x1, y1, x2, y2, colour,
                                            ' stroke-dasharray="5,3"' if dash else "")]


def main():
    out = svg_opening(WIDTH, HEIGHT, "The interleaved pipeline: p = 4 ranks, V = 2 chunks each",
                      ["the model's chunk c lives on rank c mod p as that rank's chunk c div p; "
                       "a micro-batch's forward goes round the ranks V times"])
    out.append('  <defs><marker id="head" markerWidth="8" markerHeight="8" refX="7" refY="4" '
               'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#333333"/></marker></defs>')
    out.append('  <text x="%d" y="%d" font-weight="bold">the model</text>'
               % (10, MODEL_Y + 24))
    for chunk in range(P * V):
        out += box(chunk_x(chunk), MODEL_Y, PALETTE[chunk % P], "chunk %d" % chunk,
                   what_chunk_holds(chunk))
    for rank in range(P):
        y = lane_y(rank)
        out.append('  <rect x="%d" y="%d" width="%d" height="%d" fill="%s" fill-opacity="0.08"/>'
                   % (6, y - 8, WIDTH - 12, LANE_H - 6, PALETTE[rank]))
        out.append('  <text x="%d" y="%d" font-weight="bold">rank %d</text>' % (10, y + 24, rank))
        for v in range(V):
            chunk = v * P + rank
            out += box(chunk_x(chunk), y, PALETTE[rank], "its chunk %d" % v, "model's %d" % chunk)
    # The forward: chunk c's output to chunk c + 1, down the lanes, then back up to rank 0.
    for chunk in range(P * V - 1):
        x1, y1 = chunk_x(chunk) + BOX_W, lane_y(chunk % P) + BOX_H // 2
        x2, y2 = chunk_x(chunk + 1), lane_y((chunk + 1) % P) + BOX_H // 2
        wraps = (chunk + 1) % P == 0
        out += arrow(x1, y1, x2 - 2, y2, "#b03030" if wraps else "#333333", dash=wraps)
    x = chunk_x(P) - GAP // 2
    out.append('  <text x="%d" y="%d" text-anchor="middle" fill="#b03030" font-size="11">'
               'rank %d to rank 0</text>' % (x, lane_y(0) - 12, P - 1))
    out.append('  <text x="%d" y="%d" fill="#555555" font-size="12">The backward goes the same '
               'way back, from the last chunk (the loss) to chunk 0. Every arrow is a message; '
               'Part 8 had p - 1 of them.</text>' % (10, HEIGHT - 14))
    write_svg(OUTPUT, out)


if __name__ == "__main__":
    main()
