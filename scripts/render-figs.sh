#!/usr/bin/env bash
# Renders every figs/*.svg to PNG with rsvg-convert (Debian: librsvg2-bin), to look at them as
# a reader will before committing a change to a figure.
#
# usage: scripts/render-figs.sh [OUTPUT_DIR]      (default: /tmp/dtk-figs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/dtk-figs}
command -v rsvg-convert > /dev/null ||
  { echo "render-figs: rsvg-convert not found: apt-get install librsvg2-bin" >&2; exit 1; }
mkdir -p "$out"
for svg in "$root"/figs/*.svg; do
  png=$out/$(basename "${svg%.svg}").png
  rsvg-convert --background-color=white -o "$png" "$svg"
  echo "$png"
done
