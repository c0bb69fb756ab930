"""Loaded by test_bundle.py for assignment 4's bundle (the reference files copied in): its
dp_averaging trains on 3 ranks of uneven shares with the bundle's 14.5, gradient averaging landing
on one rank's weights; its gpt_train, built on the bundle's Part 14 and the earlier parts'
reference it carries compiled (starter/prebuilt/), trains a pipeline of interleaved chunks under
tensor and sequence parallelism to one rank's weights, and shards its model states over 2
data-parallel ranks with Part 9's reference (--zero 2) and with the bundle's 16.3 (--zero 3) to
the same weights."""
import json
import os
import re


def try_bundle_programs(steps, bundle):
    mpirun = [f"{bundle}/build/dtk-mpirun", "--allow-run-as-root", "--oversubscribe"]
    steps.step("averaging with the bundle's dp_averaging: 3 ranks of uneven shares, Adam")
    if not steps.logged("averaging.log", *mpirun, "-n", "3", f"{bundle}/build/dp_averaging",
                        "--optimizer", "adam"):
        steps.show("averaging.log")
        steps.fail("dp_averaging failed in the bundle")
    found = re.search(r"^gradient averaging\s+(\S+)", steps.read("averaging.log"), re.M)
    if not found or not float(found.group(1)) < 1e-12:
        steps.show("averaging.log")
        steps.fail("dp_averaging's gradient averaging is not one rank's weights in the bundle")
    steps.indented("averaging.log", "averaging|means")

    if not os.path.exists(f"{bundle}/starter/prebuilt"):
        print("    (no gpt_train: this release carries no earlier parts' reference)")
        return
    steps.step("training with the bundle's gpt_train: --pp 2 --tp 2 --sp, interleaved V = 2 (4 "
               "ranks), --dp 2 --zero 2 and --zero 3, against one rank")
    model = ["--layers", "6", "--hidden", "32", "--heads", "4", "--seq", "16", "--batch_size",
             "8", "--steps", "3", "--dtype", "double"]
    layouts = {"one": (1, []),
               "five": (4, ["--pp", "2", "--tp", "2", "--sp", "--schedule", "interleaved",
                            "--virtual", "2", "--microbatches", "2"]),
               "zero": (2, ["--dp", "2", "--zero", "2"]),
               "fsdp": (2, ["--dp", "2", "--zero", "3"])}
    weights = {}
    for name, (ranks, flags) in layouts.items():
        report = steps.path(f"gpt_{name}.json")
        if not steps.logged(f"gpt_{name}.log", *mpirun, "-n", str(ranks), f"{bundle}/build/gpt_train",
                            *model, *flags, "--report", report):
            steps.show(f"gpt_{name}.log")
            steps.fail(f"gpt_train {' '.join(flags)} failed in the bundle")
        with open(report) as file:
            weights[name] = json.load(file)["weights_l2"]
    for name, what in (("five", "interleaved pipeline"), ("zero", "ZeRO-2"),
                       ("fsdp", "ZeRO-3 on the bundle's 16.3")):
        difference = abs(weights[name] - weights["one"]) / weights["one"]
        print(f"    weights_l2 {weights['one']!r} on one rank, {weights[name]!r} with its {what}: "
              f"relative difference {difference:.1e}")
        if not difference < 1e-10:
            steps.show(f"gpt_{name}.log")
            steps.fail(f"gpt_train's {what} in the bundle does not train one rank's model")
    steps.indented("gpt_five.log", "^  pipeline:")
