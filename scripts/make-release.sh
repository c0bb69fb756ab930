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
#   docs/measurements.md            the kit's measured times, which the handout links to
#   cmake/, make/, scripts/ensure-deps.sh  the kit's build modules, make targets, set-up
#   CMakeLists.txt, Makefile        the bundle's own top level, from release/ (its Makefile
#                                   knows the assignment: `make handin.tar` packs its files)
#   AGENTS.md                       the rules for students' AI coding assistants, from release/
# What belongs to one assignment only is declared in release/assignment<N>.txt (public tests,
# programs, data; a path two assignments' lists name ships in both bundles) and, in handout.md,
# between <!-- dtk:only N --> and <!-- dtk:end -->.
#
# An assignment whose programs call earlier assignments' student files (assignment 4's gpt_train
# calls Parts 8 and 10-12) lists them in release/assignment<N>-reference.txt: the bundle carries
# their reference compiled, never as source, as starter/prebuilt/libdtk_reference.a with the list
# beside it (starter/CMakeLists.txt links it). The kit's build makes that archive
# (build/release/libdtk_reference_assignment<N>.a; `make release` builds it first; DTK_BUILD_DIR
# names another build directory).
#
# A part the assignment's manifest disables ("enabled": false) is not assigned: its stubs are
# cut from the student files (between // dtk:part N and // dtk:end), its reference ships as
# provided code instead (starter/<file>_provided.cpp, which starter/CMakeLists.txt then builds
# into the library: the provided model code calls it), and its public tests
# (release/part<N>.txt) and handout section (<!-- dtk:part N -->) are left out.
# scripts/select-parts.awk reads the markers (through scripts/release-selection.sh, which
# scripts/render-handouts.sh shares).
#
# usage: scripts/make-release.sh [OUTPUT_DIR] [ASSIGNMENT] [MANIFEST]
#        (defaults: dist/ of the kit, 1, grader/manifests/assignment<N>.json;
#        `make release [ASSIGNMENT=2] [MANIFEST=FILE]`)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out_dir=${1:-$root/dist}
assignment=${2:-1}
manifest=${3:-$root/grader/manifests/assignment$assignment.json}

die() {
  echo "make-release: $*" >&2
  exit 1
}
[ -f "$root/starter/handin/assignment$assignment.txt" ] && [ -f "$root/release/assignment$assignment.txt" ] ||
  die "there is no assignment \"$assignment\" (each has starter/handin/assignment<N>.txt and release/assignment<N>.txt)"
bundle=dtk-student
[ "$assignment" = 1 ] || bundle=dtk-student-assignment$assignment
source "$root/scripts/release-selection.sh"
mapfile -t student_files < <(listed "$root/starter/handin/assignment$assignment.txt")

# What goes in, relative to the kit's root, and where it lands in the bundle.
shipped=(starter tests/harness tests/public handout.md figs docs/measurements.md cmake make
  scripts/ensure-deps.sh scripts/make-gpt-figure.py scripts/figure_svg.py)
for path in "${shipped[@]}" release/CMakeLists.txt release/Makefile release/AGENTS.md; do
  [ -e "$root/$path" ] || die "$path is missing: the bundle needs it"
done
# The earlier assignments' reference, compiled, where this assignment's programs call it: built
# from the solutions as they are now.
reference_list=$root/release/assignment$assignment-reference.txt
if [ -f "$reference_list" ]; then
  reference_archive=${DTK_BUILD_DIR:-$root/build}/release/libdtk_reference_assignment$assignment.a
  [ -f "$reference_archive" ] ||
    die "$reference_archive is missing: \`make release ASSIGNMENT=$assignment\` builds it (cmake --build build --target dtk_release_references)"
  for file in $(listed "$reference_list"); do
    [ "$reference_archive" -nt "$root/solutions/$file" ] ||
      die "$reference_archive is older than solutions/$file: rebuild it (cmake --build build --target dtk_release_references)"
  done
fi

