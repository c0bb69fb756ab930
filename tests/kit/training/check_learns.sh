#!/usr/bin/env bash
# Kit self-test: a short unified_train run on Fashion-MNIST (4 ranks, mp_size 2 x dp_size 2)
# learns: the loss of its last progress line is below that of its first, and the test accuracy
# is above 0.6. It must also print the communication and memory breakdowns.
#
# usage: check_learns.sh <unified_train> <extra flag or ""> <mpirun> [mpirun flags...]
set -u
program=$1 extra=$2
shift 2
output=$("$@" -n 4 "$program" --mp_size 2 --dp_size 2 --max_steps 120 ${extra:+"$extra"} 2>&1)
status=$?

fail() {
  printf '%s\n' "$output" | tail -n 30
  echo "FAIL: unified_train${extra:+ $extra}: $1"
  exit 1
}

[ "$status" -eq 0 ] || fail "exited with status $status"
losses=$(printf '%s\n' "$output" | sed -nE 's/^epoch .* loss ([0-9.]+) .*/\1/p')
first=$(echo "$losses" | head -n 1)
last=$(echo "$losses" | tail -n 1)
[ -n "$first" ] || fail "no progress line with a loss"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' ||
  fail "the loss did not fall (first progress line $first, last $last)"
accuracy=$(printf '%s\n' "$output" | sed -nE 's/^Test accuracy: ([0-9.]+).*/\1/p')
[ -n "$accuracy" ] || fail "no 'Test accuracy:' line"
awk -v a="$accuracy" 'BEGIN { exit !(a > 0.6) }' || fail "test accuracy $accuracy is not above 0.6"
for heading in "Communication during training" "Peak memory per pass"; do
  printf '%s\n' "$output" | grep -q "^$heading" || fail "no '$heading' breakdown"
done
echo "ok: unified_train${extra:+ $extra}: loss $first -> $last, test accuracy $accuracy"
