#!/usr/bin/env bash
# Self-test of the speed bonus in `dtk-grade --batch` (assignment 2): the gradings leave it
# pending, then the batch times it one hand-in at a time; a bonus deferred because the machine
# was busy is timed when the batch runs again, without grading anything again.
#   1. with the machine kept busy (a CPU-bound loop per core, started and stopped here), both
#      references' bonuses are deferred (results.json's extra_data.speed_bonus, the feedback)
#      and the batch says so; the starter, which earns no function's points, has none to time;
#   2. run again with a manifest that times whatever the load: nothing is graded again, both
#      bonuses are timed, the gradebook's bonus column follows results.json.
#
# usage: batch_bonus_test.sh <kit source dir> <dtk-grade> <the build's assignment 2 manifest>
#                            <work dir>
set -euo pipefail
root=$1 grade=$2 manifest=$3 work=$4
mapfile -t files < <(grep '^[^#]' "$root/starter/handin/assignment2.txt")
rm -rf "$work"
mkdir -p "$work"
fail() {
  echo "FAIL: $*"
  exit 1
}
args=(--assignment 2)
[ "$(id -u)" = 0 ] || args+=(--no-sandbox)

# The build's manifest, the bonus timed whatever the machine's load.
python3 "$root/grader/tests/scratch_manifest.py" "$manifest" "$work/any-load.json" \
  --speed-bonus max_busy=1 max_spread=100
burners=()
stop_burners() {
  for pid in "${burners[@]}"; do kill "$pid" 2> /dev/null || true; done
  burners=()
}
trap stop_burners EXIT

class=$work/class out=$work/class-graded
mkdir -p "$class"
copy_of() { mkdir -p "$2" && (cd "$1" && cp --parents "${files[@]}" "$2/"); }
copy_of "$root/solutions" "$class/ada"
copy_of "$root/solutions" "$class/ben"
copy_of "$root/starter" "$class/cy"
state() {  # the speed bonus's state in a student's results.json ("" when none)
  python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('extra_data', {}).get('speed_bonus', ''))" \
    "$out/students/$1/results.json"
}

echo "1. a batch on a busy machine: the bonuses are deferred"
for _ in $(seq "$(nproc)"); do
  sh -c 'while :; do :; done' &
  burners+=($!)
done
"$grade" --batch "$class" --jobs 2 --seed 7 "${args[@]}" > "$work/busy.log" 2>&1 ||
  { cat "$work/busy.log"; fail "dtk-grade --batch exited with $?"; }
stop_burners
cat "$work/busy.log"
grep -q "Timing the speed bonus of 2 hand-ins, one at a time" "$work/busy.log" ||
  fail "the batch did not time the two references' bonuses after the gradings"
grep -q "2 speed bonuses were not timed" "$work/busy.log" || fail "the batch does not say the bonuses were deferred"
for student in ada ben; do
  [ "$(state $student)" = deferred ] || fail "$student's bonus: \"$(state $student)\", not deferred"
  grep -q "Deferred: the machine was busy" "$out/students/$student/results.json" || fail "$student's feedback does not say why"
done
[ -z "$(state cy)" ] || fail "the starter has no bonus to time, but its state is \"$(state cy)\""

echo "2. the same batch again, timed whatever the load: only the bonuses are timed"
"$grade" --batch "$class" --jobs 2 --manifest "$work/any-load.json" "${args[@]}" \
  > "$work/idle.log" 2>&1 || { cat "$work/idle.log"; fail "the second run exited with $?"; }
cat "$work/idle.log"
grep -q "0 to grade (3 graded before)" "$work/idle.log" || fail "the second run graded again"
grep -q "Timing the speed bonus of 2 hand-ins" "$work/idle.log" || fail "the deferred bonuses were not timed again"
for student in ada ben; do
  [ "$(state $student)" = timed ] || fail "$student's bonus: \"$(state $student)\", not timed"
  python3 - "$out" "$student" <<'EOF' || fail "$student's gradebook row does not show its bonus"
import csv, json, sys
out, student = sys.argv[1], sys.argv[2]
results = json.load(open(f"{out}/students/{student}/results.json"))
bonus = sum(t["score"] for t in results["tests"] if t["name"].endswith(": speed bonus"))
row = next(r for r in csv.DictReader(open(f"{out}/gradebook.csv")) if r["student"].lstrip("'") == student)
assert float(row["bonus"].lstrip("'")) == bonus, (row, bonus)
print(f"    {student}: bonus +{bonus:g}, in the gradebook too")
EOF
done
echo "batch_bonus_test: all checks passed"
