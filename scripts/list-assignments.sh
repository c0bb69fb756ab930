#!/usr/bin/env bash
# Prints the kit's assignments, one number a line, in increasing order: assignment N exists where
# starter/handin/assignment<N>.txt does (as cmake/DtkStudentTree.cmake finds them).
#
# usage: scripts/list-assignments.sh [KIT_DIR]   (default: this script's kit)
set -euo pipefail
kit=${1:-$(cd "$(dirname "$0")/.." && pwd)}
for list in "$kit"/starter/handin/assignment*.txt; do
  [ -e "$list" ] || continue
  name=$(basename "$list" .txt)
  echo "${name#assignment}"
done | sort -n
