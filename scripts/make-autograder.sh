#!/usr/bin/env bash
# Writes Gradescope's autograder for one assignment: OUT_DIR/autograder-assignment<N>.zip,
# ready to upload ("Configure Autograder", zip file). Gradescope unpacks it into
# /autograder/source, runs setup.sh once when it builds the image, and run_autograder for each
# submission (/autograder/submission in, /autograder/results/results.json out).
#
#   autograder-assignment<N>.zip
#   ├── setup.sh          installs what is missing, builds dtk-grade, locks the kit down
#   ├── run_autograder    grades the submission: dtk-grade --assignment N
#   └── dtk/              the kit: its tracked files (no build directory, no dist/)
#
# The assignment's manifest (MANIFEST, default grader/manifests/assignment<N>.json) goes in as
# the kit's: the parts it disables ("enabled": false) are not graded.
#
# usage: scripts/make-autograder.sh [ASSIGNMENT] [OUT_DIR] [MANIFEST]   (defaults: 1, dist/ of the kit;
#        `make autograder.zip [ASSIGNMENT=2]`)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
assignment=${1:-1}
out_dir=${2:-$root/dist}
manifest=${3:-$root/grader/manifests/assignment$assignment.json}
die() {
  echo "make-autograder: $*" >&2
  exit 1
}
[ -f "$root/starter/handin/assignment$assignment.txt" ] ||
  die "there is no assignment \"$assignment\" (starter/handin/assignment<N>.txt lists each one's files)"
command -v zip > /dev/null || die "zip is not installed (apt-get install zip)"

staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
"$root/scripts/copy-kit.sh" "$staging/dtk" "$assignment" "$manifest"

cat > "$staging/setup.sh" << 'EOF'
#!/usr/bin/env bash
# Runs once, as root, when Gradescope builds the autograder's image.
set -euo pipefail
root=${DTK_AUTOGRADER_ROOT:-/autograder}  # the kit's own test of this zip sets another root
cd "$root/source/dtk"
scripts/ensure-deps.sh --grading-only  # installs only what is missing
cmake -S . -B build -DDTK_BUILD_TESTS=OFF
cmake --build build -j2 --target dtk-grade
# The reference solutions, the prebuilt objects and the expected outputs live here: the
# sandbox user must not read them (dtk-grade copies what a submission needs).
chmod -R go-rwx "$root/source"
EOF

cat > "$staging/run_autograder" << EOF
#!/usr/bin/env bash
# Runs for every submission: handin.tar (or the student files) in /autograder/submission.
root=\${DTK_AUTOGRADER_ROOT:-/autograder}
exec "\$root/source/dtk/build/dtk-grade" "\$root/submission" --assignment $assignment \\
  --results "\$root/results/results.json"
EOF
chmod +x "$staging/setup.sh" "$staging/run_autograder"

mkdir -p "$out_dir"
zip_file="$(cd "$out_dir" && pwd)/autograder-assignment$assignment.zip"
rm -f "$zip_file"
(cd "$staging" && zip -qr -X "$zip_file" setup.sh run_autograder dtk)
echo "Wrote $zip_file ($(du -h "$zip_file" | cut -f1)): upload it as the autograder of assignment $assignment."
