#!/usr/bin/env bash
# The kit's whole suite timed as a newcomer meets it: a fresh clone of this checkout's HEAD, then
# the README's test command (`make test`), timed whole, with ctest's own figures: tests passed,
# its time, each label's, and the slowest tests. CTest's measured costs of the run go to
# tests/kit/ctest-costs.txt, which orders a new build's tests longest first (CMakeLists.txt).
#
# usage: bench/suite_benchmark.sh [--new-machine]
#
#   (default)      `make test` in the fresh clone, ccache and the self-tests' compiled objects
#                  (~/.cache/dtk/selftest-objects) as they are: a developer's machine
#   --new-machine  CI's command (`CI=true bash .ci/run`) with an empty ccache and an empty cache
#                  of the self-tests' compiled objects of its own, thrown away after: a brand-new
#                  machine, but for the Debian packages, which are installed here already and
#                  cannot be made cold
#
# The budget (issue 32): `make test` within 15 minutes on a quiet machine, a new machine's CI run
# within 20. Run it on a quiet machine: the stamp records the load.
set -euo pipefail
mode=${1:-}
case $mode in
  "") name=suite title="The suite on a fresh clone (make test)" ;;
  --new-machine) name=suite-new-machine title="CI on a brand-new machine (CI=true bash .ci/run)" ;;
  *) echo "usage: bench/suite_benchmark.sh [--new-machine]" >&2; exit 2 ;;
esac
kit=$(cd "$(dirname "$0")/.." && pwd)
source "$kit/bench/record.sh" "$name" "$title" "$@"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"  # as a checkout is: some tests run a program as another user (nobody)
git clone -q "$kit" "$work/dtk"
log=$work/log
start=$(date +%s)
if [ "$mode" = --new-machine ]; then
  (cd "$work/dtk" && CI=true CCACHE_DIR="$work/ccache" DTK_SELFTEST_OBJECTS="$work/objects" \
    bash .ci/run) > "$log" 2>&1 || status=$?
else
  (cd "$work/dtk" && make test) > "$log" 2>&1 || status=$?
fi
seconds=$(($(date +%s) - start))
if [ "${status:-0}" != 0 ]; then
  cp "$log" "$kit/build/suite_benchmark-failed.log" 2> /dev/null || true
  tail -n 60 "$log" >&2
  echo "suite_benchmark: the run failed (exit ${status}): nothing recorded; its whole log:" \
    "build/suite_benchmark-failed.log" >&2
  exit 1
fi

echo "Commit $(git -C "$work/dtk" rev-parse --short HEAD); whole run $((seconds / 60)) min $((seconds % 60)) s"
grep -E "tests passed|Total Test time" "$log"
sed -n '/^Label Time Summary:/,/^$/p' "$log"
# What CTest measured seeds a new build's test order (CMakeLists.txt): longest first.
cp "$work/dtk/build/Testing/Temporary/CTestCostData.txt" "$kit/tests/kit/ctest-costs.txt"
echo "Slowest tests (s):"
sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.+ +Passed +([0-9.]+) sec$/\2 \1/p' "$log" |
  sort -rn | awk 'NR <= 12 { printf "  %7.1f  %s\n", $1, $2 }'  # reads all: no SIGPIPE
record_figures
