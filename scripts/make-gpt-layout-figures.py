#!/usr/bin/env python3
"""Measures gpt_train's layouts of Parts 10-12 and draws the handout's three figures of them, as
self-contained SVGs:

  figs/gpt_tp_activations.svg    one block's activations per rank under --tp 1, 2, 4, without and
                                 with --sp, as a fraction of one rank's: measured, against
                                 Korthikanti et al.'s (34 + 5as/h)/tp with sequence parallelism
                                 and (10 + (24 + 5as/h)/tp) without
  figs/gpt_moe_expert_load.svg   the (token, choice) rows each expert of the last block gets per
                                 step (mean of the last 30 of 150 steps on the Bible), without and
                                 with the load-balancing loss
  figs/gpt_cp_attention.svg      each rank's attention work per step under --cp 4 (the kernels'
                                 CPU seconds, the median of CP_RUNS runs): contiguous slices
                                 against zig-zag, at sequences of 512 (at gpt_train's default
                                 128 a block is too small for zig-zag's balance to show)
  figs/gpt_cp_longest.svg        the longest sequence whose activations fit one rank's budget
                                 (what one rank keeps at 256 positions) under --cp 1, 2, 4:
                                 measured at 128 to 2048 positions

usage: scripts/make-gpt-layout-figures.py BUILD_DIR [OUT_DIR (default figs)] [FIGURE...]
  FIGURE: tp_activations, moe_load, cp_attention, cp_longest (default: all four)

It runs BUILD_DIR/gpt_train with mpirun (4 ranks at most, oversubscribed), about three minutes on
two cores: the activations and the expert load are exact counts, the attention seconds are
timings (run it on a quiet machine: it prints the load average before and after; the handout
quotes the medians it prints).
"""
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from xml.sax.saxutils import escape

from figure_svg import svg_opening

WIDTH, HEIGHT = 760, 420
LEFT, RIGHT, TOP, BOTTOM = 80, 30, 86, 70
COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7")


def gpt_train(build, ranks, flags):
    """The --report of gpt_train run with `flags` on `ranks` ranks."""
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "report.json")
        command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(ranks),
                   os.path.join(build, "gpt_train")] + flags + ["--report", report]
        print("  " + " ".join(command[3:]), flush=True)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        with open(report) as f:
            return json.load(f)


