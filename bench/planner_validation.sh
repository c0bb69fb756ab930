#!/usr/bin/env bash
# Validates Part 13's simulator against gpt_train (issue 36): for each layout, plan_training
# simulates the plan and writes it as JSON (--json), gpt_train runs that very file (--plan)
# three times, and the table sets the measured step time (the median, and the range) and the
# fullest rank's peak bytes beside the simulation's; then, for 2, 4 and 8 ranks, the plan the
# planner picks for this machine is run and set against the fastest layout measured. Each field
# of a plan is varied alone (dp, tp, sp, cp, ep, pp, micro-batches, schedule, ZeRO stage,
# recomputation: full, the planner's), then together, up to 8 ranks, and a few in bf16
# (bench/planner_validation.py's LAYOUTS). The goal: every layout within 1.25x, and the planner's
# pick the fastest, or within 10 % of it.
#
# usage: bench/planner_validation.sh [BUILD_DIR] [GPT_TRAIN] [MACHINE_JSON [MACHINE_BF16_JSON]]
#                                    [--csv FILE] [--svg FILE]
#   BUILD_DIR     the kit's build (plan_training, collectives_bench), default build
#   GPT_TRAIN     the gpt_train program, default BUILD_DIR/gpt_train
#   MACHINE_JSON  this machine's calibration, and MACHINE_BF16_JSON its calibration for bf16 runs
#                 (default: measured now by planner_calibration.sh, and with --dtype bf16)
#   --csv FILE    the table as CSV; --svg FILE: simulated against measured, a point per layout
#
# Each run: the default GPT (4 layers, hidden 256, 4 heads, sequences of 128, 32 per step; 4
# experts, top 2, for expert parallelism), 6 steps, the step time the mean of steps 2 to 6
# (gpt_train's --report); peak bytes of the fullest rank: its model states (parameters, gradients,
# optimizer states) and activations, which the simulator counts alike, then its transient buffers
# apart (gpt_train keeps every layer's outputs and gradients between steps, a GPU framework frees
# them; the simulator counts the logits and ZeRO-3's gathered layers). The simulated cluster: R ranks on one node, each with
# 1 / R of the calibration's rates (R ranks share the cores; more ranks than cores also share
# them with the scheduler, which the simulator does not model). The calibration comes from a
# one-rank run, so dp = 1 agrees by construction, up to the load: the other layouts are the test.
# The machine is shared: the load is printed; run it when it is low.
set -euo pipefail
source "$(dirname "$0")/record.sh" planner-validation "Part 13's simulator against gpt_train" "$@"

positional=() csv="" svg=""
while [ $# -gt 0 ]; do
  case $1 in
    --csv) csv=$2; shift 2 ;;
    --svg) svg=$2; shift 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
build=${positional[0]:-build}
gpt_train=${positional[1]:-$build/gpt_train}
machine=${positional[2]:-}
machine_bf16=${positional[3]:-}
here=$(cd "$(dirname "$0")" && pwd)
for program in "$build/plan_training" "$gpt_train"; do
  [ -x "$program" ] || { echo "planner_validation: no $program (build it first)" >&2; exit 2; }
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if [ -z "$machine" ]; then
  machine=$scratch/machine.json
  "$here/planner_calibration.sh" "$build" "$gpt_train" > "$machine"
fi
if [ -z "$machine_bf16" ]; then
  machine_bf16=$scratch/machine-bf16.json
  "$here/planner_calibration.sh" --dtype bf16 "$build" "$gpt_train" > "$machine_bf16"
fi
echo "Load before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
python3 "$here/planner_validation.py" "$build" "$gpt_train" "$machine" "$machine_bf16" \
  ${csv:+--csv "$csv"} ${svg:+--svg "$svg"}
echo "Load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
record_figures
