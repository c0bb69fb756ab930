#!/usr/bin/env bash
# Kit self-test: unified_train refuses what it cannot run with one clear line from rank 0 and a
# exit status 2: unknown flags, bad values, layouts the model does not allow, a world size that
# is not mp_size x dp_size (x pp_size), and missing or corrupt data. --help exits 0.
#
# usage: check_cli_errors.sh <unified_train> <mpirun> [mpirun flags...]
set -u
program=$1
shift
mpirun=("$@")
failures=0

# expect <ranks> <exit status> <text the output must contain> -- <arguments...>
# One rank runs without mpirun (a singleton MPI process): mpirun takes about 2 s to end a job
# whose processes fail, and these checks should stay quick.
expect() {
  local ranks=$1 want=$2 text=$3
  shift 4
  local output status
  if [ "$ranks" -eq 1 ]; then
    output=$("$program" "$@" 2>&1)
  else
    output=$("${mpirun[@]}" -n "$ranks" "$program" "$@" 2>&1)
  fi
  status=$?
  local lines
  lines=$(printf '%s\n' "$output" | grep -c '^unified_train: ')
  if [ "$status" -ne "$want" ]; then
    echo "FAIL: unified_train $* (-n $ranks) exited $status, expected $want"
  elif ! printf '%s\n' "$output" | grep -qF -- "$text"; then
    echo "FAIL: unified_train $* (-n $ranks): output lacks '$text'"
  elif [ "$want" != 0 ] && [ "$lines" -ne 1 ]; then
    echo "FAIL: unified_train $* (-n $ranks): $lines 'unified_train:' lines, expected 1"
  else
    echo "ok: unified_train $* (-n $ranks): $(printf '%s\n' "$output" | grep -m1 -F -- "$text")"
    return
  fi
  printf '%s\n' "$output" | sed 's/^/    /' | head -n 20
  failures=$((failures + 1))
}

corrupt=$(mktemp -d)
trap 'rm -rf "$corrupt"' EXIT
printf '\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03not-deflate-data' \
  > "$corrupt/train-images-idx3-ubyte.gz"

expect 2 2 "but mpirun started 2" -- --mp_size 2 --dp_size 2
expect 1 2 "unknown option '--bogus'" -- --bogus
expect 1 2 "--mp_size expects a positive integer, got 'two'" -- --mp_size two
expect 1 2 "--epochs needs a value" -- --epochs
expect 1 2 "Megatron (--megatron-mp)" -- --mp_size 4 --dp_size 1
expect 1 2 "--batch_size 97 must be a multiple of --dp_size 2" -- --dp_size 2 --batch_size 97
expect 1 2 "/nonexistent-dtk-data/train-images-idx3-ubyte" -- --data /nonexistent-dtk-data
expect 1 2 "train-images-idx3-ubyte.gz: corrupt gzip data" -- --data "$corrupt"
# Assignment 2's flags (the pipeline trainer).
expect 1 2 "--pp_size 3 needs a stage per pipeline rank" -- --pp_size 3
expect 2 2 "but mpirun started 2" -- --pp_size 2 --dp_size 2 --hidden 64,64
expect 1 2 "--schedule expects 1f1b or gpipe, got 'zigzag'" -- --schedule zigzag
expect 1 2 "--optimizer expects adam or sgd, got 'lamb'" -- --optimizer lamb
expect 1 2 "--hidden expects hidden widths separated by commas" -- --hidden 256,
expect 1 2 "--hidden (each width) expects a positive integer, got 'x'" -- --hidden 256,x
expect 1 2 "--zero 4 is not a ZeRO stage" -- --zero 4
expect 1 2 "--microbatches 200 cannot cut 128 images" -- --microbatches 200
expect 1 2 "splits the layers in pairs" -- --mp_size 2 --hidden 256,256
expect 1 2 "every stage holds whole pairs of layers" -- --mp_size 2 --pp_size 2
expect 1 2 "naive model parallelism splits layer 1's 10 outputs too" -- --mp_size 4 --pp_size 1
expect 1 2 "--report /nonexistent-dtk-dir/r.json: cannot create" -- --zero 1 --report /nonexistent-dtk-dir/r.json
expect 1 0 "usage: mpirun" -- --help

[ "$failures" -eq 0 ] || { echo "FAIL: $failures case(s)"; exit 1; }
