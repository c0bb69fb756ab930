#!/usr/bin/env bash
# Writes docs/handouts/assignment<N>.md for every assignment of the kit: the handout its student
# bundle ships, selected from handout.md exactly as scripts/make-release.sh selects it (the
# shared sections and the assignment's own, less the parts its manifest disables; one code for
# both: scripts/release-selection.sh), its links to figures and docs made from docs/handouts/.
# For instructors, to read what each bundle's students read. Edit handout.md, then run this and
# commit the result.
#
# usage: scripts/render-handouts.sh [--check]
#        --check: write nothing; fail, naming each, when a rendered handout is not what
#        handout.md gives now (the kit test kit_rendered_handouts)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
check=false
[ "${1:-}" != --check ] || check=true
die() {
  echo "render-handouts: $*" >&2
  exit 1
}
source "$root/scripts/release-selection.sh"

out=$root/docs/handouts
if $check; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
stale=() written=()
for assignment in $("$root/scripts/list-assignments.sh" "$root"); do
  release_selection "$root" "$assignment" "$root/grader/manifests/assignment$assignment.json"
  file=assignment$assignment.md
  written+=("$file")
  {
    echo "<!-- What assignment $assignment's student bundle ships as handout.md, written by"
    echo "     scripts/render-handouts.sh from the kit's handout.md: edit that, never this. -->"
    select_parts "$root/handout.md" | sed 's|](figs/|](../../figs/|g; s|](docs/|](../|g'
  } > "$out/$file"
  if $check && ! cmp -s "$out/$file" "$root/docs/handouts/$file"; then
    stale+=("docs/handouts/$file")
  fi
done
if $check; then
  for rendered in "$root"/docs/handouts/*.md; do
    [ -e "$out/$(basename "$rendered")" ] || stale+=("docs/handouts/$(basename "$rendered") (no such assignment)")
  done
  [ ${#stale[@]} -eq 0 ] ||
    die "not what handout.md gives now (run scripts/render-handouts.sh and commit): ${stale[*]}"
  echo "render-handouts: docs/handouts/ is up to date"
else
  echo "render-handouts: wrote ${written[*]} in docs/handouts/"
fi
