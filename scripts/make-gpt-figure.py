#!/usr/bin/env python3
"""Draws the learning curve of a gpt_train run from its --report: the training loss of every
step, the validation loss, and the text's bigram entropy (the loss of the best model that sees
only the previous character), as a self-contained SVG (figs/gpt_learning_curve.svg).

usage: scripts/make-gpt-figure.py REPORT.json OUT.svg

The handout's figure comes from its default run:
  build/gpt_train --sample 400 --report run.json && scripts/make-gpt-figure.py run.json figs/gpt_learning_curve.svg
"""
import json
import math
import sys

from figure_svg import svg_opening

WIDTH, HEIGHT = 760, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 30, 86, 60


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        r = json.load(f)
    history, validation = r["history"], r["validation"]
    steps = r["steps"]
    losses = [h["loss"] for h in history] + [v["loss"] for v in validation] + [r["bigram_entropy"]]
    top = math.ceil(max(losses) * 2) / 2
    bottom = math.floor(min(losses) * 2) / 2
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(step):
        return LEFT + plot_w * step / steps

    def y(loss):
        return TOP + plot_h * (top - loss) / (top - bottom)

    m = r["model"]
    text = ("the King James Bible" if r["corpus"]["source"].startswith("the King James")
            else r["corpus"]["source"])
    title = "A GPT of %.2fM parameters learning %s" % (m["parameters"] / 1e6, text)
    lines = ["%d layers, hidden %d, %d heads, context %d; %d steps of %d sequences, %s"
             % (m["layers"], m["hidden"], m["heads"], m["seq_len"], steps, r["batch_size"],
                r["optimizer"]),
             "%.0f s on %d rank%s, %.0f tokens/s: validation loss %.3f, bigram entropy %.3f nats "
             "per character" % (r["seconds"], len(r["ranks"]), "" if len(r["ranks"]) == 1 else "s",
                                r["tokens_per_second"], r["val_loss"], r["bigram_entropy"])]
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
               % (LEFT, TOP, LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM))
    out.append('  <text x="%d" y="%d" text-anchor="middle">training step</text>'
               % (LEFT + plot_w // 2, HEIGHT - 18))
    out.append('  <text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">loss, '
               'nats per character</text>' % (TOP + plot_h // 2, TOP + plot_h // 2))
    # The bigram entropy, the training loss, the validation loss.
    b = y(r["bigram_entropy"])
    out.append('  <line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#d55e00" stroke-width="1.5" '
               'stroke-dasharray="6 4"/>' % (LEFT, WIDTH - RIGHT, b, b))
    path = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", x(h["step"]), y(h["loss"]))
                    for i, h in enumerate(history))
    out.append('  <path d="%s" fill="none" stroke="#9ecae1" stroke-width="1.2"/>' % path)
    path = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", x(v["step"]), y(v["loss"]))
                    for i, v in enumerate(validation))
    out.append('  <path d="%s" fill="none" stroke="#0072b2" stroke-width="2.2"/>' % path)
    for v in validation:
        out.append('  <circle cx="%.1f" cy="%.1f" r="3.5" fill="#0072b2"/>'
                   % (x(v["step"]), y(v["loss"])))
    # Legend.
    lx, ly = WIDTH - RIGHT - 250, TOP + 16
    out.append('  <rect x="%d" y="%d" width="244" height="62" fill="#ffffff" opacity="0.9"/>'
               % (lx - 6, ly - 12))
    for i, (colour, width, dash, label) in enumerate([
            ("#9ecae1", 1.2, "", "training loss (each step's batch)"),
            ("#0072b2", 2.2, "", "validation loss (held-out tenth)"),
            ("#d55e00", 1.5, "6 4", "bigram entropy of the text")]):
        yy = ly + 20 * i
        out.append('  <line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="%s"%s/>'
                   % (lx, lx + 28, yy, yy, colour, width,
                      ' stroke-dasharray="%s"' % dash if dash else ""))
        out.append('  <text x="%d" y="%d">%s</text>' % (lx + 36, yy + 4, label))
    out.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
