#!/usr/bin/env bash
# What zig-zag balances in context parallelism (handout 11.6), with gpt_train on 4 context-parallel
# ranks: each rank's CPU seconds per step in the attention kernels (the report's `kernels`
# column), contiguous against --zigzag, the median of RUNS runs each (taken in turn); the last
# column is the slowest rank's, which the step waits for. Two settings: sequences of 512 (2
# blocks of h 128, 2 sequences), where the attention's work outweighs its fixed costs, and the
# default --seq 128 of 11.6's command (4 blocks of h 256, in double).
#
# usage: bench/zigzag_benchmark.sh [BUILD_DIR] [RUNS]      (defaults: build, 5)
#
# CPU time, not wall time: 4 ranks on fewer cores wait for a core, which the kernels' CPU time
# does not count.
set -euo pipefail
source "$(dirname "$0")/record.sh" zigzag "Context parallelism: what zig-zag balances" "$@"

build=${1:-build}
runs=${2:-5}
program=$(built_program "$build" gpt_train) || exit 2
mpirun=("$build/dtk-mpirun" --oversubscribe -n 4)
[ "$(id -u)" -ne 0 ] || mpirun+=(--allow-run-as-root)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# setting NAME ARGS...: every run of both layouts, in turn; then the table.
setting() {
  local name=$1
  shift
  for run in $(seq "$runs"); do
    for layout in contiguous zigzag; do
      local flag=()
      [ $layout = contiguous ] || flag=(--zigzag)
      "${mpirun[@]}" "$program" --cp 4 "$@" "${flag[@]}" --report "$work/$name-$layout-$run.json" \
        > /dev/null
    done
  done
  echo "gpt_train --cp 4 $*: the attention kernels' CPU seconds per step (median of $runs runs)"
  python3 - "$work" "$name" "$runs" << 'PYTHON'
import json, statistics, sys
work, name, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
print(f"{'':14}" + "".join(f"{'rank ' + str(r):>9}" for r in range(4)) + f"{'slowest':>9}")
for layout, label in (("contiguous", "contiguous"), ("zigzag", "zig-zag")):
    per_rank = [[] for _ in range(4)]
    slowest = []
    for run in range(1, runs + 1):
        report = json.load(open(f"{work}/{name}-{layout}-{run}.json"))
        seconds = [rank["attention_cpu_seconds"] / report["steps"] for rank in report["ranks"]]
        for r, s in enumerate(seconds):
            per_rank[r].append(s)
        slowest.append(max(seconds))
    cells = [statistics.median(s) for s in per_rank] + [statistics.median(slowest)]
    print(f"  {label:12}" + "".join(f"{c:9.4f}" for c in cells))
PYTHON
  echo
}

setting long --seq 512 --layers 2 --hidden 128 --batch_size 2 --steps 4
setting default --dtype double --steps 3
record_figures
