#!/usr/bin/env bash
# gpt_train --dtype bf16 against float (handout 16.5): the handout's default learning run (the
# default model, 500 steps on the Bible) in each dtype, one after the other. Prints each run's
# validation loss and their difference (the margin of bf16 the handout states: the losses do
# not depend on the machine's load), the tokens per second of each and their ratio (on a CPU
# bf16 computes no faster, and packing the activations costs time), and rank 0's memory by
# category.
#
# usage: bench/bf16_benchmark.sh [BUILD_DIR]     (default: build)
set -euo pipefail
source "$(dirname "$0")/record.sh" bf16 "gpt_train in bf16 against float" "$@"

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
program=$(built_program "$build" gpt_train) || exit 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "Load before: $(cut -d' ' -f1-3 /proc/loadavg)   ($(nproc) cores)"
for dtype in float bf16; do
  "$program" --dtype "$dtype" --report "$out/$dtype.json" > "$out/$dtype.log"
done
echo "Load after:  $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" << 'EOF'
import json, sys
runs = {d: json.load(open(f"{sys.argv[1]}/{d}.json")) for d in ("float", "bf16")}
mib = lambda b: b / 2**20
print(f"{'dtype':6} {'val loss':>9} {'final loss':>10} {'tokens/s':>9} {'params':>8} {'grads':>8} "
      f"{'optimizer':>9} {'activations':>11} {'transient':>9}  (MiB, rank 0)")
for dtype, r in runs.items():
    m = r["ranks"][0]["peak_bytes"]
    print(f"{dtype:6} {r['val_loss']:9.4f} {r['final_loss']:10.4f} {r['tokens_per_second']:9.0f} "
          f"{mib(m['parameters']):8.2f} {mib(m['gradients']):8.2f} {mib(m['optimizer']):9.2f} "
          f"{mib(m['activations']):11.2f} {mib(m['transient']):9.2f}")
f, b = runs["float"], runs["bf16"]
print(f"bf16's validation loss minus float's: {b['val_loss'] - f['val_loss']:+.4f} nats per "
      f"character (the bigram entropy {f['bigram_entropy']:.4f})")
print(f"bf16's tokens per second over float's: {b['tokens_per_second'] / f['tokens_per_second']:.2f}")
EOF
record_figures