# The starter's student files must still be the stubs: a reference file copied into starter/
# (to try it out, say) would otherwise be released to every student.
for file in "${student_files[@]}"; do
  grep -q 'throw NotImplemented(' "$root/starter/$file" ||
    die "starter/$file throws no NotImplemented: is a solution in starter/? Restore the stub."
done

# The parts the manifest disables (each marked where its stubs and its section are), and
# select_parts, which cuts them: scripts/release-selection.sh.
release_selection "$root" "$assignment" "$manifest"

staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/$bundle/tests" "$staging/$bundle/scripts" "$staging/$bundle/docs"
for path in "${shipped[@]}"; do
  cp -a "$root/$path" "$staging/$bundle/$path"
done
cp "$root/release/CMakeLists.txt" "$root/release/AGENTS.md" "$staging/$bundle/"
{
  echo "# The assignment this bundle is: make handin.tar packs starter/handin/assignment$assignment.txt's files."
  echo "ASSIGNMENT := $assignment"
  cat "$root/release/Makefile"
} > "$staging/$bundle/Makefile"

# The other assignments: their student files, their lists, their own tests and programs (but
# what this assignment's list names too).
mapfile -t own_paths < <(listed "$root/release/assignment$assignment.txt")
for list in "$root"/starter/handin/assignment*.txt; do
  other=$(basename "$list" .txt)
  other=${other#assignment}
  [ "$other" != "$assignment" ] || continue
  for file in $(listed "$list"); do rm -f "$staging/$bundle/starter/$file"; done
  for path in $(listed "$root/release/assignment$other.txt"); do
    [[ " ${own_paths[*]} " == *" $path "* ]] || rm -rf "$staging/$bundle/$path"
  done
  rm "$staging/$bundle/starter/handin/assignment$other.txt"
done
find "$staging/$bundle/starter" -type d -empty -delete
if [ -f "$reference_list" ]; then
  mkdir "$staging/$bundle/starter/prebuilt"
  cp "$reference_archive" "$staging/$bundle/starter/prebuilt/libdtk_reference.a"
  cp "$reference_list" "$staging/$bundle/starter/prebuilt/reference.txt"
  touch -r "$reference_list" "$staging/$bundle/starter/prebuilt"/*  # packs to the same bytes
fi

# The student files without their markers and without the disabled parts' stubs; the disabled
# parts' reference, as provided code beside them.
for file in "${student_files[@]}"; do
  select_parts "$root/starter/$file" > "$staging/$bundle/starter/$file"
  touch -r "$root/starter/$file" "$staging/$bundle/starter/$file"  # packs to the same bytes
  marked=$(for part in $disabled; do
    if grep -qx "// dtk:part $part" "$root/starter/$file"; then echo "$part"; fi
  done)
  [ -n "$marked" ] || continue
  provided=$staging/$bundle/starter/${file%.cpp}_provided.cpp
  {
    echo "// Provided, not assigned: the reference of Part $(echo $marked | sed 's/ /, /g') from $file, which"
    echo "// your course leaves out. The provided model code calls these functions. Do not edit."
    select_parts -v mode=provided "$root/solutions/$file"
  } > "$provided"
  # Built into the student library like the file it completes (a bundle with every part
  # assigned keeps starter/CMakeLists.txt as it is).
  printf '\n# Part %s is not assigned: its reference is provided code, built into your library.\n%s\n' \
    "$marked" "target_sources(dtk_starter PRIVATE ${file%.cpp}_provided.cpp)" >> "$staging/$bundle/starter/CMakeLists.txt"
done
# The disabled parts' own public tests.
for part in $disabled; do
  [ -f "$root/release/part$part.txt" ] || continue
  for path in $(listed "$root/release/part$part.txt"); do rm -rf "$staging/$bundle/$path"; done
done

# The handout: the shared sections and this assignment's, less the disabled parts'. The markers
# are HTML comments, so the kit's handout.md shows every section and GitHub renders none of them.
select_parts "$root/handout.md" > "$staging/$bundle/handout.md"
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
echo "Wrote $archive (assignment $assignment${disabled:+, Part $disabled not assigned}): $count files, $size."
echo "Students: tar -xzf $bundle.tar.gz && cd $bundle && make test   (handout.md tells the rest)"
