#!/usr/bin/env bash
# Copies the kit as it is shipped to a grading service into DEST/: its tracked files (as `git
# archive` would, but with the working tree's contents), or, outside a git checkout, everything
# but build directories and dist/. Used by make-autograder.sh and make-autolab.sh. With a
# MANIFEST, it becomes ASSIGNMENT's manifest in the copy (grader/manifests/assignment<N>.json):
# the parts it disables are not graded.
#
# usage: scripts/copy-kit.sh DEST [ASSIGNMENT MANIFEST]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$1 assignment=${2:-} manifest=${3:-}
if [ -n "$manifest" ]; then
  disabled=$(cmake -DMANIFEST="$manifest" -DASSIGNMENT="$assignment" -P "$root/scripts/disabled-parts.cmake")
  if [[ $disabled == error:* ]]; then
    echo "copy-kit: ${disabled#error: }" >&2
    exit 1
  fi
fi
mkdir -p "$dest"
if git -C "$root" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  git -C "$root" ls-files -z | (cd "$root" && tar --null -T - -cf -) | tar -C "$dest" -xf -
else
  tar -C "$root" --exclude='./build*' --exclude='./dist' -cf - . | tar -C "$dest" -xf -
fi
[ -z "$manifest" ] || cp "$manifest" "$dest/grader/manifests/assignment$assignment.json"
