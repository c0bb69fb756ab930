#!/usr/bin/env bash
# Packs the student bundle of one assignment: OUTPUT_DIR/dtk-student.tar.gz (assignment 1, top
# directory dtk-student/) or OUTPUT_DIR/dtk-student-assignment2.tar.gz (dtk-student-assignment2/).
#
# What students get, and nothing else (never solutions/, grader/ or tests/kit/):
#   starter/                        the student tree as it is now, with this assignment's
#                                   student files only (starter/handin/assignment<N>.txt)
#   tests/harness/, tests/public/   the public tests (this assignment's) and their Catch2 main
#   handout.md, figs/               the shared sections and this assignment's, and the figures
#                                   they show
#   cmake/, make/, scripts/ensure-deps.sh  the kit's build modules, make targets, set-up
#   CMakeLists.txt, Makefile        the bundle's own top level, from release/ (its Makefile
#                                   knows the assignment: `make handin.tar` packs its files)
# What belongs to one assignment only is declared in release/assignment<N>.txt (public tests,
# programs, data) and, in handout.md, between <!-- dtk:only N --> and <!-- dtk:end -->.
#
# usage: scripts/make-release.sh [OUTPUT_DIR] [ASSIGNMENT]
#        (defaults: dist/ of the kit, 1; `make release [ASSIGNMENT=2]`)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out_dir=${1:-$root/dist}
assignment=${2:-1}

die() {
  echo "make-release: $*" >&2
  exit 1
}
[ -f "$root/starter/handin/assignment$assignment.txt" ] && [ -f "$root/release/assignment$assignment.txt" ] ||
  die "there is no assignment \"$assignment\" (each has starter/handin/assignment<N>.txt and release/assignment<N>.txt)"
bundle=dtk-student
[ "$assignment" = 1 ] || bundle=dtk-student-assignment$assignment
listed() { grep -o '^[^# ]*' "$1" | grep .; }  # a list's paths, comments dropped
mapfile -t student_files < <(listed "$root/starter/handin/assignment$assignment.txt")

# What goes in, relative to the kit's root, and where it lands in the bundle.
shipped=(starter tests/harness tests/public handout.md figs cmake make scripts/ensure-deps.sh)
for path in "${shipped[@]}" release/CMakeLists.txt release/Makefile; do
  [ -e "$root/$path" ] || die "$path is missing: the bundle needs it"
done

# The starter's student files must still be the stubs: a reference file copied into starter/
# (to try it out, say) would otherwise be released to every student.
for file in "${student_files[@]}"; do
  grep -q 'throw NotImplemented(' "$root/starter/$file" ||
    die "starter/$file throws no NotImplemented: is a solution in starter/? Restore the stub."
done

staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/$bundle/tests" "$staging/$bundle/scripts"
for path in "${shipped[@]}"; do
  cp -a "$root/$path" "$staging/$bundle/$path"
done
cp "$root/release/CMakeLists.txt" "$staging/$bundle/"
{
  echo "# The assignment this bundle is: make handin.tar packs starter/handin/assignment$assignment.txt's files."
  echo "ASSIGNMENT := $assignment"
  cat "$root/release/Makefile"
} > "$staging/$bundle/Makefile"

# The other assignments: their student files, their lists, their own tests and programs.
for list in "$root"/starter/handin/assignment*.txt; do
  other=$(basename "$list" .txt)
  other=${other#assignment}
  [ "$other" != "$assignment" ] || continue
  for file in $(listed "$list"); do rm -f "$staging/$bundle/starter/$file"; done
  for path in $(listed "$root/release/assignment$other.txt"); do rm -rf "$staging/$bundle/$path"; done
  rm "$staging/$bundle/starter/handin/assignment$other.txt"
done
find "$staging/$bundle/starter" -type d -empty -delete

# The handout: the shared sections and this assignment's. The markers are HTML comments, so the
# kit's handout.md shows every section and GitHub renders none of the markers.
awk -v keep="$assignment" '
  /^<!-- dtk:only [0-9]+ -->$/ { skipping = ($3 != keep); next }
  /^<!-- dtk:end -->$/ { skipping = 0; next }
  !skipping { print }' "$root/handout.md" > "$staging/$bundle/handout.md"
grep -q 'dtk:only\|dtk:end' "$staging/$bundle/handout.md" && die "handout.md has a marker the release cannot read"
# Only the figures that handout shows.
for svg in "$staging/$bundle"/figs/*; do
  grep -q "figs/$(basename "$svg")" "$staging/$bundle/handout.md" || rm "$svg"
done

mkdir -p "$out_dir"
archive="$(cd "$out_dir" && pwd)/$bundle.tar.gz"
# Sorted names, neutral owners and no timestamp in the gzip header: the same tree packs to
# the same bytes, so two releases can be compared with cmp.
tar -C "$staging" --sort=name --owner=0 --group=0 --numeric-owner -cf - "$bundle" |
  gzip -n -9 > "$archive"

count=$(tar -tzf "$archive" | grep -vc '/$')
size=$(du -h "$archive" | cut -f1)
echo "Wrote $archive (assignment $assignment): $count files, $size."
echo "Students: tar -xzf $bundle.tar.gz && cd $bundle && make test   (handout.md tells the rest)"
