"""Loaded by test_bundle.py for assignment 1's bundle: its unified_train trains with assignment
1's trainer (tensor and data parallel) and refuses assignment 2's flags with a message."""
from bundle_programs import train


def try_bundle_programs(steps, bundle):
    steps.step("training with the bundle's unified_train: assignment 1's trainer, and a message "
               "for assignment 2's flags")
    train(steps, bundle, ["--mp_size", "2", "--dp_size", "1"],
          refused=["--pp_size", "2"], because="belongs to assignment 2")
