#!/usr/bin/env python3
"""Draws the learning curve of a gpt_train run from its --report: the training loss of every
step, the validation loss, and the text's bigram entropy (the loss of the best model that sees
only the previous character), as a self-contained SVG (figs/gpt_learning_curve.svg). Given two
reports (GPT-2's block and a Llama's), draws both runs' curves in one figure
(figs/gpt_llama_learning.svg, bench/llama_learning_run.sh).

usage: scripts/make-gpt-figure.py REPORT.json [REPORT2.json] OUT.svg

The handout's figure comes from its default run:
  build/gpt_train --sample 400 --report run.json && scripts/make-gpt-figure.py run.json figs/gpt_learning_curve.svg
"""
import json
import math
import sys

from figure_svg import svg_opening

WIDTH, HEIGHT = 760, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 30, 86, 60


# Each run's colours: its training loss (each step's batch), its validation loss.
COLOURS = [("#9ecae1", "#0072b2"), ("#a1d99b", "#238b45")]


def architecture(r):
    return "a Llama's block" if r["model"].get("arch") == "llama" else "GPT-2's block"


def run_text(r):
    return ("%.0f s on %d rank%s, %.0f tokens/s: validation loss %.3f, bigram entropy %.3f nats "
            "per character" % (r["seconds"], len(r["ranks"]), "" if len(r["ranks"]) == 1 else "s",
                               r["tokens_per_second"], r["val_loss"], r["bigram_entropy"]))


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    reports = []
    for path in sys.argv[1:-1]:
        with open(path) as f:
            reports.append(json.load(f))
    r = reports[0]
    steps = max(report["steps"] for report in reports)
    losses = [r["bigram_entropy"]]
    for report in reports:
        losses += [h["loss"] for h in report["history"]] + [v["loss"] for v in report["validation"]]
    text = ("the King James Bible" if r["corpus"]["source"].startswith("the King James")
            else r["corpus"]["source"])
    if len(reports) == 1:
        m = r["model"]
        title = "A GPT of %.2fM parameters learning %s" % (m["parameters"] / 1e6, text)
        lines = ["%d layers, hidden %d, %d heads, context %d; %d steps of %d sequences, %s"
                 % (m["layers"], m["hidden"], m["heads"], m["seq_len"], steps, r["batch_size"],
                    r["optimizer"]),
                 run_text(r)]
    else:
        title = "GPT-2's block and a Llama's learning %s, the same budget" % text
        m = r["model"]
        lines = ["%d layers, hidden %d, %d heads, context %d; %d steps of %d sequences, %s; "
                 "bigram entropy %.3f" % (m["layers"], m["hidden"], m["heads"], m["seq_len"], steps,
                                          r["batch_size"], r["optimizer"], r["bigram_entropy"])]
        lines += ["%s, %.2fM parameters: validation loss %.3f after %.0f s (%.0f tokens/s)"
                  % (architecture(report), report["model"]["parameters"] / 1e6,
                     report["val_loss"], report["seconds"], report["tokens_per_second"])
                  for report in reports]
    # Below the title and its lines.
    top_margin = TOP + 17 * (len(lines) - 2)
    top = math.ceil(max(losses) * 2) / 2
    bottom = math.floor(min(losses) * 2) / 2
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - top_margin - BOTTOM

    def x(step):
        return LEFT + plot_w * step / steps

    def y(loss):
        return top_margin + plot_h * (top - loss) / (top - bottom)

    out = svg_opening(WIDTH, HEIGHT, title, lines)
    # Axes, grid and ticks.
    loss = bottom
    while loss <= top + 1e-9:
        out.append('  <line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e4e4e4"/>'
                   % (LEFT, WIDTH - RIGHT, y(loss), y(loss)))
        out.append('  <text x="%d" y="%.1f" text-anchor="end">%.1f</text>'
                   % (LEFT - 8, y(loss) + 4, loss))
        loss += 0.5
    tick = 10 ** math.floor(math.log10(max(steps, 1)))
    if steps / tick < 4:
        tick //= 2 if tick >= 2 else 1
    for step in range(0, steps + 1, max(tick, 1)):
        out.append('  <text x="%.1f" y="%d" text-anchor="middle">%d</text>'
                   % (x(step), HEIGHT - BOTTOM + 18, step))
    out.append('  <path d="M%d,%d L%d,%d L%d,%d" fill="none" stroke="#444444"/>'
               % (LEFT, top_margin, LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM))
    out.append('  <text x="%d" y="%d" text-anchor="middle">training step</text>'
               % (LEFT + plot_w // 2, HEIGHT - 18))
    out.append('  <text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">loss, '
               'nats per character</text>' % (top_margin + plot_h // 2, top_margin + plot_h // 2))
    # The bigram entropy, the training loss, the validation loss.
    b = y(r["bigram_entropy"])
    out.append('  <line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#d55e00" stroke-width="1.5" '
               'stroke-dasharray="6 4"/>' % (LEFT, WIDTH - RIGHT, b, b))
    for report, (light, dark) in zip(reports, COLOURS):
        path = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", x(h["step"]), y(h["loss"]))
                        for i, h in enumerate(report["history"]))
        out.append('  <path d="%s" fill="none" stroke="%s" stroke-width="1.2"/>' % (path, light))
    for report, (light, dark) in zip(reports, COLOURS):
        path = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", x(v["step"]), y(v["loss"]))
                        for i, v in enumerate(report["validation"]))
        out.append('  <path d="%s" fill="none" stroke="%s" stroke-width="2.2"/>' % (path, dark))
        for v in report["validation"]:
            out.append('  <circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>'
                       % (x(v["step"]), y(v["loss"]), dark))
    # Legend.
    entries = []
    for report, (light, dark) in zip(reports, COLOURS):
        whose = "" if len(reports) == 1 else architecture(report) + ": "
        entries += [(light, 1.2, "", whose + "training loss (each step's batch)"),
                    (dark, 2.2, "", whose + "validation loss (held-out tenth)")]
    entries.append(("#d55e00", 1.5, "6 4", "bigram entropy of the text"))
    legend_w = 244 if len(reports) == 1 else 344
    lx, ly = WIDTH - RIGHT - legend_w - 6, top_margin + 16
    out.append('  <rect x="%d" y="%d" width="%d" height="%d" fill="#ffffff" opacity="0.9"/>'
               % (lx - 6, ly - 12, legend_w, 20 * len(entries) + 2))
    for i, (colour, width, dash, label) in enumerate(entries):
        yy = ly + 20 * i
        out.append('  <line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="%s"%s/>'
                   % (lx, lx + 28, yy, yy, colour, width,
                      ' stroke-dasharray="%s"' % dash if dash else ""))
        out.append('  <text x="%d" y="%d">%s</text>' % (lx + 36, yy + 4, label))
    out.append("</svg>")
    with open(sys.argv[-1], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
