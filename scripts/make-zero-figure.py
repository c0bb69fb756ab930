#!/usr/bin/env python3
"""Writes figs/zero_measured.svg: the model-state memory of one rank at ZeRO stages 0 to 3, as
unified_train measures it (--report's peak_bytes) on 4 data-parallel ranks with Adam, beside the
prediction of Part 9.1's model. The bars are measured, not drawn by hand: rerun this script when
the trainer changes.

usage: scripts/make-zero-figure.py [BUILD_DIR] [OUTPUT]   (defaults: build/, figs/zero_measured.svg)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
OUTPUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "figs", "zero_measured.svg")
DP, HIDDEN = 4, "1024,1024"
# dtk-mpirun: mpirun with an Open MPI session directory of its own (cmake/dtk-mpirun.in).
MPIRUN = [os.path.join(BUILD, "dtk-mpirun"), "--allow-run-as-root", "--oversubscribe",
          "--timeout", "300", "-n", str(DP)]
CATEGORIES = (("parameters", "#4e79a7"), ("gradients", "#f28e2b"), ("optimizer", "#59a14f"))


def measure(stage):
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "report.json")
        subprocess.run(MPIRUN + [os.path.join(BUILD, "unified_train"), "--dp_size", str(DP),
                                 "--hidden", HIDDEN, "--optimizer", "adam", "--zero", str(stage),
                                 "--max_steps", "2", "--report", report],
                       check=True, stdout=subprocess.DEVNULL)
        with open(report) as f:
            return json.load(f)


def svg(reports):
    rank0 = [r["ranks"][0] for r in reports]
    psi = rank0[0]["stage_parameters"]
    mib = 1 << 20
    widest = max(max(r["predicted_model_state_bytes"], sum(r["peak_bytes"][c] for c, _ in
                                                             CATEGORIES)) for r in rank0)
    left, right, top, row = 200, 980, 110, 70
    scale = (right - left - 90) / widest
    height = top + row * len(rank0) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="1040" height="{height}" '
           f'viewBox="0 0 1040 {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" '
           f'font-size="14">',
           f'  <title>Measured model-state memory of one of {DP} data-parallel ranks training the '
           f'784-{HIDDEN.replace(",", "-")}-10 MLP (Ψ = {psi} parameters) with Adam in fp32, at '
           f'ZeRO stages 0 to 3: ' +
           ", ".join(f'stage {s} {sum(r["peak_bytes"][c] for c, _ in CATEGORIES) / mib:.2f} MiB'
                     for s, r in enumerate(rank0)) + '</title>',
           '  <rect width="1040" height="100%" fill="#ffffff"/>',
           f'  <text x="520" y="32" text-anchor="middle" font-size="17" font-weight="bold">Model '
           f'states per rank, measured: Ψ = {psi / 1e6:.2f} M parameters, {DP} data-parallel '
           f'ranks, Adam in fp32</text>',
           '  <text x="520" y="56" text-anchor="middle" font-size="13" fill="#555555">unified_train'
           f' --dp_size {DP} --hidden {HIDDEN} --optimizer adam --zero Z --max_steps 2 --report: '
           'rank 0\'s peak_bytes</text>']
    x = 120
    for name, colour in CATEGORIES:  # legend
        out.append(f'  <rect x="{x}" y="72" width="14" height="14" fill="{colour}"/>'
                   f'<text x="{x + 20}" y="84">{name}</text>')
        x += 130
    out.append(f'  <line x1="{x + 7}" y1="70" x2="{x + 7}" y2="88" stroke="#222222" '
               f'stroke-width="2" stroke-dasharray="4 3"/><text x="{x + 20}" y="84">9.1 predicts: '
               f'2 × zero_memory_per_rank(Ψ, {DP}, Z, k = 4)</text>')
    labels = ["stage 0: plain DP", "stage 1: optimizer", "stage 2: + gradients",
              "stage 3: + parameters"]
    for s, r in enumerate(rank0):
        y = top + s * row
        out.append(f'  <text x="{left - 12}" y="{y + 26}" text-anchor="end" font-weight="bold">'
                   f'{labels[s]}</text>')
        x = left
        for name, colour in CATEGORIES:
            width = r["peak_bytes"][name] * scale
            out.append(f'  <rect x="{x:.1f}" y="{y + 8}" width="{width:.1f}" height="28" '
                       f'fill="{colour}"/>')
            x += width
        total = sum(r["peak_bytes"][c] for c, _ in CATEGORIES)
        out.append(f'  <text x="{x + 8:.1f}" y="{y + 27}" font-weight="bold">{total / mib:.2f} MiB'
                   f'</text>')
        predicted = left + r["predicted_model_state_bytes"] * scale
        out.append(f'  <line x1="{predicted:.1f}" y1="{y + 2}" x2="{predicted:.1f}" y2="{y + 42}" '
                   'stroke="#222222" stroke-width="2" stroke-dasharray="4 3"/>')
        detail = ", ".join(f'{name} {r["peak_bytes"][name] / mib:.2f}' for name, _ in CATEGORIES)
        out.append(f'  <text x="{left}" y="{y + 54}" font-size="12" fill="#555555">{detail} MiB; '
                   f'sends {r["bytes_sent_per_step"] / mib:.2f} MiB per step</text>')
    out.append('</svg>')
    return "\n".join(out) + "\n"


reports = [measure(stage) for stage in range(4)]
with open(OUTPUT, "w") as f:
    f.write(svg(reports))
print(f"wrote {OUTPUT}")
