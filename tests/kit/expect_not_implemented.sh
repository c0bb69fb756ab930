#!/usr/bin/env bash
# Kit self-test: a public test program built against the starter must fail cleanly: every test
# case fails with the NotImplemented message of a stub, reported once by rank 0 (the ranks that
# met it named in one group: all of them, or those of one side of an exchange, such as the
# sending stage of Part 14.4), and the run ends with an ordinary failure status (no crash, no
# hang).
#
# usage: expect_not_implemented.sh <ranks> <program> <mpirun> [mpirun flags...]
set -u
ranks=$1 program=$2
shift 2
output=$("$@" -n "$ranks" "$program" --use-colour no 2>&1)
status=$?

fail() {
  printf '%s\n' "$output" | tail -n 40
  echo "FAIL: $(basename "$program") on the starter: $1"
  exit 1
}

case $status in
  0) fail "exited 0, but every stub should throw NotImplemented" ;;
  110) fail "timed out (a hang)" ;;
esac
[ "$status" -lt 128 ] || fail "killed by a signal (exit $status)"

summary=$(printf '%s\n' "$output" | grep -E '^test cases: *[0-9]+ *\| *[0-9]+ failed' | tail -n 1)
[ -n "$summary" ] || fail "no Catch2 summary line: did it crash?"
total=$(echo "$summary" | sed -E 's/^test cases: *([0-9]+).*/\1/')
failed=$(echo "$summary" | sed -E 's/.*\| *([0-9]+) failed.*/\1/')
[ "$total" = "$failed" ] || fail "$failed of $total test cases failed; all should"

reported=$(printf '%s\n' "$output" | grep -cE "^ *\[ranks? [0-9, -]+\] NotImplemented: dtk::")
[ "$reported" = "$total" ] ||
  fail "expected one '[ranks ...] NotImplemented: dtk::...' report per test case ($total), found $reported"

echo "ok: $(basename "$program"): all $total test cases fail with NotImplemented, reported once"
