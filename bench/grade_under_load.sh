#!/usr/bin/env bash
# Load never costs points (issue 31): the reference of every assignment graded three ways, each
# of which must give full marks, with the time each took.
#   alone   one grading, the machine otherwise as it is
#   batch   COPIES copies of the reference graded with --batch --jobs 2 (each job slot on its own
#           share of the CPUs), every copy's total
#   load    one grading while LOAD busy processes (endless loops) share the cores
# Prints one line per assignment and setting: the load average (1 minute) when it ended, the
# score over the maximum (the parts, the speed bonus left out), "full" or "NOT FULL", and the
# seconds it took. Exit status 1 when a score is not full.
#
# usage: bench/grade_under_load.sh [BUILD_DIR (default build)] [LOAD (default 10)]
#                                  [COPIES (default 4)]     (from the kit's root; dtk-grade built)
set -euo pipefail
source "$(dirname "$0")/record.sh" grading-under-load "Grading under load" "$@"
cd "$(dirname "$0")/.."
build=${1:-build}
load=${2:-10}
copies=${3:-4}
grader=$build/dtk-grade
[ -x "$grader" ] || { echo "grade_under_load: build dtk-grade first ($grader)" >&2; exit 2; }
args=(--seed 7)
[ "$(id -u)" = 0 ] || args+=(--no-sandbox)

work=$(mktemp -d "${TMPDIR:-/tmp}/dtk-grade-under-load.XXXXXX")
chmod 700 "$work"
busy=()
stop_busy() {
  [ ${#busy[@]} -eq 0 ] || kill "${busy[@]}" 2> /dev/null || true
  busy=()
}
trap 'stop_busy; rm -rf "$work"' EXIT

# "score/max" of the parts in a totals.json (the speed bonus left out).
points() {
  python3 -c 'import json, sys
parts = json.load(open(sys.argv[1]))["parts"].values()
print("%g/%g" % (sum(p["score"] for p in parts), sum(p["max"] for p in parts)))' "$1"
}
full() { awk -F/ '{ print ($1 == $2 ? "full" : "NOT FULL") }' <<< "$1"; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }
failed=0
row() {  # row ASSIGNMENT SETTING SCORES SECONDS
  local verdict=full
  for score in $3; do [ "$(full "$score")" = full ] || verdict="NOT FULL"; done
  [ "$verdict" = full ] || failed=1
  printf '%-11s %-24s %-6s %-40s %-9s %4d s\n' "$1" "$2" "$(loadavg)" "$3" "$verdict" "$4"
}

grade_alone() {  # grade_alone ASSIGNMENT NAME: the reference once, its row
  local start=$SECONDS dir=$work/$2-$1
  mkdir -p "$dir"
  "$grader" solutions --assignment "$1" --results "$dir/results.json" "${args[@]}" \
    > "$dir/log" 2>&1 || { cat "$dir/log" >&2; exit 1; }
  row "$1" "$3" "$(points "$dir/totals.json")" $((SECONDS - start))
}

mapfile -t assignments < <(ls starter/handin | sed -n 's/^assignment\([0-9]*\)\.txt$/\1/p' | sort -n)
echo "dtk-grade under load: $(nproc) cores, busy processes: $load, batch: $copies copies, --jobs 2"
printf '%-11s %-24s %-6s %-40s %-9s %s\n' assignment setting load score verdict time
for assignment in "${assignments[@]}"; do
  grade_alone "$assignment" alone "alone"

  class=$work/class$assignment
  mkdir -p "$class"
  mapfile -t files < <(grep '^[^#]' "starter/handin/assignment$assignment.txt")
  for i in $(seq 1 "$copies"); do
    tar -cf "$class/student$i.tar" -C solutions "${files[@]}"
  done
  start=$SECONDS
  "$grader" --batch "$class" --jobs 2 --assignment "$assignment" --out "$work/graded$assignment" \
    "${args[@]}" > "$work/batch$assignment.log" 2>&1 ||
    { cat "$work/batch$assignment.log" >&2; exit 1; }
  scores=""
  for i in $(seq 1 "$copies"); do
    scores+="$(points "$work/graded$assignment/students/student$i/totals.json") "
  done
  row "$assignment" "batch, --jobs 2" "${scores% }" $((SECONDS - start))

  for _ in $(seq 1 "$load"); do
    bash -c 'while :; do :; done' &
    busy+=($!)
  done
  sleep 5  # the load average climbs
  grade_alone "$assignment" load "$load busy processes"
  stop_busy
  sleep 5
done
record_figures
exit "$failed"
