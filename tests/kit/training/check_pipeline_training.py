#!/usr/bin/env python3
"""Kit self-test of unified_train's pipeline trainer (assignment 2), run against the reference.

  layouts       every layout (pipeline, data and tensor parallel, naive and Megatron), schedule,
                micro-batch count and ZeRO stage trains to the weights of one rank (weights_l2
                of --report, relative 1e-5), SGD and Adam
  measurements  what the run measures holds: stashed micro-batches exactly (GPipe m, 1F1B
                min(p - s, m)); ZeRO's model states 1/dp of stage 0's within a shard's padding; ZeRO-3 sends 1.5x the bytes of stage 0 (within 5 %); every rank reports its
                bubble (bench/pipeline_benchmark.sh times it against (p - 1) / (m + p - 1))

usage: check_pipeline_training.py layouts|measurements <unified_train> <mpirun> [mpirun flags...]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

MODE, PROGRAM, MPIRUN = sys.argv[1], sys.argv[2], sys.argv[3:]
# 4 layers of 100480, 8256, 2080 and 330 parameters: none divisible by 3, the last not by 4.
MODEL = ["--hidden", "128,64,32"]
failures = []


def train(ranks, *flags, outputs=("report",)):
    """Runs unified_train on `ranks` ranks and returns the texts of its --report (parsed), and of
    its --trace and --timeline if asked for in `outputs`."""
    with tempfile.TemporaryDirectory() as scratch:
        paths = {name: os.path.join(scratch, name) for name in outputs}
        command = MPIRUN + ["-n", str(ranks), PROGRAM, *flags]
        for name, path in paths.items():
            command += [f"--{name}", path]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit(f"FAIL: {' '.join(command)} exited {run.returncode}\n"
                             f"{run.stdout[-2000:]}{run.stderr[-2000:]}")
        texts = {name: open(path).read() for name, path in paths.items()}
        texts["report"] = json.loads(texts["report"]) if "report" in texts else None
        return texts["report"] if outputs == ("report",) else texts


def schedule(name, stage, stages, m):
    """SPEC's schedules: one stage's ("F" or "B", micro-batch) steps."""
    if name == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    warmup = min(stages - stage - 1, m)
    steps = [("F", i) for i in range(warmup)]
    forwards, backwards = warmup, 0
    while forwards < m:
        steps += [("F", forwards), ("B", backwards)]
        forwards, backwards = forwards + 1, backwards + 1
    return steps + [("B", i) for i in range(backwards, m)]


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def layouts():
    # (ranks, flags): pipelines alone, with data parallelism (the homework: two pipelines of
    # three stages running three micro-batches), m < p, m = 1, and every ZeRO stage.
    cases = [
        (2, "--pp_size 2 --microbatches 1 --schedule gpipe"),
        (2, "--pp_size 2 --microbatches 4 --schedule 1f1b"),
        (3, "--pp_size 3 --microbatches 2 --schedule gpipe"),
        (4, "--pp_size 4 --microbatches 8 --schedule 1f1b"),
        (4, "--pp_size 4 --microbatches 3 --schedule 1f1b"),
        (6, "--pp_size 3 --dp_size 2 --microbatches 3 --schedule 1f1b"),
        (4, "--dp_size 4"),
        (8, "--pp_size 2 --dp_size 4 --microbatches 2 --schedule gpipe"),
        # 3-D: tensor parallel inside the stages, naive and Megatron.
        (2, "--mp_size 2 --pp_size 1"),
        (4, "--mp_size 2 --pp_size 2 --microbatches 3 --megatron-mp"),
        (8, "--mp_size 2 --pp_size 2 --dp_size 2 --microbatches 3 --schedule gpipe"),
    ]
    zero_cases = [
        (1, "--zero 3"),
        (3, "--dp_size 3 --zero 1"),
        (4, "--dp_size 4 --zero 2"),
        (2, "--dp_size 2 --zero 3"),
        (4, "--pp_size 2 --dp_size 2 --microbatches 3 --zero 3 --schedule gpipe"),
        (6, "--pp_size 2 --dp_size 3 --microbatches 2 --zero 2"),
        (8, "--dp_size 8 --zero 3"),
        (4, "--mp_size 2 --dp_size 2 --zero 2"),
        (8, "--mp_size 2 --pp_size 2 --dp_size 2 --microbatches 2 --zero 3 --megatron-mp"),
    ]
    common = MODEL + ["--max_steps", "4", "--batch_size", "96"]
    for optimizer, runs in (("sgd", cases + zero_cases[:2]), ("adam", zero_cases + cases[-3:])):
        reference = train(1, *common, "--optimizer", optimizer)["weights_l2"]
        for ranks, flags in runs:
            got = train(ranks, *common, "--optimizer", optimizer, *flags.split())["weights_l2"]
            error = abs(got - reference) / reference
            check(error <= 1e-5, f"{optimizer} {flags} (-n {ranks}): weights_l2 {got:.9g}, one rank "
                                 f"{reference:.9g}, relative error {error:.1e}")


def measurements():
    common = MODEL + ["--max_steps", "3", "--batch_size", "96"]
    # Stashed activations: GPipe keeps all m micro-batches, 1F1B at most p - s on stage s.
    for schedule, m in (("gpipe", 8), ("1f1b", 8), ("1f1b", 3)):
        report = train(4, *common, "--pp_size", "4", "--microbatches", str(m), "--schedule",
                       schedule)
        stashed = [r["peak_stashed_microbatches"] for r in report["ranks"]]
        bound = [m if schedule == "gpipe" else min(4 - s, m) for s in range(4)]
        check(stashed == bound, f"{schedule}, 4 stages, {m} micro-batches: stashed {stashed}, "
                                f"expected {bound}")

    # ZeRO on 4 data-parallel ranks: each stage shards one more of the model states.
    dp, layers = 4, 4
    states = {z: train(dp, *common, "--dp_size", str(dp), "--optimizer", "adam", "--zero", str(z))
              for z in range(4)}
    plain = states[0]["ranks"][0]["peak_bytes"]
    # A shard is ceil(numel / dp) values, padding included; Adam keeps its states (8 bytes a
    # value) for the values a rank owns, which the last ranks have fewer of.
    for z, category, value_bytes in ((1, "optimizer", 8), (2, "gradients", 4),
                                     (3, "parameters", 4)):
        padding = dp * layers * value_bytes
        for rank in states[z]["ranks"]:
            got, share = rank["peak_bytes"][category], plain[category] / dp
            check(abs(got - share) < padding,
                  f"ZeRO-{z} rank {rank['rank']}: {category} {got} bytes, 1/{dp} of stage 0's is "
                  f"{share:.0f} (within {padding} bytes: padding)")
    ratio = states[3]["ranks"][0]["bytes_sent_per_step"] / plain_bytes(states[0])
    check(abs(ratio - 1.5) <= 0.075, f"ZeRO-3 sends {ratio:.3f}x the bytes of stage 0 per step "
                                     f"(1.5 within 5 %)")

    # The bubble is reported on every rank, a share of the step in [0, 1]. How close it comes to
    # (p - 1) / (m + p - 1) is a timing, which other work on the machine moves: that is
    # bench/pipeline_benchmark.sh's to measure, never a test's.
    for m in (1, 8):
        report = train(2, "--hidden", "256,500", "--pp_size", "2", "--microbatches", str(m),
                       "--max_steps", "5", "--batch_size", "512")
        bubbles = [r.get("bubble_fraction") for r in report["ranks"]]
        check(len(bubbles) == 2 and all(isinstance(b, float) and 0 <= b <= 1 for b in bubbles),
              f"1F1B, 2 stages, {m} micro-batches: bubble_fraction of each rank {bubbles}, "
              f"in [0, 1] (theory {1 / (m + 1):.3f}: bench/pipeline_benchmark.sh compares)")


def timelines():
    """--timeline draws every rank's boxes in its schedule's order; --trace holds them all."""
    for name in ("gpipe", "1f1b"):
        out = train(4, *MODEL, "--pp_size", "4", "--microbatches", "8", "--schedule", name,
                    "--max_steps", "2", "--batch_size", "96",
                    outputs=("report", "trace", "timeline"))
        boxes = {}  # rank -> [(x, kind, mb)]
        for rect in re.finditer(r'<rect x="([0-9.]+)"[^>]*data-rank="(\d+)" data-kind="([FB])" '
                                r'data-mb="(\d+)"', out["timeline"]):
            x, rank, kind, mb = float(rect[1]), int(rect[2]), rect[3], int(rect[4])
            boxes.setdefault(rank, []).append((x, kind, mb))
        for rank in range(4):
            # By x alone: boxes a tenth of a pixel apart (a step of the last stage's tiny layer)
            # share an x, and then the SVG's order, the order they ran in, decides.
            in_order = sorted(boxes.get(rank, []), key=lambda box: box[0])
            drawn = [(kind, mb) for _, kind, mb in in_order]
            check(drawn == schedule(name, rank, 4, 8),
                  f"{name} timeline, rank {rank}: boxes {' '.join(k + str(m) for k, m in drawn)}")
        events = json.loads(out["trace"])["traceEvents"]
        work = [e for e in events if e.get("ph") == "X" and re.fullmatch(r"[FB]\d+", e["name"])]
        sends = [e for e in events if e.get("ph") == "X" and e["name"].startswith(("Send", "Recv"))]
        check(len(work) == 2 * 4 * 2 * 8 and {e["pid"] for e in work} == set(range(4)) and sends,
              f"{name} trace: {len(work)} F/B events over 2 steps of 4 ranks (expected 128), "
              f"{len(sends)} sends and receives")


def plain_bytes(report):
    return report["ranks"][0]["bytes_sent_per_step"]


{"layouts": layouts, "measurements": lambda: (measurements(), timelines())}[MODE]()
if failures:
    sys.exit(f"FAIL: {len(failures)} check(s)")
