#!/usr/bin/env bash
# What Part 15's overlap hides on this machine, with overlap_bench (built from solutions/ in the
# kit): 2 ranks; gradient buckets of 0.25, 1, 4 and 64 MB (64: one bucket, nothing to overlap)
# over a backward of 12 layers of 256 x 256 (6 MB of gradients) against MPI's Allreduce after the
# backward; the pipelined ring against Part 11's blocking order, on blocks of 1 MB and 4 MB.
# Each row: the median of 20 steps of the slowest rank's time. Then gpt_train's default model at
# --dp 2, 60 steps, with --bucket_mb 0 (one sum after the backward), 1 and 4, twice each in turn:
# tokens per second.
#
# usage: bench/overlap_benchmark.sh [BUILD_DIR] [STEPS]      (defaults: build, 20)
#
# Two ranks because this machine has two cores: with more ranks than cores the timings are the
# scheduler's, not the overlap's.
set -euo pipefail
source "$(dirname "$0")/record.sh" overlap "Part 15's overlap: buckets and the pipelined ring" "$@"

build=${1:-build}
steps=${2:-20}
program=$(built_program "$build" overlap_bench) || exit 2
mpirun=("$build/dtk-mpirun" -n 2)
[ "$(id -u)" -ne 0 ] || mpirun+=(--allow-run-as-root)

for mb in 0.25 1 4 64; do
  "${mpirun[@]}" "$program" --what buckets --steps "$steps" --bucket_mb "$mb"
done
"${mpirun[@]}" "$program" --what ring --steps "$steps" --block_rows 512 --block_cols 256
"${mpirun[@]}" "$program" --what ring --steps "$steps" --block_rows 1024 --block_cols 512
echo
echo "gpt_train --dp 2 --steps 60 (the default model, float): tokens/s, two runs each in turn"
report=$(mktemp)
trap 'rm -f "$report"' EXIT
declare -A runs
for round in 1 2; do
  for mb in 0 1 4; do
    "${mpirun[@]}" "$build/gpt_train" --dp 2 --steps 60 --eval_every 60 --bucket_mb "$mb" \
      --report "$report" > /dev/null
    runs[$mb]+=" $(python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["tokens_per_second"]))' "$report")"
  done
done
for mb in 0 1 4; do printf '  --bucket_mb %-4s %s\n' "$mb" "${runs[$mb]}"; done
record_figures
