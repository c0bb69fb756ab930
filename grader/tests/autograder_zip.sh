#!/usr/bin/env bash
# Kit test: the autograder `make autograder.zip` writes works as uploaded to Gradescope.
#
#   autograder_zip.sh <kit source dir> <scratch dir>
#
# A scratch directory stands in for /autograder (setup.sh and run_autograder take it from
# DTK_AUTOGRADER_ROOT). For each assignment: the zip is unpacked into source/ and
# run_autograder copied next to it, as Gradescope does; setup.sh runs with the packages already
# present (it installs only what is missing), builds dtk-grade and locks the kit down with
# `chmod -R go-rwx`; then the reference, handed in as handin.tar, must get full marks.
# The second assignment's setup reuses the first's build directory (a real build, once). Needs
# root, like Gradescope; ccache, when installed, makes the build quick.
#
# The assignments are shared with grader/tests/autolab_test.sh (why: there): this test takes the
# second, fourth, ... assignment, or the only one of a kit that has one.
set -euo pipefail
kit=$(cd "$1" && pwd)
root=$2
fail() {
  echo "autograder.zip: $*" >&2
  exit 1
}
[ "$(id -u)" = 0 ] || {
  echo "autograder.zip: needs root (Gradescope runs as root); skipped"
  exit 77
}
rm -rf "$root"
mkdir -p "$root"
root=$(cd "$root" && pwd)
export DTK_AUTOGRADER_ROOT=$root
# With ccache, paths inside the unpacked kit are taken relative to its build (CCACHE_BASEDIR: the
# kit's root), as make/student.mk takes them in the kit: setup.sh's build hits the kit's own.
if command -v ccache > /dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$root/source/dtk CCACHE_NOHASHDIR=1
fi

for assignment in $("$kit/scripts/list-assignments.sh" "$kit" | awk 'NR % 2 == 0 {print} END {if (NR == 1) print}'); do
  "$kit/scripts/make-autograder.sh" "$assignment" "$root/dist" > /dev/null
  zip_file=$root/dist/autograder-assignment$assignment.zip
  mkdir -p "$root/source" "$root/submission" "$root/results"
  chmod -R u+w "$root/source"
  unzip -qo "$zip_file" -d "$root/source"
  cp "$root/source/run_autograder" "$root/run_autograder"

  start=$(date +%s)
  "$root/source/setup.sh" > "$root/setup.log" 2>&1 || { tail -30 "$root/setup.log"; fail "setup.sh failed"; }
  echo "assignment $assignment: setup.sh $(($(date +%s) - start)) s"
  [ "$(stat -c %a "$root/source/dtk/solutions")" = 700 ] || fail "setup.sh did not lock the kit down"

  mapfile -t files < <(grep '^[^#]' "$kit/starter/handin/assignment$assignment.txt")
  rm -f "$root/submission"/* "$root/results"/*
  tar -cf "$root/submission/handin.tar" -C "$kit/solutions" "${files[@]}"
  "$root/run_autograder" > "$root/grade.log" 2>&1 || { tail -40 "$root/grade.log"; fail "run_autograder failed"; }
  results=$root/results/results.json
  [ -s "$results" ] || { tail -40 "$root/grade.log"; fail "no results.json"; }
  # Every part gets full marks, as dtk-grade added them up (totals.json, beside results.json).
  /usr/bin/python3 "$kit/grader/tests/check_totals.py" "$root/results/totals.json" \
    --results "$results" all=full > "$root/verdicts.log" 2>&1 || {
    cat "$root/verdicts.log"
    grep -m5 -o -e 'does not compile[^"]*' -e '[^"]*Permission denied' "$results" || true
    fail "the reference did not get full marks for assignment $assignment"
  }
  sed "s/^/assignment $assignment: /" "$root/verdicts.log"
done
rm -rf "$root"
