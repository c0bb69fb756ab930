#!/usr/bin/env bash
# Grades a class on a Slurm cluster: one job-array task per hand-in, then the same gradebook and
# summary page as `dtk-grade --batch` on one machine.
#
# usage: scripts/grade-class-slurm.sh [--grader PATH] [--out DIR] [--assignment N] [--seed S]
#                                     HANDINS [-- SBATCH_OPTION...]
#
#   HANDINS       one sub-directory or .tar per student, or Gradescope's export (as --batch)
#   --grader      dtk-grade, on a path every node sees (default: build/dtk-grade of this kit)
#   --out         where results go, on a shared path (default: HANDINS-graded)
#   SBATCH_OPTION passed to sbatch as is: --partition=..., --time=10, --account=...
#
# The kit (its build directory), HANDINS and --out must be on a file system every node mounts,
# and each node must have the kit's packages (scripts/ensure-deps.sh --grading-only). Each task
# asks for 2 CPUs (a grading runs up to two compilers and 8 MPI ranks); gradings on one node take
# turns on its sandbox user. The script waits for the array (sbatch --wait), then merges: run it
# again after an interruption and only the hand-ins without results are graded.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
grader=$root/build/dtk-grade
out="" options=() handins=""
usage() {
  sed -n '4,6p' "$0" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --grader) grader=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --assignment | --seed) options+=("$1" "$2"); shift 2 ;;
    --) shift; break ;;
    -*) echo "grade-class-slurm: unknown option $1" >&2; usage ;;
    *) [ -z "$handins" ] || usage; handins=$1; shift ;;
  esac
done
[ -n "$handins" ] || usage
[ -x "$grader" ] || { echo "grade-class-slurm: no dtk-grade at $grader (build the kit, or --grader)" >&2; exit 1; }
command -v sbatch > /dev/null || { echo "grade-class-slurm: sbatch not found: is this a Slurm login node?" >&2; exit 1; }
handins=$(cd "$handins" && pwd)
out=${out:-$handins-graded}
umask 077  # a class's results and logs are the course staff's only, as dtk-grade keeps them
mkdir -p "$out/slurm"
out=$(cd "$out" && pwd)

# The hand-ins, in the order the tasks number them; this also fixes the batch's seed.
"$grader" --batch "$handins" --out "$out" "${options[@]}" --list > "$out/slurm/hand-ins.tsv"
count=$(wc -l < "$out/slurm/hand-ins.tsv")
[ "$count" -gt 0 ] || { echo "grade-class-slurm: no hand-ins under $handins" >&2; exit 1; }
# Tasks are hand-in numbers; those already graded are left out of the array.
tasks=""
index=0
while IFS=$'\t' read -r student path; do
  [ -f "$out/students/$student/graded.json" ] || tasks+="${tasks:+,}$index"
  index=$((index + 1))
done < "$out/slurm/hand-ins.tsv"

if [ -n "$tasks" ]; then
  assignment=()
  for ((i = 0; i < ${#options[@]}; i += 2)); do
    [ "${options[i]}" = --assignment ] && assignment=(--assignment "${options[i + 1]}")
  done
  echo "grade-class-slurm: $count hand-ins, submitting tasks $tasks"
  # A task whose grading failed makes sbatch fail; the merge below still reports it.
  sbatch --wait --job-name=dtk-grade --array="$tasks" --cpus-per-task=2 \
    --output="$out/slurm/task-%a.log" "$@" \
    --wrap "\"$grader\" --batch \"$handins\" --out \"$out\" ${assignment[*]} --task \$SLURM_ARRAY_TASK_ID" ||
    echo "grade-class-slurm: some tasks failed (see $out/slurm/task-*.log)" >&2
fi
# The merge: nothing is left to grade, so this writes the gradebook and the summary page.
"$grader" --batch "$handins" --out "$out" "${options[@]}"
