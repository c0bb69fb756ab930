#!/usr/bin/env bash
# Kit self-test of dtk_source_check itself (a checker that passes everything is worse than none):
# on temporary copies of starter/ and solutions/, each deliberate drift below must make
# `single-source` fail with a message naming the file and the difference; and a reference file
# hidden in a copy of starter/ must make `no-solution-code` report the leak. The real trees are
# never touched.
#
# usage: source_check_self_test.sh <dtk_source_check> <kit source dir> <student file>...
set -euo pipefail
check=$1 root=$2
shift 2
files=("$@")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# drift <name> <file> <expected text in the report> <tree> <sed script>
# Copies both trees afresh, applies the sed script to <tree>/<file>, and runs the check.
drift() {
  local name=$1 file=$2 expected=$3 tree=$4 script=$5
  rm -rf "$work/starter" "$work/solutions"
  for t in starter solutions; do
    for f in "${files[@]}"; do
      mkdir -p "$(dirname "$work/$t/$f")"
      cp "$root/$t/$f" "$work/$t/$f"
    done
  done
  sed -i -e "$script" "$work/$tree/$file"
  if cmp -s "$root/$tree/$file" "$work/$tree/$file"; then
    echo "FAIL: $name: the sed script changed nothing in $tree/$file; update this test"
    failures=$((failures + 1))
    return
  fi
  local output status=0
  output=$("$check" single-source "$work/starter" "$work/solutions" "${files[@]}" 2>&1) || status=$?
  if [ "$status" -eq 1 ] && grep -qF "DRIFT: starter/$file and solutions/$file" <<< "$output" &&
    grep -qF -- "$expected" <<< "$output"; then
    echo "ok: $name is caught:"
    grep -v '^ok: ' <<< "$output" | sed 's/^/    | /'
  else
    echo "FAIL: $name: expected exit 1 and a report naming $file with '$expected'; got exit $status:"
    sed 's/^/    | /' <<< "$output"
    failures=$((failures + 1))
  fi
}

drift "a changed signature" model/func_impl.cpp "only in solutions: ParallelInfo get_info(Communicator comm," \
  solutions 's/^ParallelInfo get_info(const Communicator& comm,/ParallelInfo get_info(Communicator comm,/'
drift "an extra #include" data/data_parallel_preprocess.cpp "only in solutions: #include <vector>" \
  solutions '0,/^#include/s//#include <vector>\n#include/'
drift "a helper outside an anonymous namespace" data/data_parallel_preprocess.cpp \
  "only in solutions: int helper(int x)" solutions \
  '0,/^namespace dtk {$/s//namespace dtk {\nint helper(int x) { return x + 1; }/'
drift "an edited provided block" data/data_parallel_preprocess.cpp "the provided block" \
  solutions '$a // an edit below the marker'
drift "a starter stub that changed alone" model_training_cost_analysis.cpp \
  "only in starter: OptimalND get_optimal_N_D(float training_budget_flops)" starter \
  's/^OptimalND get_optimal_N_D(double training_budget_flops)/OptimalND get_optimal_N_D(float training_budget_flops)/'

# A leak: the reference split_train, renamed into the provided headers of a would-be bundle.
mkdir -p "$work/bundle"
cp -r "$root/starter" "$work/bundle/starter"
cp "$root/solutions/data/data_parallel_preprocess.cpp" "$work/bundle/starter/include/dtk/extra.hpp"
status=0
output=$("$check" no-solution-code "$root/starter" "$root/solutions" "$work/bundle" "${files[@]}" 2>&1) ||
  status=$?
if [ "$status" -eq 1 ] && grep -qF "LEAK: starter/include/dtk/extra.hpp" <<< "$output"; then
  echo "ok: a reference file hidden in the bundle is caught:"
  sed 's/^/    | /' <<< "$output"
else
  echo "FAIL: a reference file hidden in the bundle was not reported; got exit $status:"
  sed 's/^/    | /' <<< "$output"
  failures=$((failures + 1))
fi

if [ "$failures" -ne 0 ]; then
  echo "FAIL: $failures deliberate drifts or leaks were not reported as they should be"
  exit 1
fi
echo "ok: every deliberate drift and leak is reported"
