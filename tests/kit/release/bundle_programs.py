"""What the bundle_programs_assignment<N>.py share: a bundle's unified_train, tried."""


def train(steps, bundle, flags, refused, because):
    """unified_train on 2 ranks for 3 steps trains with `flags`, and stops with a message holding
    `because` when given the `refused` flags (another assignment's)."""
    def unified_train(log, *args):
        return steps.logged(log, f"{bundle}/build/dtk-mpirun", "--allow-run-as-root",
                            "--oversubscribe", "-n", "2", f"{bundle}/build/unified_train", *args,
                            "--max_steps", "3")
    if not unified_train("train.log", *flags):
        steps.show("train.log")
        steps.fail(f"unified_train {' '.join(flags[:2])} failed in the bundle")
    steps.indented("train.log", "Test accuracy")
    if unified_train("refused.log", *refused) or because not in steps.read("refused.log"):
        steps.show("refused.log")
        steps.fail(f"unified_train {' '.join(refused)} should stop with '... {because}'")
    steps.indented("refused.log", "unified_train:")
