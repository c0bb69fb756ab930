#!/usr/bin/env bash
# Packs the student bundle: OUTPUT_DIR/dtk-student.tar.gz, one top directory dtk-student/.
#
# What students get, and nothing else (never solutions/, grader/ or tests/kit/):
#   starter/                        the student tree, as it is now
#   tests/harness/, tests/public/   the public tests and their MPI-aware Catch2 main
#   handout.md, figs/               the assignment text and its figures
#   cmake/, make/, scripts/ensure-deps.sh  the kit's build modules, make targets, set-up
#   CMakeLists.txt, Makefile        the bundle's own top level, from release/
#
# usage: scripts/make-release.sh [OUTPUT_DIR]      (default: dist/ of the kit; `make release`)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out_dir=${1:-$root/dist}
bundle=dtk-student
mapfile -t student_files < <(grep '^[^#]' "$root/starter/handin/assignment1.txt")

die() {
  echo "make-release: $*" >&2
  exit 1
}

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
cp "$root/release/CMakeLists.txt" "$root/release/Makefile" "$staging/$bundle/"
# Assignment 2's Parts 7 to 9 (their student files, public tests and program) are not
# assignment 1's: the bundle's build leaves out what is absent.
rm -r "$staging/$bundle/starter/collectives" "$staging/$bundle/starter/programs/collectives_bench.cpp" \
  "$staging/$bundle/tests/public/test_collectives.cpp" \
  "$staging/$bundle/starter/pipeline" "$staging/$bundle/tests/public/test_pipeline.cpp" \
  "$staging/$bundle/starter/zero" "$staging/$bundle/tests/public/test_zero.cpp"

mkdir -p "$out_dir"
archive="$(cd "$out_dir" && pwd)/$bundle.tar.gz"
# Sorted names, neutral owners and no timestamp in the gzip header: the same tree packs to
# the same bytes, so two releases can be compared with cmp.
tar -C "$staging" --sort=name --owner=0 --group=0 --numeric-owner -cf - "$bundle" |
  gzip -n -9 > "$archive"

count=$(tar -tzf "$archive" | grep -vc '/$')
size=$(du -h "$archive" | cut -f1)
echo "Wrote $archive: $count files, $size."
echo "Students: tar -xzf $bundle.tar.gz && cd $bundle && make test   (handout.md tells the rest)"
