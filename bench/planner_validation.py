#!/usr/bin/env python3
"""Part 13's simulator against gpt_train (bench/planner_validation.sh runs it; see there).

For each layout: plan_training simulates the plan and writes it as JSON (--json), gpt_train runs
that file (--plan) three times, and the table shows the measured step time (median, and the
range) and the fullest rank's peak bytes beside the simulation's: its model states and
activations, which both count, and apart from them its transient buffers (gpt_train keeps every
layer's outputs and gradients between steps; the simulator counts the logits and ZeRO-3's
gathered layers only). A mixture of experts under expert parallelism is simulated at the
capacity factor its runs measured (the fullest ep rank's (token, choice) rows over the mean,
block by block: a router at its start is far from even), given to plan_training as the model's
"capacity_factor". Then, for each rank count, the plan the planner picks for this machine is run
too and set against the fastest layout measured.

usage: planner_validation.py BUILD_DIR GPT_TRAIN MACHINE_JSON MACHINE_BF16_JSON [--csv FILE]
                            [--svg FILE]
"""
import argparse
import csv
import html
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

# The default GPT of the handout's learning run, 6 steps (the step time: the mean of steps 2-6).
MODEL_FLAGS = ["--layers", "4", "--hidden", "256", "--heads", "4", "--seq", "128",
               "--batch_size", "32"]
EXPERT_FLAGS = ["--experts", "4", "--top_k", "2"]
RUN_FLAGS = ["--steps", "6", "--eval_every", "7"]
REPEATS = 3
GOAL = 1.25  # issue 36: every layout's simulated step within 1.25x of the measured one
# The memory both count alike: Part 9's model states and the activations kept for the backward.
MODELLED = ("parameters", "gradients", "optimizer", "activations")

# (ranks, the plan in plan_training's --plans words, gpt_train flags beside --plan, experts?):
# each field of a plan varied alone, then together, up to 8 ranks on this machine's cores; and in
# bf16 (a plan has no dtype: gpt_train's --dtype bf16 beside it, the simulated cluster the
# machine's calibration for bf16 runs, with "value_bytes" 2).
BF16 = ["--dtype", "bf16"]
LAYOUTS = [
    (1, "dp=1", [], False),
    (2, "dp=2", [], False),
    (2, "tp=2 dp=1", [], False),
    (2, "tp=2 dp=1 sp", [], False),
    (2, "cp=2 dp=1", ["--zigzag"], False),
    (2, "dp=2 ep=2", [], True),
    (2, "pp=2 dp=1 microbatches=4 1f1b", [], False),
    (2, "pp=2 dp=1 microbatches=4 gpipe", [], False),
    (2, "pp=2 dp=1 microbatches=8 1f1b", [], False),
    (1, "dp=1 recompute", [], False),
    (2, "dp=2 zero=1", [], False),
    (2, "dp=2 zero=2", [], False),
    (2, "dp=2 zero=3", [], False),
    (4, "dp=4", [], False),
    (4, "tp=2 dp=2 sp", [], False),
    (4, "cp=2 dp=2", ["--zigzag"], False),
    (4, "dp=4 ep=4", [], True),
    (4, "pp=2 dp=2 microbatches=4 1f1b", [], False),
    (4, "pp=4 dp=1 microbatches=8 1f1b", [], False),
    (4, "tp=2 pp=2 dp=1 sp microbatches=4 1f1b", [], False),
    (4, "dp=4 zero=3 recompute", [], False),
    (8, "dp=8", [], False),
    (8, "tp=2 cp=2 dp=2 sp", ["--zigzag"], False),
    (8, "tp=2 pp=2 dp=2 sp microbatches=4 1f1b", [], False),
    (1, "dp=1", BF16, False),
    (2, "dp=2 zero=1", BF16, False),
    (4, "tp=2 dp=2 sp", BF16, False),
    (4, "dp=4 zero=3 recompute", BF16, False),
]


