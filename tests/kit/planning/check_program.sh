#!/usr/bin/env bash
# Kit self-test of the program plan_training (Part 13, built with the reference): the reference's
# plan and its simulation, a plan given by flags, a file of plans as CSV, a plan written as JSON
# (--json), and every bad input refused with one line on stderr and exit status 2.
#   check_program.sh PLAN_TRAINING CONFIGS_DIR
set -uo pipefail
program=$1
configs=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
case_args=(--model "$configs/llama3_8b.json" --cluster "$configs/h100_80gb_x64.json" --tokens 4194304 --seq 8192)

# runs the program; checks its exit status and that its output matches a pattern
expect() {
  local status=$1 pattern=$2
  shift 2
  "$program" "$@" > "$scratch/out" 2> "$scratch/err"
  local got=$?
  [ "$got" = "$status" ] || fail "$* exited $got, expected $status: $(cat "$scratch/err")"
  grep -Eq -- "$pattern" "$scratch/out" "$scratch/err" || fail "$*: no line matches '$pattern'"
  if [ "$status" = 2 ] && [ "$(wc -l < "$scratch/err")" != 1 ]; then
    fail "$*: expected one line on stderr, got: $(cat "$scratch/err")"
  fi
}

expect 0 '^Plan: tp=2 cp=1 pp=1 dp=32 ep=1 microbatches=8 zero=1 sp 1f1b$' "${case_args[@]}"
expect 0 'valid: step [0-9.]+ s, [0-9.]+ of 80 GB per GPU, MFU 0\.668' "${case_args[@]}"
expect 0 '^Plan: tp=8 cp=1 pp=2 dp=4 ep=1 microbatches=16 zero=1 sp 1f1b$' "${case_args[@]}" \
  --tp 8 --pp 2 --microbatches 16 --zero 1 --sp
expect 0 'invalid: needs [0-9.]+ GB on the GPU' "${case_args[@]}" --dp 64
expect 0 'invalid: tp x cp x pp x dp = 1 x 1 x 1 x 8 = 8 GPUs, but the cluster has 64' \
  "${case_args[@]}" --dp 8
printf 'tp=2 dp=32 microbatches=8 zero=1 sp\n# a comment\n\ntp=16\n' > "$scratch/plans"
expect 0 '^plan,valid,step_seconds,peak_memory_gb,mfu,' "${case_args[@]}" --plans "$scratch/plans"
expect 0 '^tp=2 cp=1 pp=1 dp=32 ep=1 microbatches=8 zero=1 sp 1f1b,1,[0-9.]+,[0-9.]+,0\.668,' \
  "${case_args[@]}" --plans "$scratch/plans"
expect 0 '^tp=16 .*,0,0,0,0,.*"tp = 16 does not divide' "${case_args[@]}" --plans - < "$scratch/plans"
[ "$(grep -c . "$scratch/out")" = 3 ] || fail "--plans: expected a header and 2 rows"
# The memory columns are the peak's parts (to the four digits each is printed with).
python3 - "$scratch/out" << 'PYTHON' || fail "--plans: the memory columns do not add up to peak_memory_gb"
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
parts = sum(float(row[k + "_gb"]) for k in ("parameters", "gradients", "optimizer", "activations", "transient"))
sys.exit(abs(parts - float(row["peak_memory_gb"])) > 1e-3 * float(row["peak_memory_gb"]))
PYTHON
expect 0 '^usage: plan_training' --help
# --json: the plan simulated, as JSON in TrainingPlan's order, for gpt_train --plan.
expect 0 '^Plan: tp=8 cp=1 pp=2 dp=4 ep=1 microbatches=16 zero=1 sp 1f1b$' "${case_args[@]}" \
  --tp 8 --pp 2 --microbatches 16 --zero 1 --sp --json "$scratch/plan.json"
expected_json='{"tp":8,"cp":1,"pp":2,"dp":4,"ep":1,"microbatches":16,"zero_stage":1,"sequence_parallel":true,"recompute":false,"schedule":"1f1b"}'
[ "$(tr -d ' \n' < "$scratch/plan.json")" = "$expected_json" ] ||
  fail "--json wrote $(cat "$scratch/plan.json"), expected $expected_json"
expect 0 '^Plan: tp=2 cp=1 pp=1 dp=32 ep=1 microbatches=8 zero=1 sp 1f1b$' "${case_args[@]}" \
  --json "$scratch/chosen.json"
grep -q '"dp": 32' "$scratch/chosen.json" || fail "--json of the chosen plan: $(cat "$scratch/chosen.json")"

expect 2 '^plan_training: --seq is required' --model a --cluster b --tokens 8
expect 2 '^plan_training: unknown argument "--bogus"' "${case_args[@]}" --bogus 1
expect 2 '^plan_training: --tp' "${case_args[@]}" --tp zero
expect 2 '^plan_training: --schedule expects 1f1b or gpipe' "${case_args[@]}" --schedule x
expect 2 '^plan_training: give a plan.s flags or --plans' "${case_args[@]}" --tp 2 --plans -
expect 2 '^plan_training: --json writes one plan: not with --plans' "${case_args[@]}" --plans - \
  --json "$scratch/x.json"
expect 2 '^plan_training: --json: cannot write ".*/none/plan.json"' "${case_args[@]}" \
  --json "$scratch/none/plan.json"
expect 2 'model config ".*nope.json": cannot be read' --model "$scratch/nope.json" \
  --cluster "$configs/h100_80gb_x64.json" --tokens 8192 --seq 8192
echo '{"gpus": 64, "gpus_per_node": 8, "peak_tflops": 989, "memory_gb": 80, "intra_node_gbps": 450}' > "$scratch/c.json"
expect 2 'cluster config ".*c.json": missing key "inter_node_gbps"' --model "$configs/llama3_8b.json" \
  --cluster "$scratch/c.json" --tokens 8192 --seq 8192
echo '{"gpus": 12, "gpus_per_node": 8, "peak_tflops": 989, "memory_gb": 80, "intra_node_gbps": 450, "inter_node_gbps": 50, "latency": 3}' > "$scratch/c.json"
expect 2 'unknown key "latency"' --model "$configs/llama3_8b.json" --cluster "$scratch/c.json" \
  --tokens 8192 --seq 8192
expect 2 'a positive multiple of seq_len' "${case_args[@]/4194304/4194305}"
sed 's/}$/, "capacity_factor": 0.5}/' "$configs/mixtral_8x7b.json" > "$scratch/m.json"
expect 2 'model config ".*m.json": "capacity_factor" must be a number of at least 1, not 0.5' \
  --model "$scratch/m.json" --cluster "$configs/h100_80gb_x64.json" --tokens 8192 --seq 8192
printf 'tp=2 bogus\n' > "$scratch/plans"
expect 2 'plan "tp=2 bogus": unknown word "bogus"' "${case_args[@]}" --plans "$scratch/plans"

[ "$failures" = 0 ] && echo "plan_training: every case as expected"
exit $((failures > 0))
