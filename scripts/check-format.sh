#!/usr/bin/env bash
# Fails, naming the files, when a C++ file of the kit is not formatted as .clang-format says.
# Fix with: clang-format -i FILE...   (CI runs this first: a formatting slip fails in seconds.)
#
# usage: scripts/check-format.sh   (from anywhere inside the kit)
set -euo pipefail
cd "$(dirname "$0")/.."
"$PWD/scripts/ensure-deps.sh" --grading-only clang-format
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' 2> /dev/null || find . -name '*.[ch]pp' -not -path './build*')
# One clang-format for all: each complaint reads "FILE:LINE:COL: error: ...".
mapfile -t unformatted < <(clang-format --dry-run -Werror "${files[@]}" 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "check-format: not formatted as .clang-format says (fix: clang-format -i FILE...):" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} C++ files formatted"
