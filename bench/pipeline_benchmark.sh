#!/usr/bin/env bash
# Times one training step of the 784-256-256-256-10 MLP as a pipeline of 2 stages with 8
# micro-batches, GPipe and 1F1B, against the same step on one rank; prints each rank's measured
# bubble beside the theory (p - 1) / (m + p - 1) = 1/9. Two ranks, so that on a 2-core machine
# every rank has a core of its own (more ranks than cores would time the scheduler).
#
# A step's time is the training time unified_train reports (--report's seconds) over its steps,
# the first step included; the bubble is the median over the steps (step 1 left out).
#
# usage: bench/pipeline_benchmark.sh [BUILD_DIR] [STEPS] [BATCH]   (defaults: build, 200, 512)
set -euo pipefail
source "$(dirname "$0")/record.sh" pipeline "A pipeline step against one rank" "$@"

build=${1:-build}
steps=${2:-200}
batch=${3:-512}
program=$(built_program "$build" unified_train) || exit 2
command -v python3 > /dev/null || { echo "pipeline_benchmark: needs python3 to read the reports" >&2; exit 2; }

mpirun=("$build/dtk-mpirun" --oversubscribe)  # a session directory of its own
[ "$(id -u)" -ne 0 ] || mpirun+=(--allow-run-as-root)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# name, ranks, unified_train arguments
configs=(
  "one rank|1|--pp_size 1"
  "GPipe, p=2, m=8|2|--pp_size 2 --microbatches 8 --schedule gpipe"
  "1F1B, p=2, m=8|2|--pp_size 2 --microbatches 8 --schedule 1f1b"
)

echo "784-256-256-256-10 MLP, global batch $batch, $steps steps; $(nproc) cores"
printf '%-18s %12s %10s %26s %8s\n' configuration "ms per step" "vs 1 rank" "bubble per rank (measured)" theory
one_rank=""
for config in "${configs[@]}"; do
  IFS='|' read -r name ranks args <<< "$config"
  report=$scratch/report.json
  # shellcheck disable=SC2086  # $args is a list of flags
  "${mpirun[@]}" -n "$ranks" "$program" --hidden 256,256,256 --batch_size "$batch" \
    --max_steps "$steps" $args --report "$report" > "$scratch/out.txt" 2>&1 ||
    { tail -n 20 "$scratch/out.txt"; echo "unified_train $args failed" >&2; exit 1; }
  read -r ms bubbles theory < <(python3 - "$report" << 'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
p, m = r["pp_size"], r["microbatches"]
bubbles = ",".join(f'{x["bubble_fraction"]:.3f}' for x in r["ranks"])
theory = (p - 1) / (m + p - 1)
print(f'{1000 * r["seconds"] / r["steps"]:.2f} {bubbles} {theory:.3f}')
EOF
  )
  [ -n "$one_rank" ] || one_rank=$ms
  ratio=$(awk -v a="$ms" -v b="$one_rank" 'BEGIN { printf "%.2fx", a / b }')
  printf '%-18s %12s %10s %26s %8s\n' "$name" "$ms" "$ratio" "$bubbles" "$theory"
done
record_figures
