"""Loaded by test_bundle.py for assignment 3's bundle (the reference files copied in): its
gpt_train trains a small GPT on the Bible for a few steps, and refuses a pipeline in one line
(the bundle holds no Part 8); its plan_training (Part 13) plans the public Llama-3-8B case as the
reference does and simulates a plan given by flags."""
import re


def try_bundle_programs(steps, bundle):
    configs = f"{bundle}/starter/src/planning/configs"
    steps.step("planning with the bundle's plan_training: the reference's plan, and a plan by flags")

    def plan(log, *flags):
        return steps.logged(log, f"{bundle}/build/plan_training", "--model",
                            f"{configs}/llama3_8b.json", "--cluster",
                            f"{configs}/h100_80gb_x64.json", "--tokens", "4194304", "--seq",
                            "8192", *flags)
    if not plan("plan.log"):
        steps.show("plan.log")
        steps.fail("plan_training failed in the bundle")
    if not re.search(r"^Plan: tp=2 cp=1 pp=1 dp=32 ep=1 microbatches=8 zero=1 sp 1f1b$",
                     steps.read("plan.log"), re.M):
        steps.show("plan.log")
        steps.fail("plan_training's plan differs from the reference's")
    if not plan("flags.log", "--tp", "8", "--microbatches", "64", "--zero", "1", "--sp"):
        steps.show("flags.log")
        steps.fail("plan_training --tp 8 ... failed in the bundle")
    for log in ("plan.log", "flags.log"):
        steps.indented(log, "^Plan|valid")

    def gpt_train(log, *flags):  # a small GPT, on the Bible
        return steps.logged(log, f"{bundle}/build/gpt_train", "--layers", "1", "--hidden", "32",
                            "--heads", "2", "--seq", "16", "--batch_size", "4", *flags)

    steps.step("training with the bundle's gpt_train: a small GPT, a few steps on the Bible")
    if not gpt_train("gpt.log", "--steps", "3", "--sample", "20"):
        steps.show("gpt.log")
        steps.fail("gpt_train failed in the bundle")
    if "King James Bible" not in steps.read("gpt.log"):
        steps.show("gpt.log")
        steps.fail("gpt_train did not read the Bible")
    losses = [line for line in steps.read("gpt.log").splitlines() if "loss" in line]
    if losses:
        print(f"    {losses[-1]}")

    steps.step("gpt_train's pipeline runs on Part 8, which the bundle does not hold: one line")
    if gpt_train("pipeline.log", "--steps", "1", "--microbatches", "2"):
        steps.show("pipeline.log")
        steps.fail("gpt_train --microbatches 2 ran in a bundle without Part 8's functions")
    if "this build of gpt_train does not hold" not in steps.read("pipeline.log"):
        steps.show("pipeline.log")
        steps.fail("gpt_train --microbatches 2 did not say that the bundle has no pipeline")
    steps.indented("pipeline.log", "^gpt_train:")