def plan_flags(words):
    """plan_training's flags for a plan in its --plans words ("tp=2 sp 1f1b")."""
    flags = []
    for word in words.split():
        key, _, value = word.partition("=")
        if value:
            flags += ["--zero" if key == "zero" else "--" + key, value]
        elif word in ("1f1b", "gpipe"):
            flags += ["--schedule", word]
        else:
            flags.append("--" + word)
    return flags


def plan_words(plan):
    """A plan's JSON (plan_training --json's) in --plans words."""
    words = ["%s=%d" % (key, plan[key]) for key in ("tp", "cp", "pp", "dp", "ep", "microbatches")]
    words.append("zero=%d" % plan["zero_stage"])
    words += ["sp"] * plan["sequence_parallel"] + ["recompute"] * plan["recompute"]
    return " ".join(words + [plan["schedule"]])


class Validation:
    def __init__(self, build, gpt_train, machine, machine_bf16, scratch):
        self.plan_training = os.path.join(build, "plan_training")
        self.gpt_train, self.scratch = gpt_train, scratch
        self.machines = {False: json.load(open(machine)), True: json.load(open(machine_bf16))}
        self.mpirun = ["mpirun", "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        vocab = self.report(1, [], "vocabulary", steps=["--steps", "1", "--eval_every", "2"])["model"]["vocab_size"]
        self.vocab = vocab
        self.models = {experts: self.model_file(experts) for experts in (False, True)}

    def path(self, name):
        return os.path.join(self.scratch, name)

    def report(self, ranks, flags, name, steps=RUN_FLAGS):
        """gpt_train's report of one run (None, and its last line, when it refuses or fails)."""
        report = self.path(name + ".report.json")
        run = subprocess.run(self.mpirun + ["-n", str(ranks), self.gpt_train] + MODEL_FLAGS + flags
                             + steps + ["--report", report], capture_output=True, text=True)
        if run.returncode != 0:
            lines = [l for l in (run.stderr + run.stdout).splitlines() if l.strip()]
            raise RuntimeError(next((l for l in lines if l.startswith("gpt_train:")), lines[-1] if lines else "failed"))
        return json.load(open(report))

    def model_file(self, experts, capacity_factor=1):
        config = {"model_type": "gpt2", "vocab_size": self.vocab, "n_embd": 256, "n_inner": 1024,
                  "n_layer": 4, "n_head": 4, "n_positions": 128, "tie_word_embeddings": False}
        if experts:
            config.update(num_local_experts=4, num_experts_per_tok=2, capacity_factor=capacity_factor)
        path = self.path("model%s%s.json" % ("-moe" if experts else "",
                                              "" if capacity_factor == 1 else "-uneven"))
        json.dump(config, open(path, "w"))
        return path

    def cluster_file(self, ranks, bf16):
        """This machine (as a bf16 run sees it, or a float one) as `ranks` GPUs on one node, each
        with its share of the cores' rates."""
        machine = self.machines[bf16]
        share = machine["gpus"] / ranks
        cluster = dict(machine, gpus=ranks, gpus_per_node=ranks,
                       about="this machine as %d GPUs" % ranks)
        for rate in ("peak_tflops", "gemm_tflops", "expert_gemm_tflops"):
            if rate in machine:
                cluster[rate] = machine[rate] * share
        path = self.path("cluster%d%s.json" % (ranks, "-bf16" if bf16 else ""))
        json.dump(cluster, open(path, "w"))
        return path

    def plan_training_args(self, ranks, experts, bf16=False, model=None):
        return [self.plan_training, "--model", model or self.models[experts], "--cluster",
                self.cluster_file(ranks, bf16), "--tokens", str(32 * 128), "--seq", "128"]

    def simulated(self, ranks, words, experts, bf16, model=None):
        out = subprocess.run(self.plan_training_args(ranks, experts, bf16, model) + ["--plans", "-"],
                             input=words, capture_output=True, text=True, check=True).stdout
        row = next(csv.DictReader(io.StringIO(out)))
        kept = sum(float(row[k + "_gb"]) for k in MODELLED)
        return (float(row["step_seconds"]), kept * 1e9, float(row["transient_gb"]) * 1e9,
                row["why_invalid"])

    def planners_pick(self, ranks):
        """The plan the planner picks for `ranks` cores of this machine, as JSON."""
        path = self.path("pick%d.json" % ranks)
        subprocess.run(self.plan_training_args(ranks, False) + ["--json", path],
                       capture_output=True, text=True, check=True)
        return json.load(open(path))

    def measure(self, ranks, words, extra, experts):
        """One layout: simulated, then run REPEATS times from its plan file."""
        bf16 = extra == BF16
        row = {"ranks": ranks, "plan": words + (" bf16" if bf16 else "")}
        (row["simulated_s"], row["simulated_bytes"], row["simulated_transient"],
         why) = self.simulated(ranks, words, experts, bf16)
        if why:
            row["skipped"] = "the simulator refuses it: " + why
            return row
        plan = self.path("plan.json")
        subprocess.run(self.plan_training_args(ranks, experts, bf16) + plan_flags(words) + ["--json", plan],
                       capture_output=True, text=True, check=True)
        flags = ["--plan", plan] + extra + (EXPERT_FLAGS if experts else [])
        steps, peaks, reports = [], [], []
        try:
            for repeat in range(REPEATS):
                report = self.report(ranks, flags, "run")
                reports.append(report)
                history = report["history"]
                steps.append((history[-1]["seconds"] - history[0]["seconds"]) / (len(history) - 1))
                kept = lambda rank: sum(rank["peak_bytes"][k] for k in MODELLED)
                fullest = max(report["ranks"], key=kept)
                peaks.append((kept(fullest), fullest["peak_bytes"]["transient"]))
        except RuntimeError as refusal:
            row["skipped"] = str(refusal)
            return row
        row.update(measured_s=statistics.median(steps), fastest_s=min(steps), slowest_s=max(steps),
                   measured_bytes=max(p[0] for p in peaks), measured_transient=max(p[1] for p in peaks))
        ep = int(dict(w.partition("=")[::2] for w in words.split()).get("ep", 1))
        if experts and ep > 1:
            row["capacity"] = statistics.median(capacity_factor(r, ep) for r in reports)
            (row["simulated_s"], row["simulated_bytes"], row["simulated_transient"],
             _) = self.simulated(ranks, words, experts, bf16, self.model_file(True, row["capacity"]))
        return row


def capacity_factor(report, ep):
    """A run's capacity factor: the rows of the fullest of the ep ranks (each holding E/ep
    consecutive experts), summed over the blocks (each block's dispatch waits for its fullest
    rank), over the mean rank's, in the timed steps (2 on). The rows are the whole batch's: with
    dp = ep, one expert-parallel group's."""
    experts = report["model"]["experts"]
    held = experts // ep
    fullest = mean = 0
    for step in report["history"][1:]:
        rows = step["expert_rows"]
        for block in range(0, len(rows), experts):
            loads = [sum(rows[block + r * held:block + (r + 1) * held]) for r in range(ep)]
            fullest += max(loads)
            mean += sum(loads) / ep
    return fullest / mean


def print_table(rows):
    print("MB: the fullest rank's model states and activations, measured and simulated; then its "
          "transient buffers, measured and simulated. cf: a mixture's capacity factor, measured, "
          "which the simulation takes")
    print("%-40s %5s %19s %11s %9s %10s %10s %9s %10s %8s" % (
        "plan", "ranks", "measured s (range)", "simulated s", "sim/meas", "meas. MB", "sim. MB",
        "sim/meas", "trans. MB", "sim. MB"))
    for r in rows:
        if "skipped" in r:
            print("%-40s %5d  skipped: %s" % (r["plan"], r["ranks"], r["skipped"]))
            continue
        plan = r["plan"] + (" cf %.2f" % r["capacity"] if "capacity" in r else "")
        print("%-40s %5d %6.3f (%.3f-%.3f) %11.3f %8.2fx %10.1f %10.1f %8.2fx %10.1f %8.1f" % (
            plan, r["ranks"], r["measured_s"], r["fastest_s"], r["slowest_s"], r["simulated_s"],
            r["simulated_s"] / r["measured_s"], r["measured_bytes"] / 1e6, r["simulated_bytes"] / 1e6,
            r["simulated_bytes"] / r["measured_bytes"], r["measured_transient"] / 1e6,
            r["simulated_transient"] / 1e6))


def off_by(ratio):
    return max(ratio, 1 / ratio)


def print_summary(rows, picks):
    measured = [r for r in rows if "measured_s" in r]
    worst = max(measured, key=lambda r: off_by(r["simulated_s"] / r["measured_s"]))
    within = sum(off_by(r["simulated_s"] / r["measured_s"]) <= GOAL for r in measured)
    print("\nStep time: %d of %d layouts within %.2fx; the worst, %s on %d ranks: simulated %.2fx the measured"
          % (within, len(measured), GOAL, worst["plan"], worst["ranks"], worst["simulated_s"] / worst["measured_s"]))
    memory = [r["simulated_bytes"] / r["measured_bytes"] for r in measured]
    print("Model states and activations: %d of %d layouts within %.2fx (simulated %.2f-%.2fx the "
          "measured)" % (sum(off_by(m) <= GOAL for m in memory), len(memory), GOAL, min(memory),
                         max(memory)))
    for ranks, pick in picks:
        fastest = min((r for r in measured if r["ranks"] == ranks), key=lambda r: r["measured_s"])
        if "measured_s" not in pick:
            print("The planner's pick on %d ranks, %s: %s" % (ranks, pick["plan"], pick.get("skipped", "")))
            continue
        print("The planner's pick on %d ranks, %s: %.3f s a step, %.2fx the fastest measured (%s, %.3f s)"
              % (ranks, pick["plan"], pick["measured_s"], pick["measured_s"] / fastest["measured_s"],
                 fastest["plan"], fastest["measured_s"]))


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["plan", "ranks", "measured_seconds", "fastest_seconds", "slowest_seconds",
                      "simulated_seconds", "measured_kept_bytes", "simulated_kept_bytes",
                      "measured_transient_bytes", "simulated_transient_bytes", "skipped"])
        for r in rows:
            out.writerow([r["plan"], r["ranks"], r.get("measured_s", ""), r.get("fastest_s", ""),
                          r.get("slowest_s", ""), r["simulated_s"], r.get("measured_bytes", ""),
                          r["simulated_bytes"], r.get("measured_transient", ""),
                          r["simulated_transient"], r.get("skipped", "")])


