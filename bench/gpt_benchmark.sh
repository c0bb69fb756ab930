#!/usr/bin/env bash
# The GPT trained by gpt_train (one rank, float) against the same model trained by PyTorch
# (Debian's python3-torch: bench/gpt_torch_train.py, the model of the kit's oracle test), with the
# same shape, batch, optimizer (Adam) and threads (one, then every core: --threads of both), at
# two sizes. Prints tokens/s of each, their ratio (goal: dtk >= PyTorch), and each one's MFU:
# its model FLOPs per second (Part 4's count, as gpt_train's report gives it) over the GEMM peak
# gpt_train measured in the same run (include/dtk/gpt/gemm_peak.hpp: 1024 x 1024 sgemm with the
# run's threads). Each is timed over
# its steps after the first, which pays for first touches of memory. The last column names the
# OpenBLAS kernels gpt_train multiplied with (include/dtk/blas_kernel.hpp). Debian's PyTorch
# multiplies with the same OpenBLAS: it is given the same kernels and the same spin of idle
# threads (OPENBLAS_THREAD_TIMEOUT) as gpt_train chose, so that only the code differs.
#
# The machine is shared: the load before and after is printed; run it when the load is low, and
# more than once.
#
# usage: bench/gpt_benchmark.sh [BUILD_DIR] [STEPS]     (defaults: build, 8)
set -euo pipefail
source "$(dirname "$0")/record.sh" gpt "gpt_train against PyTorch" "$@"

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
steps=${2:-8}
threads=$(nproc)
[ -x "$build/gpt_train" ] || { echo "gpt_benchmark: build gpt_train first ($build/gpt_train)" >&2; exit 2; }
/usr/bin/python3 -c 'import torch' 2> /dev/null ||
  { echo "gpt_benchmark: PyTorch is missing: apt-get install python3-torch" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# name layers hidden heads seq batch
sizes=("small 4 256 4 128 32" "medium 6 384 6 256 16")

echo "Load before: $(cut -d' ' -f1-3 /proc/loadavg)   ($threads cores, $steps steps per run)"
# One thread, and every core (the same count for both programs).
thread_counts=(1)
[ "$threads" -gt 1 ] && thread_counts+=("$threads")

printf '%-8s %-26s %7s %12s %12s %7s %9s %9s %11s  %s\n' size model threads "dtk tok/s" \
  "torch tok/s" ratio "dtk MFU" "torch MFU" "GEMM peak" "OpenBLAS kernels"
for size in "${sizes[@]}"; do
  read -r name layers hidden heads seq batch <<< "$size"
  shape=(--layers "$layers" --hidden "$hidden" --heads "$heads" --seq "$seq" --batch_size "$batch")
  for t in "${thread_counts[@]}"; do
    run=$scratch/$name.$t
    "$build/gpt_train" "${shape[@]}" --steps "$steps" --eval_every "$((steps + 1))" \
      --threads "$t" --report "$run.json" > "$run.log"
    read -r vocab kernel timeout < <(/usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(r["model"]["vocab_size"], r["blas"]["kernel"] or "-", r["blas"]["thread_timeout"] or "-")' \
      "$run.json")
    # PyTorch multiplies with the same OpenBLAS: it gets the kernels and the idle threads' spin
    # gpt_train ran with.
    torch_env=()
    [ "$kernel" = - ] || torch_env+=("OPENBLAS_CORETYPE=$kernel")
    [ "$timeout" = - ] || torch_env+=("OPENBLAS_THREAD_TIMEOUT=$timeout")
    env "${torch_env[@]}" /usr/bin/python3 "$root/bench/gpt_torch_train.py" "${shape[@]}" \
      --vocab "$vocab" --steps "$steps" --threads "$t" > "$run.torch.json"
    /usr/bin/python3 - "$run.json" "$run.torch.json" "$name" \
      "$layers x $hidden, $heads heads, T $seq, B $batch" "$t" << 'EOF'
import json, sys
dtk, torch = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
history = dtk["history"]
tokens_per_step = dtk["tokens"] / dtk["steps"]
dtk_tps = (len(history) - 1) * tokens_per_step / (history[-1]["seconds"] - history[0]["seconds"])
flops_per_token = dtk["flops_per_second"] / dtk["tokens_per_second"]
peak = dtk["gemm_peak_flops"]
torch_tps = torch["tokens_per_second"]
blas = dtk["blas"]
print("%-8s %-26s %7s %12.0f %12.0f %6.2fx %9.3f %9.3f %8.1f GF  %s (chosen by %s)" % (
    sys.argv[3], sys.argv[4], sys.argv[5], dtk_tps, torch_tps, dtk_tps / torch_tps,
    dtk_tps * flops_per_token / peak, torch_tps * flops_per_token / peak, peak / 1e9,
    blas["kernel"], blas["chosen_by"]))
EOF
  done
done
echo "Load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
record_figures
