#!/usr/bin/env bash
# Kit self-test of the handout's figures: every figs/*.svg is well-formed XML, and every figure
# handout.md references (![alt](figs/...) or <img src="figs/...">) exists. Runs before
# handout.md exists too: then only the first half applies.
#
# usage: check_figures.sh <kit source dir>
set -euo pipefail
root=$1
command -v xmllint > /dev/null ||
  { echo "FAIL: xmllint not found: install libxml2-utils (apt-get install libxml2-utils)"; exit 1; }

failures=0
shopt -s nullglob
figures=("$root"/figs/*.svg)
[ ${#figures[@]} -gt 0 ] || { echo "FAIL: no figs/*.svg at all"; exit 1; }
for svg in "${figures[@]}"; do
  if ! errors=$(xmllint --noout "$svg" 2>&1); then
    echo "FAIL: figs/$(basename "$svg") is not well-formed XML:"
    printf '%s\n' "$errors" | head -n 5 | sed 's/^/    /'
    failures=$((failures + 1))
  elif ! grep -q '<title>' "$svg"; then
    echo "FAIL: figs/$(basename "$svg") has no <title> (screen readers and browsers show it)"
    failures=$((failures + 1))
  fi
done
echo "checked ${#figures[@]} figures in figs/"

handout=$root/handout.md
if [ -f "$handout" ]; then
  # Markdown images and HTML <img> tags whose target lies under figs/.
  references=$(grep -oE '!\[[^]]*\]\(figs/[^) ]+|<img [^>]*src="figs/[^"]+' "$handout" |
    sed -E 's/.*\(//; s/.*src="//' | sort -u)
  for ref in $references; do
    if [ ! -f "$root/$ref" ]; then
      echo "FAIL: handout.md shows $ref, which does not exist"
      failures=$((failures + 1))
    fi
  done
  echo "checked $(printf '%s\n' $references | grep -c .) figures referenced by handout.md"
else
  echo "(no handout.md yet: no references to check)"
fi

[ "$failures" -eq 0 ] || { echo "FAIL: $failures figure problems"; exit 1; }
echo "ok: every figure parses and every figure the handout shows exists"
