#!/usr/bin/env bash
# Is Part 7's speed bonus a property of the code? Grades the reference (assignment 2) once with
# its bonus left pending, then times the bonus RUNS times in a row (dtk-grade --bonus-only, as a
# batch does after its gradings) and prints each timing: the load around it, each function's
# ratio to MPI and its tier, or "deferred" and why. On an otherwise idle machine every timing
# must give the same tier; on a busy one the bonus must be deferred, never a lower tier.
#
# usage: bench/bonus_benchmark.sh [BUILD_DIR (default build)] [RUNS (default 5)] [MANIFEST]
#   MANIFEST: another assignment 2 manifest (e.g. with "max_busy": 1, to time whatever the load)
set -euo pipefail
source "$(dirname "$0")/record.sh" bonus "The reference's speed bonus timed in a row" "$@"
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-5}
manifest=()
[ -z "${3:-}" ] || manifest=(--manifest "$(realpath "$3")")
grader=$build/dtk-grade
sandbox_flag=$([ "$(id -u)" = 0 ] || echo --no-sandbox)  # not root: no sandbox user
[ -x "$grader" ] || { echo "no $grader: build it first (cmake --build $build --target dtk-grade)" >&2; exit 2; }
command -v python3 > /dev/null || { echo "bonus_benchmark: needs python3 to read results.json" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results.json
"$grader" solutions --assignment 2 "${manifest[@]}" --bonus-later --results "$results" $sandbox_flag \
  > "$work/grading.log" ||
  { cat "$work/grading.log"; exit 1; }
echo "speed bonus of the reference, timed $runs times in a row: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
# One line per timing: each function's tier and ratio, or its state and why.
summary() {
  python3 - "$results" <<'EOF'
import json, re, sys
results = json.load(open(sys.argv[1]))
cells = []
for test in results["tests"]:
    if not test["name"].endswith(": speed bonus"):
        continue
    function = test["name"].split("| ")[1].split(":")[0]
    ratio = re.search(r"took ([0-9.]+x)", test["output"])
    load = re.search(r"other programs used (\d+ %)[^,]*, (\d+ %)", test["output"])
    if ratio:
        cells.append(f"{function} {ratio.group(1)} +{test['score']:g} (load {load.group(1)}, {load.group(2)})")
    else:
        cells.append(f"{function}: {test['output'].strip()[:150]}")
print("; ".join(cells))
EOF
}
for run in $(seq 1 "$runs"); do
  "$grader" solutions --assignment 2 "${manifest[@]}" --bonus-only --results "$results" $sandbox_flag \
    > "$work/bonus.log" ||
    { cat "$work/bonus.log"; exit 1; }
  echo "  $run. $(summary)"
done
record_figures
