"""Loaded by test_bundle.py for assignment 4's bundle (the reference files copied in): its
dp_averaging trains on 3 ranks of uneven shares with the bundle's 14.5, gradient averaging landing
on one rank's weights."""
import re


def try_bundle_programs(steps, bundle):
    steps.step("averaging with the bundle's dp_averaging: 3 ranks of uneven shares, Adam")
    if not steps.logged("averaging.log", f"{bundle}/build/dtk-mpirun", "--allow-run-as-root",
                        "--oversubscribe", "-n", "3", f"{bundle}/build/dp_averaging",
                        "--optimizer", "adam"):
        steps.show("averaging.log")
        steps.fail("dp_averaging failed in the bundle")
    found = re.search(r"^gradient averaging\s+(\S+)", steps.read("averaging.log"), re.M)
    if not found or not float(found.group(1)) < 1e-12:
        steps.show("averaging.log")
        steps.fail("dp_averaging's gradient averaging is not one rank's weights in the bundle")
    steps.indented("averaging.log", "averaging|means")
