"""Loaded by test_bundle.py for assignment 2's bundle: its unified_train trains a pipeline with
assignment 2's trainer and refuses tensor parallelism (assignment 1's functions) with a
message."""
from bundle_programs import train


def try_bundle_programs(steps, bundle):
    steps.step("training with the bundle's unified_train: assignment 2's trainer, and a message "
               "for assignment 1's flags")
    train(steps, bundle, ["--pp_size", "2", "--hidden", "64,64", "--microbatches", "2"],
          refused=["--mp_size", "2", "--pp_size", "1"], because="which this build does not hold")
