#!/usr/bin/env bash
# Kit test: README's Gradescope recipe, run as written, gives a correct hand-in full marks.
#
#   gradescope_recipe.sh <kit source dir> <scratch dir>
#
# A scratch directory stands in for /autograder (setup.sh and run_autograder take it from
# DTK_AUTOGRADER_ROOT): the kit is copied to source/dtk (its tracked files, as `git archive`
# would, or everything but build directories outside a git checkout), setup.sh and run_autograder are cut out of README.md and run (setup.sh without its
# apt-get lines: the packages are here already), which builds the kit afresh and locks it down
# with `chmod -R go-rwx`; then the reference solutions, packed as handin.tar, must score 100.
# The build is a real one (ccache, when installed, makes it quick); it needs root, like Gradescope.
set -euo pipefail
kit=$(cd "$1" && pwd)
root=$2
fail() { echo "gradescope recipe: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "gradescope recipe: needs root (Gradescope runs as root); skipped"; exit 77; }

rm -rf "$root"
mkdir -p "$root/source/dtk" "$root/submission" "$root/results"
if git -C "$kit" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$kit" ls-files -z | (cd "$kit" && tar --null -T - -cf -) | tar -C "$root/source/dtk" -xf -
else  # not a git checkout: everything but build directories
  tar -C "$kit" --exclude='./build*' --exclude='./dist' -cf - . | tar -C "$root/source/dtk" -xf -
fi

# The two scripts, as README.md shows them: the sh block after the line naming each file.
script() {
  awk -v name="\`$1\`:" '$0 == name { found = 1; next }
    found && /^```sh$/ { inside = 1; next }
    inside && /^```$/ { exit }
    inside { print }' "$kit/README.md"
}
script setup.sh | grep -v -e '^apt-get' -e '^  ' >"$root/source/setup.sh"
script run_autograder >"$root/run_autograder"
grep -q 'chmod -R go-rwx' "$root/source/setup.sh" || fail "README's setup.sh has no chmod line"
grep -q 'dtk-grade' "$root/run_autograder" || fail "README's run_autograder does not run dtk-grade"
chmod +x "$root/source/setup.sh" "$root/run_autograder"

export DTK_AUTOGRADER_ROOT=$root
if command -v ccache >/dev/null; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
start=$(date +%s)
"$root/source/setup.sh" >"$root/setup.log" 2>&1 || { tail -30 "$root/setup.log"; fail "setup.sh failed"; }
echo "setup.sh: $(($(date +%s) - start)) s"
[ "$(stat -c %a "$root/source/dtk/solutions")" = 700 ] || fail "setup.sh did not lock the kit down"

files=$(cd "$kit/solutions" && find . -name '*.cpp' | sed 's|^\./||' | sort)
tar -cf "$root/submission/handin.tar" -C "$kit/solutions" $files
start=$(date +%s)
"$root/run_autograder" >"$root/grade.log" 2>&1 || { tail -40 "$root/grade.log"; fail "run_autograder failed"; }
echo "run_autograder: $(($(date +%s) - start)) s"
results=$root/results/results.json
[ -s "$results" ] || { tail -40 "$root/grade.log"; fail "no results.json"; }
# "score <s>", then "test <score> <max_score> <name>" per test (see results_summary.cmake).
cmake -DRESULTS="$results" -P "$kit/tests/kit/release/results_summary.cmake" >"$root/summary.log" 2>&1 ||
  { cat "$root/summary.log"; fail "results.json is not what SPEC says"; }
read -r got max < <(awk '$1 == "score" { s = $2 } $1 == "test" { m += $3 }
  END { printf "%s %s\n", s, m }' "$root/summary.log")
echo "score: $got of $max"
awk -v got="$got" -v max="$max" 'BEGIN { exit !(max > 0 && got > max - 1e-6) }' ||
  { grep -m5 -o -e 'does not compile[^"]*' -e '[^"]*Permission denied' "$results" || true
    fail "the reference got $got of $max"; }
rm -rf "$root"