def tick_step(raw):
    """The round step (1, 2, 2.5 or 5 times a power of ten) at least `raw`."""
    power = 10 ** math.floor(math.log10(raw))
    return next(power * f for f in (1, 2, 2.5, 5, 10) if power * f >= raw)


def scatter(left, title, unit, rows, measured, spread, simulated):
    """One panel: simulated against measured, a point per layout (`spread`: its measured range, a
    bar), the diagonal and the 1.25x band; SVG elements, the panel's left edge at `left`."""
    top = 4 * tick_step(max(max(max(spread(r)), simulated(r)) for r in rows) * 1.05 / 4)
    size, bottom = 360, 400
    x = lambda v: left + size * v / top
    y = lambda v: bottom - size * v / top
    s = ['<text x="%d" y="18" font-size="13">%s</text>' % (left, html.escape(title)),
         '<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="#e8f0e0"/>' % (
             x(0), y(0), x(top / GOAL), y(top), x(top), y(top), x(top), y(top / GOAL)),
         '<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-dasharray="4 3"/>' % (x(0), y(0), x(top), y(top)),
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>' % (left, bottom, left + size, bottom),
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>' % (left, bottom, left, bottom - size)]
    for k in range(5):
        v = top * k / 4
        s.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (x(v), bottom + 14, v))
        s.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (left - 6, y(v) + 4, v))
    s.append('<text x="%d" y="%d" text-anchor="middle">measured %s</text>' % (left + size / 2, bottom + 32, html.escape(unit)))
    s.append('<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle">simulated</text>' % (left - 44, bottom - size / 2))
    for r in rows:
        c = COLOURS.get(r["ranks"], "#666")
        low, high = spread(r)
        if high > low:
            s.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>' % (
                x(low), y(simulated(r)), x(high), y(simulated(r)), c))
        fill = "white" if r["plan"].endswith(" bf16") else c
        s.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s" stroke="%s"><title>%s, %d ranks</title>'
                 '</circle>' % (x(measured(r)), y(simulated(r)), fill, c, html.escape(r["plan"]), r["ranks"]))
    return s


