#!/bin/sh
# Converts a grader self-test submission from the old format (a directory of whole student files
# in grader/tests/submissions/NAME/) to a patch against the reference (NAME.patch, a unified diff
# against solutions/ with paths relative to the student tree), then removes the directory.
#
#   scripts/overlay-to-patch.sh NAME      (from the kit's root)
#
# The diff is against today's solutions/: if the directory was copied from an older reference,
# check that the patch holds only the intended change (`git diff --stat` shows its size).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 NAME (a directory in grader/tests/submissions/)" >&2; exit 2; }
name=$1
dir=grader/tests/submissions/$name
patch=grader/tests/submissions/$name.patch
[ -d "$dir" ] || { echo "$0: no directory $dir (run from the kit's root)" >&2; exit 1; }
[ ! -e "$patch" ] || { echo "$0: $patch exists already" >&2; exit 1; }
(cd "$dir" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) | while read -r file; do
  [ -f "solutions/$file" ] || { echo "$0: solutions/$file does not exist" >&2; exit 1; }
  # diff exits 1 when the files differ: that is the point.
  diff -u --label "a/$file" --label "b/$file" "solutions/$file" "$dir/$file" || [ $? -eq 1 ]
done >"$patch"
rm -r "$dir"
echo "Wrote $patch ($(grep -c '^[-+][^-+]' "$patch") changed lines) and removed $dir/."
