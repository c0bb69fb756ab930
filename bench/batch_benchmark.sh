#!/usr/bin/env bash
# Throughput of `dtk-grade --batch`: a class of 40 hand-ins (10 reference archives, 10 starters,
# 10 wrong submissions from the grader's self-tests, 10 edited references that must compile)
# graded one at a time (--jobs 1), then two at a time (--jobs 2), with the same seed. Prints both
# times and their ratio, and checks that both gradebooks give every student the same score.
#
# usage: bench/batch_benchmark.sh [BUILD_DIR]     (from the kit's root; dtk-grade built)
set -euo pipefail
source "$(dirname "$0")/record.sh" batch "A class of 40 graded with --jobs 1 and --jobs 2" "$@"
build=${1:-build}
grade=$build/dtk-grade
[ -x "$grade" ] || { echo "batch_benchmark: build dtk-grade first ($grade)" >&2; exit 1; }
mapfile -t files < <(grep '^[^#]' starter/handin/assignment1.txt)
work=$(mktemp -d "${TMPDIR:-/tmp}/dtk-batch-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
args=()
[ "$(id -u)" = 0 ] || args+=(--no-sandbox)

class=$work/class
mkdir -p "$class"
copy_of() { mkdir -p "$2" && (cd "$1" && cp --parents "${files[@]}" "$2/"); }
wrong=(wrong_get_info_dp_major wrong_get_info_split_key_reversed wrong_split_modulo
       wrong_forward_no_rearrangement wrong_forward_world_comm wrong_cost_error_type
       wrong_get_info_swapped_colors wrong_split_dp1_only forbidden_bcast wrong_get_info_one_rank_groups)
for i in $(seq -w 1 10); do
  tar -cf "$class/reference$i.tar" -C solutions "${files[@]}"
  copy_of starter "$class/starter$i"
  copy_of solutions "$class/wrong$i"
  patch -s -p1 -d "$class/wrong$i" < "grader/tests/submissions/${wrong[$((10#$i - 1))]}.patch"
  copy_of solutions "$class/edited$i"
  echo "// student $i" >> "$class/edited$i/model/func_impl.cpp"
  echo "// student $i" >> "$class/edited$i/data/data_parallel_preprocess.cpp"
done

seconds() {
  local start=$SECONDS
  "$grade" --batch "$class" --seed 7 --out "$2" --jobs "$1" "${args[@]}" > "$2.log" 2>&1 ||
    { cat "$2.log" >&2; exit 1; }
  echo $((SECONDS - start))
}
one=$(seconds 1 "$work/jobs1")
two=$(seconds 2 "$work/jobs2")
cmp -s <(cut -d, -f1-9 "$work/jobs1/gradebook.csv") <(cut -d, -f1-9 "$work/jobs2/gradebook.csv") ||
  { echo "batch_benchmark: the two gradebooks differ" >&2; exit 1; }
echo "40 hand-ins: --jobs 1 ${one} s, --jobs 2 ${two} s, ratio $(awk -v a="$two" -v b="$one" 'BEGIN { printf "%.2f", a / b }') (target <= 0.70); same scores in both gradebooks"
record_figures
