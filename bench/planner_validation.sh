#!/usr/bin/env bash
# Validates Part 13's simulator against gpt_train: for each layout gpt_train runs, its measured
# step time beside the time simulate_training_step predicts for the same model, batch and layout
# on this machine as bench/planner_calibration.sh measured it. Layouts gpt_train refuses (the
# Parts it does not have yet) are listed as skipped, so the script runs with whatever layouts
# gpt_train supports.
#
# usage: bench/planner_validation.sh [BUILD_DIR] [GPT_TRAIN] [MACHINE_JSON] [--csv FILE] [--svg FILE]
#   BUILD_DIR     the kit's build (plan_training, collectives_bench), default build
#   GPT_TRAIN     the gpt_train program, default BUILD_DIR/gpt_train
#   MACHINE_JSON  this machine's calibration (default: measured now by planner_calibration.sh)
#   --csv FILE    the table as CSV; --svg FILE: predicted against measured, a bar pair per layout
#
# Each run: the default GPT (4 layers, hidden 256, 4 heads, sequences of 128, 32 per step; 4
# experts, top 2, for expert parallelism), 6 steps, the step time the mean of steps 2 to 6
# (gpt_train's --report). The simulated cluster: R ranks on one node, each with 1 / R of the
# calibration's rates (R ranks share the cores; more ranks than cores also share them with the
# scheduler, which the simulator does not model). The calibration comes from a one-rank run, so
# dp = 1 agrees by construction, up to the load: the other layouts are the test. The machine is
# shared: the load is printed; run it when it is low, and more than once.
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
mpirun=(mpirun --oversubscribe)
[ "$(id -u)" -ne 0 ] || mpirun+=(--allow-run-as-root)
echo "Load before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"

# name | ranks | gpt_train's flags | the plan (plan_training's --plans syntax)
layouts=(
  "dp=1|1|--dp 1|dp=1"
  "dp=2|2|--dp 2|dp=2"
  "dp=4|4|--dp 4|dp=4"
  "tp=2|2|--tp 2|tp=2 dp=1"
  "tp=2 sp|2|--tp 2 --sp|tp=2 dp=1 sp"
  "tp=2 dp=2|4|--tp 2 --dp 2 --sp|tp=2 dp=2 sp"
  "cp=2|2|--cp 2 --zigzag|cp=2 dp=1"
  "cp=2 dp=2|4|--cp 2 --zigzag --dp 2|cp=2 dp=2"
  "ep=2|2|--dp 2 --ep 2 --experts 4 --top_k 2|dp=2 ep=2"
  "ep=4|4|--dp 4 --ep 4 --experts 4 --top_k 2|dp=4 ep=4"
)
model=(--layers 4 --hidden 256 --heads 4 --seq 128 --batch_size 32)
: > "$scratch/results"
index=0
for layout in "${layouts[@]}"; do
  IFS='|' read -r name ranks flags plan <<< "$layout"
  index=$((index + 1))
  # shellcheck disable=SC2086 # the flags are words
  if ! "${mpirun[@]}" -n "$ranks" "$gpt_train" "${model[@]}" $flags --steps 6 --eval_every 7 \
    --report "$scratch/run.json" > "$scratch/run.log" 2>&1; then
    echo "$name|$ranks|$plan|skipped: $(grep -m1 'gpt_train:' "$scratch/run.log" || tail -1 "$scratch/run.log")" >> "$scratch/results"
    continue
  fi
  echo "$name|$ranks|$plan|$(python3 - "$scratch/run.json" "$machine" "$ranks" "$scratch/$index" << 'EOF'
import json, sys
report, machine, ranks, prefix = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3]), sys.argv[4]
m = report["model"]
config = {"model_type": "gpt2", "vocab_size": m["vocab_size"], "n_embd": m["hidden"],
          "n_inner": 4 * m["hidden"], "n_layer": m["layers"], "n_head": m["heads"],
          "n_positions": m["seq_len"], "tie_word_embeddings": False}
