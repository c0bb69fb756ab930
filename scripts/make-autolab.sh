#!/usr/bin/env bash
# Writes Autolab's autograder for one assignment: OUT_DIR/autolab-assignment<N>/autograde.tar and
# autograde-Makefile, the two files an Autolab assessment's autograder takes. For each hand-in,
# Autolab (Tango) copies them and the student's handin.tar into a fresh job directory, renames
# autograde-Makefile to Makefile and runs `make`; the last line of output is the scores JSON.
#
#   autograde.tar        dtk/: the kit's tracked files (no build directory, no dist/)
#   autograde-Makefile   unpacks it, builds dtk-grade, grades handin.tar with --assignment N
#
# The assignment's manifest (MANIFEST, default grader/manifests/assignment<N>.json) goes in as
# the kit's: the parts it disables ("enabled": false) are not graded.
#
# usage: scripts/make-autolab.sh [ASSIGNMENT] [OUT_DIR] [MANIFEST]   (defaults: 1, dist/ of the kit;
#        `make autolab [ASSIGNMENT=2]`)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
assignment=${1:-1}
out_dir=${2:-$root/dist}
manifest=${3:-$root/grader/manifests/assignment$assignment.json}
die() {
  echo "make-autolab: $*" >&2
  exit 1
}
[ -f "$root/starter/handin/assignment$assignment.txt" ] ||
  die "there is no assignment \"$assignment\" (starter/handin/assignment<N>.txt lists each one's files)"

target=$out_dir/autolab-assignment$assignment
rm -rf "$target"
mkdir -p "$target"
target=$(cd "$target" && pwd)
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
"$root/scripts/copy-kit.sh" "$staging/dtk" "$assignment" "$manifest"
tar -C "$staging" --sort=name --owner=0 --group=0 --numeric-owner -cf "$target/autograde.tar" dtk

cat > "$target/autograde-Makefile" << EOF
# Autolab's autograder of dtk's assignment $assignment (written by scripts/make-autolab.sh). Tango
# copies this file as Makefile, autograde.tar and the student's handin.tar into a job directory
# and runs make: the kit is unpacked and dtk-grade built (its output goes to build.log, shown
# only if the build fails), then handin.tar is graded. The last line printed is the scores JSON
# Autolab reads. As root dtk-grade runs the submission as its sandbox user; otherwise (Tango's
# usual unprivileged user, in a VM of its own per job) with --no-sandbox.
all:
	@tar -xf autograde.tar
	@(cd dtk && scripts/ensure-deps.sh --grading-only && \\
	  cmake -S . -B build -DDTK_BUILD_TESTS=OFF && \\
	  cmake --build build -j2 --target dtk-grade) > build.log 2>&1 || \\
	  { tail -40 build.log; echo "dtk: the grader could not be built (above)"; exit 1; }
	@dtk/build/dtk-grade handin.tar --assignment $assignment --results results.json --autolab \\
	  \$\$([ "\$\$(id -u)" = 0 ] || echo --no-sandbox)
EOF
echo "Wrote $target/autograde.tar ($(du -h "$target/autograde.tar" | cut -f1)) and autograde-Makefile: upload both as assignment $assignment's autograder."
