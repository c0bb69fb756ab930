#!/usr/bin/env bash
# The handout's default learning run (`gpt_train --sample 400 --report run.json`: the default
# model, 500 steps on the Bible), timed whole, against its two goals: at most 10 minutes on
# this 2-core machine, and a validation loss well below the text's bigram entropy (the best a
# model that sees only the previous character can do). Writes the report and redraws its
# learning curve (scripts/make-gpt-figure.py) into OUT_DIR.
#
# The losses, the weights and the sample do not depend on the machine's load; the time does:
# the load before and after is printed. Run it when the load is low.
#
# usage: bench/gpt_learning_run.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, a temporary one)
set -euo pipefail
source "$(dirname "$0")/record.sh" gpt-learning-run "The handout's default learning run" "$@"

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=${2:-$(mktemp -d)}
[ -x "$build/gpt_train" ] || { echo "gpt_learning_run: build gpt_train first ($build/gpt_train)" >&2; exit 2; }
mkdir -p "$out"

echo "Load before: $(cut -d' ' -f1-3 /proc/loadavg)   ($(nproc) cores)"
start=$(date +%s.%N)
"$build/gpt_train" --sample 400 --report "$out/run.json" > "$out/run.log"
end=$(date +%s.%N)
echo "Load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$root/scripts/make-gpt-figure.py" "$out/run.json" "$out/gpt_learning_curve.svg"

python3 - "$out/run.json" "$start" "$end" << 'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
print(f"Whole run: {wall:.0f} s ({wall / 60:.1f} min; goal: at most 10 min) "
      f"{'met' if wall <= 600 else 'NOT met'}")
print(f"Training steps: {report['seconds']:.1f} s, {report['tokens_per_second']:.0f} tokens/s, "
      f"MFU {report['mfu']:.3f} of the GEMM peak {report['gemm_peak_flops'] / 1e9:.1f} GFLOP/s")
print(f"Validation loss {report['val_loss']:.4f} against the bigram entropy "
      f"{report['bigram_entropy']:.4f} nats per character "
      f"({'below' if report['val_loss'] < report['bigram_entropy'] else 'NOT below'})")
EOF
echo "Report, log and learning curve: $out/"
record_figures