if m["experts"] > 1:
    config.update(num_local_experts=m["experts"], num_experts_per_tok=m["top_k"])
json.dump(config, open(prefix + ".model.json", "w"))
# The calibration's rates (one per core) shared by the run's ranks.
share = machine["gpus"] / ranks
cluster = dict(machine, gpus=ranks, gpus_per_node=ranks, peak_tflops=machine["peak_tflops"] * share,
               gemm_tflops=machine["gemm_tflops"] * share, about="this machine as %d GPUs" % ranks)
json.dump(cluster, open(prefix + ".cluster.json", "w"))
history = report["history"]
step = (history[-1]["seconds"] - history[0]["seconds"]) / (len(history) - 1)
print("%.6f|%d|%d|%s" % (step, report["batch_size"] * m["seq_len"], m["seq_len"], prefix))
EOF
)" >> "$scratch/results"
done

# The predictions, one plan_training --plans run per measured layout.
python3 - "$scratch/results" "$build/plan_training" "$scratch" "$csv" "$svg" << 'EOF'
import csv, io, subprocess, sys
results, program, scratch, csv_path, svg_path = sys.argv[1:6]
rows = []
print("%-12s %5s  %-22s %12s %12s %10s" % ("layout", "ranks", "plan", "measured s", "predicted s", "pred/meas"))
for line in open(results).read().splitlines():
    name, ranks, plan, rest = line.split("|", 3)
    if rest.startswith("skipped"):
        print("%-12s %5s  %-22s %s" % (name, ranks, plan, rest))
        continue
    measured, tokens, seq, prefix = rest.split("|")
    out = subprocess.run([program, "--model", prefix + ".model.json", "--cluster", prefix + ".cluster.json",
                          "--tokens", tokens, "--seq", seq, "--plans", "-"], input=plan,
                         capture_output=True, text=True, check=True).stdout
    row = next(csv.DictReader(io.StringIO(out)))
    predicted = float(row["step_seconds"])
    rows.append((name, int(ranks), plan, float(measured), predicted))
    print("%-12s %5s  %-22s %12.3f %12.3f %10.2f" % (name, ranks, plan, float(measured), predicted,
                                                   predicted / float(measured)))
if csv_path:
    with open(csv_path, "w") as f:
        f.write("layout,ranks,plan,measured_seconds,predicted_seconds\n")
        for r in rows: f.write("%s,%d,%s,%.6f,%.6f\n" % r)
if svg_path and rows:
    top = max(max(r[3], r[4]) for r in rows) * 1.1
    w, h, left, bottom, bar = 120 + 70 * len(rows), 320, 60, 260, 24
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (w, h),
         '<text x="%d" y="18" font-size="13">gpt_train: measured and simulated seconds per step</text>' % left,
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>' % (left, bottom, w - 20, bottom)]
    for k in range(5):
        y = bottom - 220 * k / 4
        s.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (left - 6, y + 4, top * k / 4))
    for i, (name, ranks, plan, meas, pred) in enumerate(rows):
        x = left + 20 + 70 * i
        for j, (v, colour) in enumerate(((meas, "#4878a8"), (pred, "#e0a030"))):
            hgt = 220 * v / top
            s.append('<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"/>' % (x + j * bar, bottom - hgt, bar, hgt, colour))
        s.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % (x + bar, bottom + 16, name))
    s.append('<rect x="%d" y="290" width="12" height="12" fill="#4878a8"/><text x="%d" y="300">measured</text>' % (left, left + 16))
    s.append('<rect x="%d" y="290" width="12" height="12" fill="#e0a030"/><text x="%d" y="300">simulated</text>' % (left + 100, left + 116))
    s.append("</svg>")
    open(svg_path, "w").write("\n".join(s) + "\n")
EOF
echo "Load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
record_figures