COLOURS = {1: "#333333", 2: "#4878a8", 4: "#e0a030", 8: "#b04040"}


def write_svg(path, rows):
    """Two panels, simulated against measured: the step time (the measured range as a bar), and the
    fullest rank's model states and activations (what both count; its transient buffers left out)."""
    rows = [r for r in rows if "measured_s" in r]
    left, width = 60, 450
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="450" font-family="sans-serif" '
         'font-size="11" role="img" aria-label="simulated against measured step time and memory">'
         % (left + 2 * width - 60)]
    s += scatter(left, "gpt_train's step, simulated against measured", "s (median of %d; bar: range)" % REPEATS,
                 rows, lambda r: r["measured_s"], lambda r: (r["fastest_s"], r["slowest_s"]),
                 lambda r: r["simulated_s"])
    s += scatter(left + width, "model states and activations, fullest rank", "MB", rows,
                 lambda r: r["measured_bytes"] / 1e6, lambda r: (r["measured_bytes"] / 1e6,) * 2,
                 lambda r: r["simulated_bytes"] / 1e6)
    for i, (ranks, c) in enumerate(sorted(COLOURS.items())):
        s.append('<circle cx="%d" cy="%d" r="3.5" fill="%s"/><text x="%d" y="%d">%d rank%s</text>' % (
            left + 12, 40 + 15 * i, c, left + 20, 44 + 15 * i, ranks, "" if ranks == 1 else "s"))
    s.append('<rect x="%d" y="%d" width="8" height="8" fill="#e8f0e0"/><text x="%d" y="%d">within '
             '%.2fx</text>' % (left + 8, 36 + 15 * len(COLOURS), left + 20, 44 + 15 * len(COLOURS), GOAL))
    s.append('<circle cx="%d" cy="%d" r="3.5" fill="white" stroke="#666"/><text x="%d" y="%d">bf16 '
             '(hollow)</text>' % (left + 12, 40 + 15 * (len(COLOURS) + 1), left + 20,
                                  44 + 15 * (len(COLOURS) + 1)))
    s.append("</svg>")
    open(path, "w").write("\n".join(s) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("gpt_train")
    parser.add_argument("machine")
    parser.add_argument("machine_bf16")
    parser.add_argument("--csv")
    parser.add_argument("--svg")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        v = Validation(args.build, args.gpt_train, args.machine, args.machine_bf16, scratch)
        rows = [v.measure(*layout) for layout in LAYOUTS]
        print_table(rows)
        picks = []
        for ranks in sorted({r for r, *_ in LAYOUTS if r > 1}):
            words = plan_words(v.planners_pick(ranks))
            picks.append((ranks, v.measure(ranks, words, [], False)))
        print_summary(rows, picks)
    if args.csv:
        write_csv(args.csv, rows)
    if args.svg:
        write_svg(args.svg, rows)


if __name__ == "__main__":
    try:
        main()
    except (OSError, subprocess.CalledProcessError, json.JSONDecodeError) as error:
        sys.exit("planner_validation: %s" % error)
