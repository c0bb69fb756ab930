#!/usr/bin/env bash
# Self-test: dtk-grade refuses to grade when the sandbox user can read what a submission must
# never see: here a batch's expected outputs (--expected-cache) and a private path (--private,
# what a batch passes for its hand-ins and results), both left readable by everyone.
#   1. as root without CAP_SYS_ADMIN (no mount namespace can hide them, as in many containers):
#      exit status 1, a message naming both, and a results.json saying the grader failed;
#   2. as root with CAP_SYS_ADMIN: both are hidden from the sandbox, and the grading proceeds.
#
# usage: refuses_readable_secrets.sh <dtk-grade> <solutions dir> <work dir>
set -euo pipefail
grade=$1 solutions=$2 work=$3
fail() {
  echo "FAIL: $*"
  exit 1
}
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: needs root (not root, dtk-grade has no sandbox to refuse for)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
secrets=$(mktemp -d /var/tmp/dtk-selftest-secrets.XXXXXX)
trap 'rm -rf "$secrets"' EXIT
mkdir -p "$secrets/expected" "$secrets/handins/alice"
echo "alice's work" > "$secrets/handins/alice/func_impl.cpp"
chmod -R a+rX "$secrets"
args=("$solutions" --seed 7 --expected-cache "$secrets/expected" --private "$secrets/handins")

echo "1. without CAP_SYS_ADMIN"
status=0
setpriv --bounding-set -sys_admin "$grade" "${args[@]}" --results "$work/refused.json" \
  > "$work/refused.log" 2>&1 || status=$?
cat "$work/refused.log"
[ "$status" = 1 ] || fail "dtk-grade exited with $status, expected 1 (refused)"
grep -q "refusing to grade: the sandbox user can read" "$work/refused.log" || fail "no refusal"
for path in "$secrets/expected" "$secrets/handins"; do
  grep -qF "  $path" "$work/refused.log" || fail "the refusal does not name $path"
done
python3 - "$work/refused.json" <<'PY' || fail "results.json does not say that the grader refused"
import json, sys
results = json.load(open(sys.argv[1]))
assert results["score"] == 0 and "refusing to grade" in results["output"], results
PY

echo "2. with CAP_SYS_ADMIN"
if ! unshare --mount true 2> /dev/null; then
  echo "    (no mount namespaces here: nothing can be hidden, so nothing more to check)"
  exit 0
fi
"$grade" "${args[@]}" --results "$work/graded.json" > "$work/graded.log" 2>&1 ||
  { cat "$work/graded.log"; fail "dtk-grade failed where it can hide the secrets"; }
grep -q "^Total .*100.00 / 100.00" "$work/graded.log" ||
  { cat "$work/graded.log"; fail "the reference did not get full marks"; }
echo PASS
