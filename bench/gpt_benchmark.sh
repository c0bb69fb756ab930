#!/usr/bin/env bash
# The GPT trained by gpt_train (one rank, float) against the same model trained by PyTorch
# (Debian's python3-torch: bench/gpt_torch_train.py, the model of the kit's oracle test), with the
# same shape, batch, optimizer (Adam) and threads (one, then every core: --threads of both), at
# two sizes, and a Llama's block (--arch llama --kv_heads 2) at the smaller. Prints tokens/s of
# each, their ratio (goal: dtk >= PyTorch), and gpt_train's MFU: its model FLOPs per second
# (Part 4's count, as gpt_train's report gives it) over the GEMM peak it measured in the same run
# (include/dtk/gpt/gemm_peak.hpp: 1024 x 1024 sgemm with the run's threads). Each is timed over
# its steps after the first, which pays for first touches of memory. The last column names the
# OpenBLAS kernels gpt_train multiplied with (include/dtk/blas_kernel.hpp). Debian's PyTorch
# multiplies with the same OpenBLAS: it is given the same kernels and the same spin of idle
# threads (OPENBLAS_THREAD_TIMEOUT) as gpt_train chose, so that only the code differs.
#
# The machine is shared: the load before and after is printed; run it when the load is low, and
# more than once.
#
# usage: bench/gpt_benchmark.sh [BUILD_DIR] [STEPS] [RUNS]     (defaults: build, 8, 3)
# Each program runs RUNS times per size and thread count (the two alternating), and the table
# gives each figure's median with its spread.
set -euo pipefail
source "$(dirname "$0")/record.sh" gpt "gpt_train against PyTorch" "$@"

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
steps=${2:-8}
runs=${3:-3}
threads=$(nproc)
[ -x "$build/gpt_train" ] || { echo "gpt_benchmark: build gpt_train first ($build/gpt_train)" >&2; exit 2; }
/usr/bin/python3 -c 'import torch' 2> /dev/null ||
  { echo "gpt_benchmark: PyTorch is missing: apt-get install python3-torch" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# name layers hidden heads seq batch [gpt_train's and gpt_torch_train.py's flags of the block]
sizes=("small 4 256 4 128 32" "medium 6 384 6 256 16"
  "llama 4 256 4 128 32 --arch llama --kv_heads 2")

echo "Load before: $(cut -d' ' -f1-3 /proc/loadavg)   ($threads cores, $steps steps per run)"
# One thread, and every core (the same count for both programs).
thread_counts=(1)
[ "$threads" -gt 1 ] && thread_counts+=("$threads")

printf '%-8s %-26s %3s %-20s %-20s %-17s %-17s %-10s %s\n' size model thr "dtk tok/s" \
  "torch tok/s" ratio "dtk MFU" "GEMM peak" "OpenBLAS kernels"
for size in "${sizes[@]}"; do
  read -r name layers hidden heads seq batch block <<< "$size"
  shape=(--layers "$layers" --hidden "$hidden" --heads "$heads" --seq "$seq" --batch_size "$batch")
  # shellcheck disable=SC2206  # the block's flags, word by word
  shape+=(${block:-})
  for t in "${thread_counts[@]}"; do
    for r in $(seq 1 "$runs"); do  # the two programs alternate, run after run
      run=$scratch/$name.$t.$r
      "$build/gpt_train" "${shape[@]}" --steps "$steps" --eval_every "$((steps + 1))" \
        --threads "$t" --report "$run.json" > "$run.log"
      read -r vocab kernel timeout < <(/usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(r["model"]["vocab_size"], r["blas"]["kernel"] or "-", r["blas"]["thread_timeout"] or "-")' \
        "$run.json")
      # PyTorch multiplies with the same OpenBLAS: it gets the kernels and the idle threads'
      # spin gpt_train ran with.
      torch_env=()
      [ "$kernel" = - ] || torch_env+=("OPENBLAS_CORETYPE=$kernel")
      [ "$timeout" = - ] || torch_env+=("OPENBLAS_THREAD_TIMEOUT=$timeout")
      env "${torch_env[@]}" /usr/bin/python3 "$root/bench/gpt_torch_train.py" "${shape[@]}" \
        --vocab "$vocab" --steps "$steps" --threads "$t" > "$run.torch.json"
    done
    /usr/bin/python3 - "$scratch/$name.$t" "$runs" "$name" \
      "$layers x $hidden, $heads heads, T $seq, B $batch" "$t" << 'EOF'
import json, statistics, sys
prefix, runs, name, model, threads = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
dtk_tps, torch_tps, dtk_mfu, peaks = [], [], [], []
for r in range(1, runs + 1):
    dtk = json.load(open(f"{prefix}.{r}.json"))
    torch = json.load(open(f"{prefix}.{r}.torch.json"))
    history = dtk["history"]
    tokens_per_step = dtk["tokens"] / dtk["steps"]
    # Timed over the steps after the first, which pays for first touches of memory.
    tps = (len(history) - 1) * tokens_per_step / (history[-1]["seconds"] - history[0]["seconds"])
    flops_per_token = dtk["flops_per_second"] / dtk["tokens_per_second"]
    dtk_tps.append(tps)
    torch_tps.append(torch["tokens_per_second"])
    dtk_mfu.append(tps * flops_per_token / dtk["gemm_peak_flops"])
    peaks.append(dtk["gemm_peak_flops"] / 1e9)
    blas = dtk["blas"]
ratios = [a / b for a, b in zip(dtk_tps, torch_tps)]


def spread(values, form):
    """The median, then the smallest and the largest of the runs."""
    low, high = form % min(values), form % max(values)
    return f"{form % statistics.median(values)} ({low}-{high})"


print("%-8s %-26s %3s %-20s %-20s %-17s %-17s %-10s %s (chosen by %s)" % (
    name, model, threads, spread(dtk_tps, "%.0f"), spread(torch_tps, "%.0f"),
    spread(ratios, "%.2fx"), spread(dtk_mfu, "%.3f"), "%.0f GF" % statistics.median(peaks),
    blas["kernel"], blas["chosen_by"]))
EOF
  done
done
echo "Each figure: the median of $runs runs, then the smallest and the largest (the ratio: dtk's"
echo "tokens/s over PyTorch's, run by run; the MFU: against the GEMM peak of the same run)."
echo "Load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
record_figures
