#!/usr/bin/env bash
# Kit self-test of the test harness (tests/harness): runs harness_cases under mpirun and checks
# that a failure or an exception on one rank fails the case with one report naming that rank,
# and that a deadlock is stopped by the watchdog with its message instead of hanging.
#
# usage: check_harness.sh <harness_cases program> <mpirun> [mpirun flags...]
set -u
program=$1
shift

fail() {
  printf '%s\n' "$output" | tail -n 30
  echo "FAIL: $1"
  exit 1
}

run() {  # run <tag>: one tagged case on 4 ranks
  output=$(DTK_TEST_TIMEOUT=2 "$@" -x DTK_TEST_TIMEOUT -n 4 "$program" "[$tag]" --use-colour no 2>&1)
  status=$?
}

tag=one_rank_fails run "$@"
[ "$status" -ne 0 ] || fail "a failure on rank 2 did not fail the run"
[ "$(printf '%s\n' "$output" | grep -c '\[rank 2\] the answer: expected 42, got 41')" = 1 ] ||
  fail "rank 2's failure is not reported exactly once"
printf '%s\n' "$output" | grep -q '^test cases: 1 | 1 failed' || fail "the case did not fail"

tag=one_rank_throws run "$@"
[ "$(printf '%s\n' "$output" | grep -c '\[rank 1\] rank 1 gave up')" = 1 ] ||
  fail "rank 1's exception is not reported exactly once"

tag=deadlock run "$@"
[ "$status" -ne 0 ] && [ "$status" -ne 110 ] || fail "the deadlock was not stopped by the watchdog (exit $status)"
printf '%s\n' "$output" | grep -q 'is still running after 2 s: probably a rank is waiting in a collective' ||
  fail "no watchdog message for the deadlock"

echo "ok: one-rank failures are reported once with their rank; a deadlock is stopped"
