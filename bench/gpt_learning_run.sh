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

python3 "$root/bench/learning_summary.py" "$out/run.json" "$start" "$end"
echo "Report, log and learning curve: $out/"
record_figures
