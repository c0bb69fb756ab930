#!/usr/bin/env python3
"""Draws figs/planner_search.svg: handout Part 13's walk-through case (Llama-3-8B on 64 H100s of
80 GB, 4M tokens in sequences of 8192), every layout the kit's search visits as a dot at its peak
memory per GPU and its MFU, as the simulator (the program plan_training, --plans) gives them:
blue where the plan fits the GPU's 80 GB, grey where it does not, the best valid plan circled.

The layouts are those solutions/planner/planner.cpp enumerates: tp dividing the heads and the
key/value heads, cp with 2 cp dividing the sequence, pp up to the layers, dp the GPUs left and
dividing the sequences, the micro-batches dividing each replica's sequences, ZeRO 0 to 3, with and
without recomputation, sequence parallelism whenever tp > 1, 1F1B.

usage: scripts/make-planner-figure.py [BUILD_DIR]     (default: build; writes figs/planner_search.svg)
"""
import csv
import io
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
CONFIGS = os.path.join(ROOT, "starter", "planner", "configs")
MODEL, CLUSTER = os.path.join(CONFIGS, "llama3_8b.json"), os.path.join(CONFIGS, "h100_80gb_x64.json")
TOKENS, SEQ = 4194304, 8192


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def layouts():
    model, cluster = json.load(open(MODEL)), json.load(open(CLUSTER))
    heads = math.gcd(model["num_attention_heads"], model["num_key_value_heads"])
    gpus, sequences = cluster["gpus"], TOKENS // SEQ
    for tp in (t for t in divisors(gpus) if heads % t == 0):
        for cp in (c for c in divisors(gpus // tp) if c == 1 or SEQ % (2 * c) == 0):
            for pp in divisors(gpus // (tp * cp)):
                dp = gpus // (tp * cp * pp)
                if pp > model["num_hidden_layers"] or sequences % dp:
                    continue
                for m in divisors(sequences // dp):
                    for zero in range(4):
                        for recompute in ("", " recompute"):
                            yield "tp=%d cp=%d pp=%d dp=%d microbatches=%d zero=%d%s%s" % (
                                tp, cp, pp, dp, m, zero, " sp" if tp > 1 else "", recompute)


def simulate(plans):
    program = os.path.join(BUILD, "plan_training")
    out = subprocess.run([program, "--model", MODEL, "--cluster", CLUSTER, "--tokens", str(TOKENS),
                          "--seq", str(SEQ), "--plans", "-"], input="\n".join(plans),
                         capture_output=True, text=True, check=True).stdout
    return list(csv.DictReader(io.StringIO(out)))


def main():
    rows = simulate(list(layouts()))
    width, height, left, right, top, bottom = 800, 420, 70, 20, 40, 360
    max_memory = 200  # GB shown; plans needing more sit on the right edge
    x = lambda gb: left + (width - left - right) * min(gb, max_memory) / max_memory
    y = lambda mfu: bottom - (bottom - top) * mfu / 0.8
    best = max((r for r in rows if r["valid"] == "1"), key=lambda r: float(r["mfu"]))
    dots = {}  # one dot per pixel: valid over invalid
    for r in rows:
        key = (round(x(float(r["peak_memory_gb"]))), round(y(float(r["mfu"]))))
        dots[key] = dots.get(key, False) or r["valid"] == "1"
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="12" role="img" aria-label="MFU against memory per GPU of the %d layouts the '
           'search visits">' % (width, height, len(rows)),
           '<title>Part 13: MFU against memory per GPU of the %d layouts the search visits for '
           'Llama-3-8B on 64 H100s</title>' % len(rows),
           '<text x="20" y="22" font-size="14">Llama-3-8B, 64 H100s of 80 GB, 4M tokens in sequences of '
           '8192: the %d layouts of the search</text>' % len(rows)]
    for k in range(5):
        mfu = 0.2 * k
        svg.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (left, y(mfu), width - right, y(mfu)))
        svg.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (left - 6, y(mfu) + 4, mfu))
    for gb in range(0, max_memory + 1, 40):
        svg.append('<text x="%.1f" y="%d" text-anchor="middle">%d%s</text>' % (x(gb), bottom + 16, gb,
                                                                             "+" if gb == max_memory else ""))
    svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>' % (left, bottom, width - right, bottom))
    svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>' % (left, top, left, bottom))
    svg.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#c03030" stroke-dasharray="5,4"/>'
               % (x(80), top, x(80), bottom))
    svg.append('<text x="%.1f" y="%d" fill="#c03030">the GPU\'s 80 GB</text>' % (x(80) + 5, top + 12))
    for (px, py), valid in sorted(dots.items(), key=lambda d: d[1]):
        svg.append('<circle cx="%d" cy="%d" r="2" fill="%s"/>' % (px, py, "#4878a8" if valid else "#b8b8b8"))
    bx, by = x(float(best["peak_memory_gb"])), y(float(best["mfu"]))
    svg.append('<circle cx="%.1f" cy="%.1f" r="7" fill="none" stroke="#e0a030" stroke-width="2.5"/>' % (bx, by))
    fields = dict(word.split("=") for word in best["plan"].split() if "=" in word)
    svg.append('<text x="%.1f" y="%.1f" text-anchor="end">best: tp=%s dp=%s, %s micro-batches, ZeRO-%s: '
               'MFU %.3f</text>' % (x(80) - 6, top + 26, fields["tp"], fields["dp"],
                                    fields["microbatches"], fields["zero"], float(best["mfu"])))
    svg.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%d" stroke="#e0a030"/>' % (bx, by - 7, bx, top + 30))
    svg.append('<text x="%d" y="%d" text-anchor="middle">peak memory per GPU (GB)</text>' % ((left + width - right) // 2, bottom + 36))
    svg.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">MFU</text>' % ((top + bottom) // 2, (top + bottom) // 2))
    legend = bottom + 36
    svg.append('<circle cx="%d" cy="%d" r="4" fill="#4878a8"/><text x="%d" y="%d">fits</text>' % (width - 170, legend - 4, width - 162, legend))
    svg.append('<circle cx="%d" cy="%d" r="4" fill="#b8b8b8"/><text x="%d" y="%d">does not fit</text>' % (width - 120, legend - 4, width - 112, legend))
    svg.append("</svg>")
    path = os.path.join(ROOT, "figs", "planner_search.svg")
    open(path, "w").write("\n".join(svg) + "\n")
    print("wrote %s: %d layouts, %d dots, best %s (MFU %s)" % (path, len(rows), len(dots), best["plan"], best["mfu"]))


if __name__ == "__main__":
    main()
