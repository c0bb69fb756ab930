#!/usr/bin/env bash
# Times a student's edit loop in each assignment's bundle, as the handout describes it: after an
# edit of one student file, rebuilding that file's public test program (cmake --build ... --target)
# and running it (ctest, on the test's ranks). The bundle is built first, with the reference's
# file in place of the stub (a stub's test fails at once, which would time nothing); each edit
# appends a new (empty) function, so that ccache cannot answer from an earlier build: a comment
# would not do, ccache compares the preprocessed text. Several edits each.
#
# usage: bench/edit_loop_benchmark.sh [RUNS]      (default 3)
set -euo pipefail
source "$(dirname "$0")/record.sh" edit-loop "A student's edit loop, in each bundle" "$@"

root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# assignment, the student file edited, its public test program
loops=(
  "1|model/func_impl.cpp|test_get_info"
  "2|pipeline/pipeline.cpp|test_pipeline"
  "3|tensor_parallel/tensor_parallel.cpp|test_tensor_parallel"
  "4|overlap/overlap.cpp|test_overlap"
)

seconds_of() {  # runs "$@" quietly, prints its wall time in seconds, to a tenth
  local start tenths
  start=$(date +%s%N)
  "$@" > "$work/last.log" 2>&1 || { cat "$work/last.log" >&2; exit 1; }
  tenths=$((($(date +%s%N) - start) / 100000000))
  printf '%d.%d' $((tenths / 10)) $((tenths % 10))
}

printf '%-10s %-38s %-22s %-20s %s\n' assignment "file edited" "rebuild (s), each edit" \
  "test run (s)" "test"
for loop in "${loops[@]}"; do
  IFS='|' read -r assignment file test <<< "$loop"
  "$root/scripts/make-release.sh" "$work/dist$assignment" "$assignment" > /dev/null
  tar -xzf "$work/dist$assignment"/*.tar.gz -C "$work/dist$assignment"
  bundle=$(find "$work/dist$assignment" -mindepth 1 -maxdepth 1 -type d)
  cp "$root/solutions/$file" "$bundle/starter/$file"
  make -C "$bundle" > "$work/build$assignment.log" 2>&1 ||
    { tail -20 "$work/build$assignment.log" >&2; exit 1; }
  rebuilds=() test_runs=()
  for edit in $(seq 1 "$runs"); do
    echo "inline void benchmark_edit_$edit() {}" >> "$bundle/starter/$file"
    rebuilds+=("$(seconds_of cmake --build "$bundle/build" -j2 --target "$test")")
    test_runs+=("$(seconds_of ctest --test-dir "$bundle/build" -R "^$test\$")")
  done
  printf '%-10s %-38s %-22s %-20s %s\n' "$assignment" "$file" "${rebuilds[*]}" "${test_runs[*]}" \
    "$test"
done
echo "The rebuild is the compile of the edited file and the link of the test program; the test"
echo "run is ctest's, mpirun's start-up included."
record_figures
