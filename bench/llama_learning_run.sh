#!/usr/bin/env bash
# A Llama's block against GPT-2's on the same budget: the handout's default learning run (the
# default shape, 500 steps of 32 sequences of 128 characters of the Bible) with GPT-2's block,
# then with a Llama's (`--arch llama --kv_heads 2`: RMSNorm, rotary positions, SwiGLU,
# grouped-query attention), each timed whole against the learning run's goals (at most 10
# minutes here, a validation loss below the text's bigram entropy), and both learning curves
# drawn in one figure (scripts/make-gpt-figure.py) into OUT_DIR.
#
# The losses and the weights do not depend on the machine's load; the times do: the load before
# and after is printed. Run it when the load is low.
#
# usage: bench/llama_learning_run.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, a temporary one)
set -euo pipefail
source "$(dirname "$0")/record.sh" llama-learning-run \
  "A Llama's block against GPT-2's, the same budget" "$@"

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=${2:-$(mktemp -d)}
gpt_train=$(built_program "$build" gpt_train) || exit 2
mkdir -p "$out"

echo "Load before: $(cut -d' ' -f1-3 /proc/loadavg)   ($(nproc) cores)"
for arch in gpt2 llama; do
  flags=(--arch "$arch")
  [ "$arch" = gpt2 ] || flags+=(--kv_heads 2)
  start=$(date +%s.%N)
  "$gpt_train" "${flags[@]}" --report "$out/$arch.json" > "$out/$arch.log"
  end=$(date +%s.%N)
  python3 "$root/bench/learning_summary.py" "$out/$arch.json" "$start" "$end" \
    "gpt_train ${flags[*]}"
done
echo "Load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$root/scripts/make-gpt-figure.py" "$out/gpt2.json" "$out/llama.json" \
  "$out/gpt_llama_learning.svg"
echo "Reports, logs and learning curves: $out/"
record_figures
