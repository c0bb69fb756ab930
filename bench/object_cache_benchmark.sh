#!/usr/bin/env bash
# What the object cache saves (grader/src/compile/object_cache.hpp): the self-tests of honest
# mistakes (CTest's grader_wrong_*: one patched student file each, graded on its part) run twice
# in an existing build, the first time with an empty cache of compiled objects (every patch
# compiles), the second with what the first kept (none does). Each run also runs the reference
# once (grader_selftests_fresh_reference empties its saved outputs first), as `make test` does.
#
# usage: bench/object_cache_benchmark.sh [BUILD_DIR]      (default build; built, quiet machine)
set -euo pipefail
source "$(dirname "$0")/record.sh" object-cache "The self-tests of honest mistakes, cold and warm" "$@"

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
[ -x "$build/dtk-grade" ] || { echo "object_cache_benchmark: no $build/dtk-grade (build it first)" >&2; exit 2; }
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT

printf '%-28s %10s %14s %12s %12s\n' "object cache" "wall (s)" "grading (s*p)" "user (s)" "sys (s)"
for run in "empty (every patch compiles)" "as the first run left it"; do
  log=$(mktemp)
  start=$(date +%s%N)
  (cd "$build" && DTK_SELFTEST_OBJECTS=$cache /usr/bin/time -f "%U %S" -o "$log.time" \
    ctest -j2 --resource-spec-file "$root/grader/tests/sandbox-slots.json" -R '^grader_wrong_') \
    > "$log" 2>&1 || { tail -n 30 "$log" >&2; exit 1; }
  wall=$((($(date +%s%N) - start) / 10000000))
  grep -q "100% tests passed" "$log" || { tail -n 30 "$log" >&2; exit 1; }
  read -r user sys < "$log.time"
  grading=$(sed -nE 's/^grading += +([0-9.]+) sec\*proc.*/\1/p' "$log")
  printf '%-28s %7d.%02d %14s %12s %12s\n' "$run" $((wall / 100)) $((wall % 100)) "$grading" \
    "$user" "$sys"
  rm -f "$log" "$log.time"
done
echo "Tests: $(cd "$build" && ctest -N -R '^grader_wrong_' | sed -n 's/^Total Tests: //p') (the reference's fixture among them); objects kept: $(find "$cache" -name '*.o' | wc -l)"
record_figures
