#!/usr/bin/env bash
# What recomputation buys and costs (handout 16.6), with gpt_train's default model on one rank:
# for --recompute none, selective and full, a block's activations (measured, and counted from
# the shape), all the activations and the transient buffers of a step, the FLOPs computed again,
# and the step time (the median over RUNS runs, taken in turn, of each run's median step, the
# first step left out). The weights must be the same bit for bit: the table says so.
#
# usage: bench/memory_benchmark.sh [BUILD_DIR] [RUNS] [STEPS]      (defaults: build, 3, 30)
#
# One rank: the step time is the machine's to give, and a second rank would share its cores.
set -euo pipefail
source "$(dirname "$0")/record.sh" memory "Memory: what recomputation buys and costs" "$@"

build=${1:-build}
runs=${2:-3}
steps=${3:-30}
program=$(built_program "$build" gpt_train) || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for run in $(seq "$runs"); do
  for mode in none selective full; do
    "$program" --steps "$steps" --recompute "$mode" --report "$work/$mode-$run.json" > /dev/null
  done
done
echo "gpt_train --steps $steps --recompute MODE (the default model, one rank, float): median of $runs runs"
python3 - "$work" "$runs" << 'PYTHON'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
MiB = 1 << 20
print(f"{'recompute':<10} {'block KiB':>9} {'counted':>8} {'activ. MiB':>10} {'transient':>9} "
      f"{'GFLOP again':>11} {'of model':>8} {'s/step':>7} {'vs none':>7}  weights_l2")
base_seconds = None
for mode in ("none", "selective", "full"):
    reports = [json.load(open(f"{work}/{mode}-{run}.json")) for run in range(1, runs + 1)]
    r = reports[0]
    seconds = []
    for report in reports:
        times = [s["seconds"] for s in report["history"]]
        seconds.append(statistics.median(b - a for a, b in zip(times, times[1:])))
    step = statistics.median(seconds)
    base_seconds = base_seconds or step
    peak = r["ranks"][0]["peak_bytes"]
    model_flops = r["flops_per_second"] * r["seconds"] / r["steps"]
    print(f"{mode:<10} {peak['block_activations'] / 1024:>9.1f} "
          f"{r['block_activations_counted']['model'] / 1024:>8.1f} {peak['activations'] / MiB:>10.2f} "
          f"{peak['transient'] / MiB:>9.2f} {r['recompute_flops_per_step'] / 1e9:>11.3f} "
          f"{r['recompute_flops_per_step'] / model_flops:>8.1%} {step:>7.4f} {step / base_seconds:>7.2f}  "
          f"{r['weights_l2']!r}")
PYTHON
record_figures
