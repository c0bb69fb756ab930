#!/usr/bin/env bash
# Calibrates Part 13's simulator for this machine: writes a cluster config (include/dtk/planning/
# cluster_config.hpp) in which each core is a "GPU", all on one node, with what this machine
# measures:
#   - peak_tflops: the GEMM peak gpt_train measures (include/dtk/gpt/gemm_peak.hpp: 1024 x 1024
#     sgemm on every rank at once), over the cores;
#   - gemm_tflops: the model FLOPs per second of gpt_train's steps on one rank (its MFU times the
#     peak: the rate the GPT's forward and backward passes compute at, matrix products and the
#     rest), over the cores;
#   - intra_node_gbps and intra_node_us (β and α, inter_node the same: one node): MPI's
#     all-reduce on 2 ranks timed by collectives_bench, t(B) = 2 α + B / β on 2 ranks (Part 7's
#     ring), α from the smallest messages and β from those of 1 to 4 MB;
#   - expert_gemm_tflops: the rate of a mixture of experts' expert MLPs (4 experts, top 2, the
#     same shape): its one-rank step against the dense one's, the rest of the layer at
#     gemm_tflops (the expert MLPs' FLOPs are k times the dense MLP's, the MoE's extra FLOPs
#     k - 1 of them);
#   - value_bytes 4 (gpt_train trains in float) and memory_gb the machine's memory over the cores.
# With --dtype bf16, the GPT's rates are those of gpt_train --dtype bf16 (on this CPU slower than
# float: its products still compute in float, and the rounding and packing come on top, where a
# GPU's bf16 is faster) and value_bytes is 2: the machine as a bf16 run sees it.
# bench/planner_validation.sh scales peak_tflops and gemm_tflops to the ranks of each run (R ranks
# share the cores: each gets cores / R of them).
#
# usage: bench/planner_calibration.sh [--dtype float|bf16] [BUILD_DIR] [GPT_TRAIN] > machine.json
#   BUILD_DIR   the kit's build (collectives_bench), default build
#   GPT_TRAIN   the gpt_train program, default BUILD_DIR/gpt_train
# The machine is shared: the load is printed on stderr; run it when the load is low.
set -euo pipefail
section=planner-calibration title="Part 13's simulator calibrated"
if [ "${1:-} ${2:-}" = "--dtype bf16" ]; then
  section+=-bf16 title+=" for bf16 runs"
fi
source "$(dirname "$0")/record.sh" "$section" "$title" "$@"

dtype=float
if [ "${1:-}" = --dtype ]; then
  dtype=${2:-}
  shift 2 || true
fi
case $dtype in
  float) value_bytes=4 ;;
  bf16) value_bytes=2 ;;
  *) echo "planner_calibration: --dtype expects float or bf16, got '$dtype'" >&2; exit 2 ;;
esac
build=${1:-build}
gpt_train=${2:-$build/gpt_train}
for program in "$build/collectives_bench" "$gpt_train"; do
  [ -x "$program" ] || { echo "planner_calibration: no $program (build it first)" >&2; exit 2; }
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mpirun=(mpirun --oversubscribe)
[ "$(id -u)" -ne 0 ] || mpirun+=(--allow-run-as-root)
cores=$(nproc)
echo "Load before: $(cut -d' ' -f1-3 /proc/loadavg) ($cores cores)" >&2

# The GEMM peak and the GPT's own rate: one rank, the default model, steps after the first.
"$gpt_train" --steps 6 --eval_every 7 --dtype "$dtype" --report "$scratch/gpt.json" \
  > "$scratch/gpt.log" 2>&1 || { cat "$scratch/gpt.log" >&2; exit 1; }
"$gpt_train" --steps 6 --eval_every 7 --dtype "$dtype" --experts 4 --top_k 2 \
  --report "$scratch/moe.json" > "$scratch/moe.log" 2>&1 || { cat "$scratch/moe.log" >&2; exit 1; }
# α and β: MPI's all-reduce on 2 ranks, 4 KB to 4 MB.
"${mpirun[@]}" -n 2 "$build/collectives_bench" --collective allreduce --impl mpi --type float \
  --min-bytes 4K --max-bytes 4M --iters 30 --csv "$scratch/allreduce.csv" > /dev/null

python3 - "$scratch/gpt.json" "$scratch/allreduce.csv" "$cores" "$(hostname)" "$scratch/moe.json" \
  "$dtype" "$value_bytes" << 'EOF'
import csv, json, os, statistics, sys, time
report, bench, cores, host = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), sys.argv[4]
moe, dtype, value_bytes = json.load(open(sys.argv[5])), sys.argv[6], int(sys.argv[7])


def step_of(run):
    """Seconds per step (steps after the first) and model FLOPs per step of a report."""
    history = run["history"]
    return ((history[-1]["seconds"] - history[0]["seconds"]) / (len(history) - 1),
            run["flops_per_second"] * run["seconds"] / run["steps"])


step, flops_per_step = step_of(report)
rate = flops_per_step / step
# The MoE's extra FLOPs are k - 1 dense MLPs: its k expert MLPs, at the expert rate, in the time
# the dense step leaves once its own MLP is taken out (at the dense rate).
moe_step, moe_flops = step_of(moe)
k = moe["model"]["top_k"]
mlp = (moe_flops - flops_per_step) / (k - 1)
expert_rate = k * mlp / (moe_step - (flops_per_step - mlp) / rate)
peak = report["gemm_peak_flops"]
times = {int(r["bytes"]): float(r["time_us"]) * 1e-6 for r in csv.DictReader(open(bench))}
alpha = min(t for b, t in times.items() if b <= 16384) / 2
beta = statistics.median(b / (t - 2 * alpha) for b, t in times.items() if 1 << 20 <= b <= 4 << 20)
memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
print(json.dumps({
    "about": "this machine (%s), calibrated by bench/planner_calibration.sh on %s: each of its %d "
             "cores a GPU; GEMM peak %.1f GFLOP/s in all, gpt_train's one-rank step in %s %.3f s "
             "(MFU %.3f), with 4 experts, top 2, %.3f s (its experts at %.2f of the dense rate); "
             "MPI all-reduce alpha %.1f us, beta %.2f GB/s"
             % (host, time.strftime("%Y-%m-%d %H:%M"), cores, peak / 1e9, dtype, step,
                flops_per_step / step / peak, moe_step, expert_rate / rate, alpha * 1e6, beta / 1e9),
    "gpus": cores, "gpus_per_node": cores,
    "peak_tflops": peak / cores / 1e12,
    "gemm_tflops": rate / cores / 1e12,
    "expert_gemm_tflops": expert_rate / cores / 1e12,
    "memory_gb": memory / cores / 1e9,
    "intra_node_gbps": beta / 1e9, "inter_node_gbps": beta / 1e9,
    "intra_node_us": alpha * 1e6, "inter_node_us": alpha * 1e6,
    "value_bytes": value_bytes}, indent=2))
EOF
echo "Load after:  $(cut -d' ' -f1-3 /proc/loadavg)" >&2
record_figures
