#!/usr/bin/env bash
# Times unified_train for one epoch of Fashion-MNIST, as a user runs it: the whole process,
# mpirun start-up, data loading and evaluation included. Four configurations, several runs each;
# prints every run's time, the median and the test accuracy.
#
# usage: bench/train_benchmark.sh [BUILD_DIR] [RUNS]      (defaults: build, 5)
#
# The classic NumPy/mpi4py version takes about 14 s at mp=2 x dp=4 and 3.5 s at mp=1 x dp=1 on
# a 2-core machine; dtk's targets are 5x and 3x faster: 2.80 s and 1.17 s.
set -euo pipefail
source "$(dirname "$0")/record.sh" training "unified_train's epoch" "$@"

build=${1:-build}
runs=${2:-5}
program=$(built_program "$build" unified_train) || exit 2

mpirun=("$build/dtk-mpirun" --oversubscribe)  # 8 ranks on fewer cores; a session dir of its own
[ "$(id -u)" -ne 0 ] || mpirun+=(--allow-run-as-root)

# name, ranks, target seconds, unified_train arguments
configs=(
  "mp=2 dp=4 naive|8|2.80|--mp_size 2 --dp_size 4"
  "mp=2 dp=4 Megatron|8|2.80|--mp_size 2 --dp_size 4 --megatron-mp"
  "mp=1 dp=1 naive|1|1.17|--mp_size 1 --dp_size 1"
  "mp=1 dp=1 Megatron|1|1.17|--mp_size 1 --dp_size 1 --megatron-mp"
)

printf '%-20s %-36s %7s %7s %9s\n' configuration "time of each run (s)" median target "test acc"
for config in "${configs[@]}"; do
  IFS='|' read -r name ranks target args <<< "$config"
  times=()
  accuracy="?"
  for ((run = 1; run <= runs; run++)); do
    start=$(date +%s.%N)
    # shellcheck disable=SC2086  # $args is a list of flags
    output=$("${mpirun[@]}" -n "$ranks" "$program" $args 2>&1) ||
      { printf '%s\n' "$output" | tail -n 20; echo "unified_train $args failed" >&2; exit 1; }
    end=$(date +%s.%N)
    times+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')")
    accuracy=$(printf '%s\n' "$output" | sed -nE 's/^Test accuracy: ([0-9.]+).*/\1/p')
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ t[NR] = $1 } END { print t[int((NR + 1) / 2)] }')
  printf '%-20s %-36s %7.2f %7.2f %9s\n' "$name" "$(printf '%.2f ' "${times[@]}")" "$median" \
    "$target" "$accuracy"
done
record_figures
