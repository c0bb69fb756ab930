#!/usr/bin/env bash
# Kit self-test of an assignment's student bundle, end to end, as a student and then the grader
# meet it:
#   1. `scripts/make-release.sh` packs it; it unpacks into an empty directory, one top directory;
#   2. it holds what students need, nothing of the other assignments (student files, public
#      tests, programs, handout sections) and no solution code or hidden test;
#   3. its `make` builds it;
#   4. its `make test` fails, every public test with NotImplemented (the stubs);
#   5. with the reference files copied in, `make test` passes;
#   6. its programs run (tests/kit/release/bundle_programs_assignment<N>.sh, where the
#      assignment has one: unified_train trains with its own assignment's trainer and refuses the
#      other's flags with a message);
#   7. its `make handin.tar` packs its student files, and dtk-grade gives full marks.
# With parts to disable, it does all this for a course that does not assign them (a scratch copy
# of the manifest with "enabled": false): their stubs, public tests and handout sections must be
# left out, their reference provided, and the hand-in graded without them.
#
# usage: test_bundle.sh <kit source dir> <dtk_source_check> --grader=<dtk-grade, or empty>
#                       [ASSIGNMENT [PART_TO_DISABLE...]]   (default 1, none)
# Set DTK_KEEP_BUNDLE_TEST=1 to keep the scratch directory for a look.
set -euo pipefail
root=$1 check=$2 grader=${3#--grader=} assignment=${4:-1}
disabled="${*:5}"
listed() { grep -o '^[^# ]*' "$1" | grep .; }  # a list's paths, comments dropped
# What the release makes of a kit file: markers dropped, the disabled parts' blocks cut.
select_parts() { awk -v assignment="$assignment" -v disabled="$disabled" -f "$root/scripts/select-parts.awk" "$@"; }
mapfile -t student_files < <(listed "$root/starter/handin/assignment$assignment.txt")
top=dtk-student
[ "$assignment" = 1 ] || top=dtk-student-assignment$assignment

# The bundle's make must not join the jobserver of a make that may have started this test.
unset MAKEFLAGS MFLAGS MAKELEVEL

source "$(dirname "$0")/steps.sh"
scratch_dir dtk-bundle-test "${DTK_KEEP_BUNDLE_TEST:-0}"

manifest=$root/grader/manifests/assignment$assignment.json
if [ -n "$disabled" ]; then
  step "disabling Part $disabled in a scratch copy of the manifest"
  python3 "$root/grader/tests/scratch_manifest.py" "$manifest" "$work/manifest.json" \
    --disable $disabled
  manifest=$work/manifest.json
fi

step "packing assignment $assignment's bundle with scripts/make-release.sh"
logged release.log "$root/scripts/make-release.sh" "$work/dist" "$assignment" "$manifest" ||
  { show release.log; fail "make-release.sh failed"; }
archive=$work/dist/$top.tar.gz
mkdir "$work/unpacked"
tar -xzf "$archive" -C "$work/unpacked"
found=$(ls -A "$work/unpacked")
[ "$found" = "$top" ] || fail "the bundle must hold one top directory $top/, found: $found"
bundle=$work/unpacked/$top
echo "    $(tar -tzf "$archive" | grep -vc '/$') files, $(du -h "$archive" | cut -f1)"

step "checking what the bundle holds"
for path in CMakeLists.txt Makefile AGENTS.md handout.md figs cmake make scripts/ensure-deps.sh \
  starter tests/harness tests/public; do
  [ -e "$bundle/$path" ] || fail "the bundle lacks $path"
done
# The handout as this assignment's students read it: no section cut empty by its blocks. (An
# assignment the handout does not address yet, such as kit_new_assignment's, is said, not checked.)
if grep -qx "<!-- dtk:only $assignment -->" "$root/handout.md"; then
  python3 "$root/tests/kit/release/check_handout_sections.py" "$bundle/handout.md" ||
    fail "the bundle's handout.md has sections with nothing in them (above): give each its <!-- dtk:only $assignment --> block"
else
  echo "    handout.md has no <!-- dtk:only $assignment --> block yet: its sections are not checked"
fi
hidden=$(cd "$bundle" && find . -path ./solutions -o -path ./grader -o -path ./tests/kit \
  -o -name 'dtk_source_check*' -o -name 'dtk-grade*' | sed 's|^\./||')
[ -z "$hidden" ] || fail "the bundle holds what students must never see: $hidden"
for file in "${student_files[@]}"; do
  cmp -s <(select_parts "$root/starter/$file") "$bundle/starter/$file" ||
    fail "starter/$file in the bundle is not the kit's starter/$file (markers and disabled parts cut)"
  grep -q 'throw NotImplemented(' "$bundle/starter/$file" ||
    fail "starter/$file in the bundle throws no NotImplemented: not the stub"
done
# The disabled parts' reference is provided on purpose, and only theirs: the provided files
# define exactly their functions, and the rest of the bundle holds no reference code.
mapfile -t provided < <(cd "$bundle" && find starter -name '*_provided.cpp' | sort)
[ -z "$disabled" ] || [ ${#provided[@]} -gt 0 ] || fail "Part $disabled is disabled but no reference is provided"
[ -n "$disabled" ] || [ ${#provided[@]} -eq 0 ] || fail "every part is assigned, yet the bundle provides ${provided[*]}"
if [ ${#provided[@]} -gt 0 ]; then
  defined=$(for file in "${provided[@]}"; do "$check" list "$bundle/$file"; done |
    sed -n 's/^function [0-9]*: .* \([a-zA-Z_0-9]*\)(.*/\1/p' | sort -u | tr '\n' ' ')
  expected=$(python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
print(" ".join(sorted({t["function"] for p in m["parts"] if p.get("enabled") is False for t in p["tests"]})))' \
    "$manifest")
  [ "$defined" = "$expected " ] || fail "the provided files define '$defined', expected the functions of Part $disabled: '$expected'"
fi
scan=$work/scan
cp -a "$bundle" "$scan"
for file in "${provided[@]}"; do rm "$scan/$file"; done
"$check" no-solution-code "$root/starter" "$root/solutions" "$scan" "${student_files[@]}" ||
  fail "the bundle contains reference code"
# Nothing of the other assignments: their student files and lists, their own tests and
# programs (release/assignment<N>.txt), their handout sections and the figures only they show.
for list in "$root"/starter/handin/assignment*.txt; do
  other=$(basename "$list" .txt)
  other=${other#assignment}
  [ "$other" != "$assignment" ] || continue
  for path in $(listed "$list" | sed 's|^|starter/|') starter/handin/assignment$other.txt \
    $(listed "$root/release/assignment$other.txt"); do
    [ ! -e "$bundle/$path" ] || fail "the bundle holds $path, which is assignment $other's"
  done
done
left_out=$(for part in $disabled; do listed "$root/release/part$part.txt"; done)
for path in $(listed "$root/release/assignment$assignment.txt"); do
  grep -qxF "$path" <<< "$left_out" && continue  # only a disabled part needs it
  [ -e "$bundle/$path" ] || fail "the bundle lacks $path (release/assignment$assignment.txt)"
done
grep -q 'dtk:[a-z]' "$bundle/handout.md" "${student_files[@]/#/$bundle/starter/}" &&
  fail "the bundle's handout.md or student files still hold release markers"
for part in $disabled; do
  grep -q "Part $part\b" "$bundle/handout.md" && fail "the bundle's handout.md still speaks of Part $part"
done
for path in $left_out; do
  [ ! -e "$bundle/$path" ] || fail "the bundle holds $path, which only a disabled part needs"
done
# The other assignments' sections: a heading only another assignment's handout has must not be
# in this one.
headings() { awk -v assignment="$1" -f "$root/scripts/select-parts.awk" "$root/handout.md" | grep '^#' | sort -u; }
ours=$(headings "$assignment")
for other in $("$root/scripts/list-assignments.sh" "$root"); do
  [ "$other" != "$assignment" ] || continue
  while IFS= read -r heading; do
    [ -z "$heading" ] || ! grep -qxF "$heading" "$bundle/handout.md" ||
      fail "the bundle's handout.md holds assignment $other's section \"$heading\""
  done < <(comm -23 <(headings "$other") <(echo "$ours"))
done
# The sections both assignments share speak of this bundle: its archive, and test programs it
# builds.
for command in $(grep -o 'tar -xzf [^ ]*' "$bundle/handout.md" | cut -d' ' -f3 | sort -u); do
  [ "$command" = "$top.tar.gz" ] || fail "the bundle's handout.md unpacks $command, not $top.tar.gz"
done
for program in $(grep -oE '(build/tests/|--target )test_[a-z_]+' "$bundle/handout.md" |
  grep -o 'test_.*' | sort -u); do
  [ -e "$bundle/tests/public/$program.cpp" ] ||
    fail "the bundle's handout.md runs $program, a test program this bundle does not build"
done
for svg in "$bundle"/figs/*.svg; do
  grep -q "figs/$(basename "$svg")" "$bundle/handout.md" || fail "figs/$(basename "$svg") ships but the handout never shows it"
done
"$root/tests/kit/release/check_figures.sh" "$bundle" > /dev/null || fail "the bundle's handout shows a figure it lacks"

step "building it with its make (-j2)"
logged build.log make -C "$bundle" JOBS=2 || { show build.log; fail "make failed in the bundle"; }

step "running its public tests on the stubs (make test): each must fail with NotImplemented"
if logged stubs.log make -C "$bundle" test; then
  show stubs.log
  fail "make test passed on the stubs; every public test should fail with NotImplemented"
fi
# ctest prints "k/n Test #k: <name> ....***Failed  0.4 sec" and then that test's output.
verdicts=$(awk '
  match($0, /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: /) {
    name = $0; sub(/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: /, "", name); sub(/ .*/, "", name)
    order[++n] = name; status[name] = ($0 ~ /\*\*\*Failed/) ? "failed" : "passed, but should fail"
    if ($0 ~ /\*\*\*(Timeout|Exception)/) status[name] = "crashed or hung"
    current = name; next
  }
  /^ *Start +[0-9]+: / { current = ""; next }
  current != "" && /NotImplemented: dtk::/ { said[current] = 1 }
  END {
    for (i = 1; i <= n; i++) {
      t = order[i]
      if (status[t] == "failed" && !said[t]) status[t] = "failed without a NotImplemented message"
      print t, status[t]
    }
  }' "$work/stubs.log")
[ -n "$verdicts" ] || { show stubs.log; fail "no test results in the output of make test"; }
echo "$verdicts" | sed 's/^/    /'
if grep -qv ' failed$' <<< "$verdicts"; then
  show stubs.log 60
  fail "on the stubs, every public test must fail with NotImplemented"
fi

step "copying the reference files in: make test must pass"
for file in "${student_files[@]}"; do
  select_parts "$root/solutions/$file" > "$bundle/starter/$file"
done
logged reference.log make -C "$bundle" test || { show reference.log 60; fail "the public tests fail on the reference"; }
grep -E 'tests passed' "$work/reference.log" | sed 's/^/    /'

# An assignment's programs, tried in its bundle: tests/kit/release/bundle_programs_assignment<N>.sh
# (if any) defines try_bundle_programs, run with the built bundle as a student would.
programs_check=$root/tests/kit/release/bundle_programs_assignment$assignment.sh
if [ -f "$programs_check" ]; then
  source "$programs_check"
  try_bundle_programs "$bundle"
fi

step "packing handin.tar with its make handin.tar"
logged handin.log make -C "$bundle" handin.tar || { show handin.log; fail "make handin.tar failed"; }
packed=$(tar -tf "$bundle/handin.tar" | sort | tr '\n' ' ')
expected=$(printf '%s\n' "${student_files[@]}" | sort | tr '\n' ' ')
[ "$packed" = "$expected" ] || fail "handin.tar holds '$packed', expected '$expected'"

step "grading handin.tar with dtk-grade: full marks expected"
[ -n "$grader" ] && [ -x "$grader" ] ||
  fail "dtk-grade is not built (grader/ defines no dtk-grade target yet?): cannot grade"
sandbox_flag=$([ "$(id -u)" = 0 ] || echo --no-sandbox)  # not root: no sandbox user
logged grade.log "$grader" "$bundle/handin.tar" --assignment "$assignment" --manifest "$manifest" \
  --results "$work/results.json" $sandbox_flag ||
  { show grade.log; fail "dtk-grade exited non-zero"; }
[ -s "$work/results.json" ] || { show grade.log; fail "dtk-grade wrote no results file"; }
# The scores dtk-grade added up (totals.json, beside results.json): every part graded gets full
# marks, and the parts the manifest disables are not graded at all.
expectations=(all=full)
for part in $disabled; do expectations+=("$part=absent"); done
if ! logged verdicts.log /usr/bin/python3 "$root/grader/tests/check_totals.py" "$work/totals.json" \
  --results "$work/results.json" "${expectations[@]}"; then
  show grade.log 60
  show verdicts.log
  fail "the reference, handed in from the bundle, must get full marks"
fi
sed 's/^/    /' "$work/verdicts.log"

step "done: the bundle builds, fails on the stubs, passes on the reference and grades full marks"
