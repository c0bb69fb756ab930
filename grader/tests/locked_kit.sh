#!/usr/bin/env bash
# locked_kit.sh DIR... -- COMMAND...: runs COMMAND with DIRs closed to other users (go-rwx),
# as an instructor grading without mount namespaces must lock the kit's checkout (docs/sandbox.md,
# The sandbox), then gives each DIR its mode back, whatever COMMAND did.
set -euo pipefail
dirs=()
while [ "$1" != "--" ]; do
  dirs+=("$1")
  shift
done
shift
modes=()
for dir in "${dirs[@]}"; do modes+=("$(stat -c %a "$dir")"); done
restore() { for i in "${!dirs[@]}"; do chmod "${modes[$i]}" "${dirs[$i]}"; done; }
trap restore EXIT
chmod go-rwx "${dirs[@]}"
"$@"
