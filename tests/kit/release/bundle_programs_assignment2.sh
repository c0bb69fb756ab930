# Sourced by test_bundle.sh for assignment 2's bundle: its unified_train trains a pipeline with
# assignment 2's trainer and refuses tensor parallelism (assignment 1's functions) with a message.
try_bundle_programs() {
  local bundle=$1
  step "training with the bundle's unified_train: assignment 2's trainer, and a message for assignment 1's flags"
  train() { "$bundle/build/dtk-mpirun" --allow-run-as-root --oversubscribe -n 2 "$bundle/build/unified_train" "$@" --max_steps 3; }
  logged train.log train --pp_size 2 --hidden 64,64 --microbatches 2 ||
    { show train.log; fail "unified_train --pp_size 2 failed in the bundle"; }
  grep 'Test accuracy' "$work/train.log" | sed 's/^/    /'
  if logged refused.log train --mp_size 2 --pp_size 1 || ! grep -q "which this build does not hold" "$work/refused.log"; then
    show refused.log
    fail "unified_train --mp_size 2 --pp_size 1 should stop with '... which this build does not hold'"
  fi
  grep 'unified_train:' "$work/refused.log" | sed 's/^/    /'
}
