#!/usr/bin/env bash
# How long dtk-grade takes to grade one submission end to end (unpack, compile the student
# files, run every hidden test, write results.json), with the kit already built.
#
# usage: bench/grade_benchmark.sh [BUILD_DIR (default build)] [RUNS (default 3)]
#
# Three submissions, each graded RUNS times as a handin.tar:
#   edited     the reference with a comment added to each file: all three files compile
#   reference  solutions/ as is: its prebuilt objects are reused, nothing compiles
#   starter    starter/ as is: every test fails fast with NotImplemented
# Prints the time of every run and the median of each. The issue's bar: under 10 s.
set -euo pipefail
source "$(dirname "$0")/record.sh" grading "Grading one submission" "$@"
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-3}
grader=$build/dtk-grade
sandbox_flag=$([ "$(id -u)" = 0 ] || echo --no-sandbox)  # not root: no sandbox user
if [ ! -x "$grader" ]; then
  echo "no $grader: build it first (cmake --build $build --target dtk-grade)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t files < <(grep '^[^#]' starter/handin/assignment1.txt)
pack() {  # pack NAME DIR: DIR's student files into $work/NAME.tar
  tar --format=ustar -cf "$work/$1.tar" -C "$2" "${files[@]}"
}
mkdir -p "$work/edited"
for file in "${files[@]}"; do
  mkdir -p "$work/edited/$(dirname "$file")"
  { cat "solutions/$file"; echo "// edited: compile me"; } > "$work/edited/$file"
done
pack edited "$work/edited"
pack reference solutions
pack starter starter

echo "dtk-grade benchmark: $(nproc) cores, $runs runs per submission, load $(cut -d' ' -f1-3 /proc/loadavg)"
for name in edited reference starter; do
  times=()
  for ((run = 1; run <= runs; ++run)); do
    start=$(date +%s%N)
    "$grader" "$work/$name.tar" --seed "$run" --results "$work/results.json" $sandbox_flag \
      > "$work/log" 2>&1 ||
      { cat "$work/log"; exit 1; }
    times+=($((($(date +%s%N) - start) / 1000000)))  # milliseconds
  done
  score=$(grep -m1 '"score"' "$work/results.json" | tr -dc '0-9.')
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")
  seconds() { printf '%d.%02d' $(($1 / 1000)) $(($1 % 1000 / 10)); }
  printf '%-10s score %6s   runs:' "$name" "$score"
  for ms in "${times[@]}"; do printf ' %s' "$(seconds "$ms")"; done
  printf '   median %s s\n' "$(seconds "$median")"
done
record_figures
