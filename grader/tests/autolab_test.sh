#!/usr/bin/env bash
# Kit test: the Autolab autograders `make autolab` writes work as Autolab runs them. For each
# assignment, a fresh job directory gets autograde.tar, autograde-Makefile (as Makefile) and the
# reference handed in as handin.tar, as Tango sets it up; `make` must end with the scores JSON on
# its last line, with full marks for every part. ccache, when installed, makes the builds quick.
#
# Each assignment's autograder is built and run by one platform's test: this one takes the
# first, third, ... assignment, grader/tests/autograder_zip.sh the others. Both platforms' packages
# hold the same kit (scripts/copy-kit.sh) and differ only in their wrapper, which does not depend
# on the assignment: every assignment is graded in one package, every wrapper with two
# assignments, at half the time of every assignment in both.
#
# usage: autolab_test.sh <kit source dir> <scratch dir>
set -euo pipefail
kit=$(cd "$1" && pwd)
work=$2
fail() {
  echo "autolab: $*" >&2
  exit 1
}
unset MAKEFLAGS MFLAGS MAKELEVEL  # the job's make is not part of a make that started this test
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
# With ccache, paths inside a job's kit are taken relative to its build (CCACHE_BASEDIR: that
# kit's root, set per job below), as make/student.mk takes them in the kit: the jobs' builds hit
# the kit's own build and each other's.
if command -v ccache > /dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_NOHASHDIR=1
fi

for assignment in $("$kit/scripts/list-assignments.sh" "$kit" | awk 'NR % 2 == 1'); do
  "$kit/scripts/make-autolab.sh" "$assignment" "$work/dist" > /dev/null
  job=$work/job$assignment
  mkdir "$job"
  export CCACHE_BASEDIR=$job/dtk
  cp "$work/dist/autolab-assignment$assignment/autograde.tar" "$job/"
  cp "$work/dist/autolab-assignment$assignment/autograde-Makefile" "$job/Makefile"
  mapfile -t files < <(grep '^[^#]' "$kit/starter/handin/assignment$assignment.txt")
  tar -cf "$job/handin.tar" -C "$kit/solutions" "${files[@]}"
  start=$(date +%s)
  (cd "$job" && make) > "$job/output.txt" 2>&1 || { tail -30 "$job/output.txt"; fail "make failed for assignment $assignment"; }
  echo "assignment $assignment: make took $(($(date +%s) - start)) s"
  last=$(tail -1 "$job/output.txt")
  echo "    last line: $last"
  # Full marks: each part's score is its points in the manifest.
  python3 - "$last" "$kit/grader/manifests/assignment$assignment.json" << 'EOF' || fail "assignment $assignment: the last line is not the scores JSON with full marks"
import json, sys
scores = json.loads(sys.argv[1])["scores"]
parts = json.load(open(sys.argv[2]))["parts"]
for part in parts:
    if not part.get("enabled", True):
        continue
    got = scores["Part %d" % part["part"]]
    assert abs(got - part["points"]) < 1e-6, (part["part"], got, part["points"])
EOF
done
rm -rf "$work"
