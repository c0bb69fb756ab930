#!/usr/bin/env bash
# Writes figs/timeline_gpipe.svg and figs/timeline_1f1b.svg: one training step of a 4-stage
# pipeline with 8 micro-batches, as `unified_train --timeline` draws it, for GPipe and for 1F1B.
# The handout's pictures of the two schedules are real runs of the reference: rerun this script
# when the trainer or the drawing changes.
#
# The widths (784 -> 256, then 512s) give partition_layers four stages of about the same size.
# With more ranks than cores, waiting ranks yield their core (mpi_yield_when_idle) so that they
# slow the others less. handout.md (8.7) shows the same command, for students to rerun.
#
# usage: scripts/make-timeline-figures.sh [BUILD_DIR] [OUTPUT_DIR]   (defaults: build/, figs/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=${2:-$root/figs}
[ -x "$build/unified_train" ] || { echo "make-timeline-figures: no $build/unified_train: run make" >&2; exit 1; }

for schedule in gpipe 1f1b; do
  "$build/dtk-mpirun" --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -n 4 \
    "$build/unified_train" --pp_size 4 --microbatches 8 --schedule "$schedule" \
    --hidden 256,512,512,512,512,512,512 --batch_size 4096 --max_steps 4 \
    --timeline "$out/timeline_$schedule.svg" > /dev/null
  echo "wrote $out/timeline_$schedule.svg"
done
