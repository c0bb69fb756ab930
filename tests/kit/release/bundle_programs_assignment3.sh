# Sourced by test_bundle.sh for assignment 3's bundle (the reference files copied in): its
# gpt_train trains a small GPT on the Bible for a few steps, and its plan_training (Part 13)
# plans the public Llama-3-8B case as the reference does and simulates a plan given by flags.
try_bundle_programs() {
  local bundle=$1 configs=$1/starter/planner/configs
  step "planning with the bundle's plan_training: the reference's plan, and a plan by flags"
  plan() {
    "$bundle/build/plan_training" --model "$configs/llama3_8b.json" \
      --cluster "$configs/h100_80gb_x64.json" --tokens 4194304 --seq 8192 "$@"
  }
  logged plan.log plan || { show plan.log; fail "plan_training failed in the bundle"; }
  grep -q "^Plan: tp=2 cp=1 pp=1 dp=32 ep=1 microbatches=8 zero=1 sp 1f1b$" "$work/plan.log" ||
    { show plan.log; fail "plan_training's plan differs from the reference's"; }
  logged flags.log plan --tp 8 --microbatches 64 --zero 1 --sp ||
    { show flags.log; fail "plan_training --tp 8 ... failed in the bundle"; }
  grep -E '^Plan|valid' "$work/plan.log" "$work/flags.log" | sed 's/^[^:]*:/    /'

  step "training with the bundle's gpt_train: a small GPT, a few steps on the Bible"
  logged gpt.log "$bundle/build/gpt_train" --layers 1 --hidden 32 --heads 2 --seq 16 --batch_size 4 \
    --steps 3 --sample 20 || { show gpt.log; fail "gpt_train failed in the bundle"; }
  grep -q "King James Bible" "$work/gpt.log" || { show gpt.log; fail "gpt_train did not read the Bible"; }
  grep -E 'loss' "$work/gpt.log" | tail -n 1 | sed 's/^/    /'
}
