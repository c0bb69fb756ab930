# Sourced by test_bundle.sh for assignment 1's bundle: its unified_train trains with assignment
# 1's trainer (tensor and data parallel) and refuses assignment 2's flags with a message.
try_bundle_programs() {
  local bundle=$1
  step "training with the bundle's unified_train: assignment 1's trainer, and a message for assignment 2's flags"
  train() { "$bundle/build/dtk-mpirun" --allow-run-as-root --oversubscribe -n 2 "$bundle/build/unified_train" "$@" --max_steps 3; }
  logged train.log train --mp_size 2 --dp_size 1 || { show train.log; fail "unified_train --mp_size 2 failed in the bundle"; }
  grep 'Test accuracy' "$work/train.log" | sed 's/^/    /'
  if logged refused.log train --pp_size 2 || ! grep -q "belongs to assignment 2" "$work/refused.log"; then
    show refused.log
    fail "unified_train --pp_size 2 should stop with '... belongs to assignment 2'"
  fi
  grep 'unified_train:' "$work/refused.log" | sed 's/^/    /'
}