def bar_chart(path, title, subtitle, categories, series, y_label, lines=()):
    """Grouped bars: series is [(label, [value per category])]; lines is [(label, [value per
    category])], drawn as dashed markers over the groups."""
    highest = max(max(values) for _, values in list(series) + list(lines))
    # About five gridlines at a round step (1, 2, 2.5 or 5 times a power of ten), with room for
    # the legend above the highest bar.
    room = highest * 1.3
    power = 10 ** math.floor(math.log10(room / 5))
    step = power * next(m for m in (1, 2, 2.5, 5, 10) if m * power * 5 >= room)
    gridlines = math.ceil(room / step)
    top = step * gridlines
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    group_w = plot_w / len(categories)
    bar_w = group_w * 0.7 / len(series)

    def y(value):
        return TOP + plot_h * (1 - value / top)

    out = svg_opening(WIDTH, HEIGHT, title, subtitle)
    for i in range(gridlines + 1):
        value = step * i
        out.append('  <line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e4e4e4"/>'
                   % (LEFT, WIDTH - RIGHT, y(value), y(value)))
        out.append('  <text x="%d" y="%.1f" text-anchor="end">%s</text>'
                   % (LEFT - 8, y(value) + 4, "%g" % round(value, 6)))
    out.append('  <path d="M%d,%d L%d,%d L%d,%d" fill="none" stroke="#444444"/>'
               % (LEFT, TOP, LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM))
    out.append('  <text x="20" y="%d" text-anchor="middle" transform="rotate(-90 20 %d)">%s</text>'
               % (TOP + plot_h // 2, TOP + plot_h // 2, escape(y_label)))
    for c, category in enumerate(categories):
        centre = LEFT + group_w * (c + 0.5)
        out.append('  <text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (centre, HEIGHT - BOTTOM + 18, escape(category)))
        first = centre - bar_w * len(series) / 2
        for s, (_, values) in enumerate(series):
            out.append('  <rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>'
                       % (first + s * bar_w, y(values[c]), bar_w * 0.92,
                          HEIGHT - BOTTOM - y(values[c]), COLOURS[s]))
        for s, (_, values) in enumerate(lines):
            x = first + (s + 0.5) * bar_w
            out.append('  <line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#d55e00" '
                       'stroke-width="2.5" stroke-dasharray="4 2"/>'
                       % (x - bar_w * 0.5, x + bar_w * 0.4, y(values[c]), y(values[c])))
    legend = [(COLOURS[s], label, False) for s, (label, _) in enumerate(series)]
    legend += [("#d55e00", label, True) for label, _ in lines]
    lx, ly = WIDTH - RIGHT - 330, TOP + 14
    out.append('  <rect x="%d" y="%d" width="326" height="%d" fill="#ffffff" opacity="0.9"/>'
               % (lx - 6, ly - 12, 20 * len(legend) + 6))
    for i, (colour, label, dashed) in enumerate(legend):
        yy = ly + 20 * i
        if dashed:
            out.append('  <line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2.5" '
                       'stroke-dasharray="4 2"/>' % (lx, lx + 22, yy, yy, colour))
        else:
            out.append('  <rect x="%d" y="%d" width="22" height="12" fill="%s"/>'
                       % (lx, yy - 6, colour))
        out.append('  <text x="%d" y="%d">%s</text>' % (lx + 30, yy + 4, escape(label)))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote " + path)


def tp_activations(build, out_dir):
    model = ["--layers", "2", "--hidden", "256", "--heads", "4", "--seq", "128",
             "--batch_size", "8", "--steps", "1"]
    runs = {}
    for tp in (1, 2, 4):
        for sp in ([], ["--sp"]) if tp > 1 else ([],):
            runs[tp, bool(sp)] = gpt_train(build, tp, model + ["--tp", str(tp)] + sp)
    one = runs[1, False]["ranks"][0]["peak_bytes"]["block_activations"]
    korthikanti_one = runs[1, False]["block_activations_counted"]["korthikanti"]

    def measured(tp, sp):
        return runs[tp, sp if tp > 1 else False]["ranks"][0]["peak_bytes"]["block_activations"] / one

    def formula(tp, sp):
        return runs[tp, sp if tp > 1 else False]["block_activations_counted"]["korthikanti"] / korthikanti_one

    tps = (1, 2, 4)
    bar_chart(os.path.join(out_dir, "gpt_tp_activations.svg"),
              "One block's activations per rank under tensor parallelism",
              ["gpt_train, 2 blocks of h 256, 4 heads, s 128, b 8 (float): %.1f MiB on one rank"
               % (one / 2 ** 20),
               "measured (activation_bytes), as a fraction of one rank's; dashes: Korthikanti "
               "et al.'s formula, the same fraction"],
              ["tp %d" % tp for tp in tps],
              [("tensor parallel (--tp)", [measured(tp, False) for tp in tps]),
               ("with sequence parallelism (--sp)", [measured(tp, True) for tp in tps])],
              "fraction of one rank's activations",
              [("Korthikanti et al. (10 + (24 + 5as/h)/t)", [formula(tp, False) for tp in tps]),
               ("Korthikanti et al. with SP (34 + 5as/h)/t", [formula(tp, True) for tp in tps])])


def moe_load(build, out_dir):
    model = ["--layers", "2", "--hidden", "64", "--heads", "4", "--seq", "64", "--experts", "8",
             "--top_k", "2", "--batch_size", "16", "--steps", "150", "--lr", "1e-2"]
    loads = []
    for aux in ("0", "0.01"):
        r = gpt_train(build, 1, model + ["--aux_loss", aux])
        experts, last = r["model"]["experts"], r["history"][-30:]
        block = r["model"]["layers"] - 1
        loads.append([sum(s["expert_rows"][block * experts + e] for s in last) / len(last)
                      for e in range(experts)])
    even = sum(loads[0]) / len(loads[0])
    bar_chart(os.path.join(out_dir, "gpt_moe_expert_load.svg"),
              "Rows per expert: the router's imbalance, and the load-balancing loss",
              ["gpt_train --experts 8 --top_k 2 on the Bible, 2 blocks of h 64, 16 x 64 tokens "
               "a step: the last block,",
               "(token, choice) rows each expert got, mean of the last 30 of 150 steps; %.0f each "
               "if even" % even],
              ["expert %d" % e for e in range(len(loads[0]))],
              [("no load-balancing loss (--aux_loss 0)", loads[0]),
               ("Switch's loss, alpha 0.01 (the default)", loads[1])],
              "rows per step")


# The model of the context-parallel figure (and of the handout's 11.6 comparison), and how many
# runs of each layout it takes the median of.
CP_MODEL = ["--layers", "2", "--hidden", "128", "--heads", "4", "--seq", "512", "--batch_size", "2",
            "--steps", "4", "--eval_every", "100", "--cp", "4"]
CP_RUNS = 5


def cp_attention(build, out_dir):
    """Each rank's attention kernels' CPU milliseconds per step, contiguous and zig-zag: per rank
    the median of CP_RUNS runs of each layout, the runs interleaved so that a change of the
    machine's load touches both alike. Prints the medians of the attention's wall time (mean over
    the ranks) and of the training step's too."""
    print("  load average before: %.2f %.2f %.2f" % os.getloadavg())
    runs = {False: [], True: []}
    for _ in range(CP_RUNS):
        for zigzag in (False, True):
            runs[zigzag].append(gpt_train(build, 4, CP_MODEL + (["--zigzag"] if zigzag else [])))
    print("  load average after: %.2f %.2f %.2f" % os.getloadavg())

    series = []
    for zigzag, name in ((False, "contiguous slices"), (True, "zig-zag (--zigzag)")):
        reports = runs[zigzag]
        kernels = [statistics.median([1000 * r["ranks"][i]["attention_cpu_seconds"] / r["steps"]
                                      for r in reports]) for i in range(4)]
        wall = statistics.median([sum(rank["attention_seconds"] for rank in r["ranks"]) / 4
                                  / r["steps"] for r in reports])
        step = statistics.median([statistics.median(s["seconds"] for s in r["history"])
                                  for r in reports])
        print("  %s: kernels ms per step by rank %s; attention wall %.3f s per step (mean over "
              "the ranks); training step %.3f s (medians of %d runs)"
              % (name, ", ".join("%.1f" % k for k in kernels), wall, step, CP_RUNS))
        series.append((name, kernels))
    bar_chart(os.path.join(out_dir, "gpt_cp_attention.svg"),
              "Each rank's attention work under context parallelism",
              ["gpt_train --cp 4, 2 blocks of h 128, 4 heads, batch 2 sequences of 512, 4 steps: "
               "the CPU ms per step",
               "of the attention kernels (forward and backward) on each rank, the ring's waits "
               "left out; median of %d runs" % CP_RUNS],
              ["cp rank %d" % i for i in range(4)], series, "ms per step")


def cp_longest(build, out_dir):
    model = ["--layers", "2", "--hidden", "64", "--heads", "4", "--batch_size", "2", "--steps", "1"]
    lengths = (128, 256, 512, 1024, 2048)
    kept = {}  # (cp, seq) -> activations of one rank, all blocks and the head
    for cp in (1, 2, 4):
        for seq in lengths:
            r = gpt_train(build, cp, model + ["--seq", str(seq), "--cp", str(cp)])
            kept[cp, seq] = r["ranks"][0]["peak_bytes"]["activations"]
    budget = kept[1, 256]
    longest = [max(seq for seq in lengths if kept[cp, seq] <= budget) for cp in (1, 2, 4)]
    bar_chart(os.path.join(out_dir, "gpt_cp_longest.svg"),
              "The longest sequence one rank's activations allow, by context parallelism",
              ["gpt_train, 2 blocks of h 64, 2 sequences: the longest of 128, 256, ..., 2048 "
               "positions whose",
               "measured activations per rank fit %.1f MiB (what one rank keeps at 256)"
               % (budget / 2 ** 20)],
              ["cp %d" % cp for cp in (1, 2, 4)], [("longest sequence that fits", longest)],
              "positions")


FIGURES = {"tp_activations": tp_activations, "moe_load": moe_load, "cp_attention": cp_attention,
           "cp_longest": cp_longest}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    out_dir = sys.argv[2] if len(sys.argv) >= 3 else "figs"
    chosen = sys.argv[3:] or list(FIGURES)
    unknown = [name for name in chosen if name not in FIGURES]
    if unknown:
        sys.exit("make-gpt-layout-figures.py: no figure %s\n%s" % (", ".join(unknown), __doc__))
    if not os.access(os.path.join(build, "gpt_train"), os.X_OK):
        sys.exit("make-gpt-layout-figures.py: %s/gpt_train does not exist: build it first "
                 "(cmake --build %s --target gpt_train)" % (build, build))
    for name in chosen:
        FIGURES[name](build, out_dir)


if __name__ == "__main__":
    main()
