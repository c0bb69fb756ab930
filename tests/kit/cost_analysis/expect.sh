#!/usr/bin/env bash
# Kit self-test: runs a program and checks its exit status, stdout and stderr.
#
# usage: expect.sh [--status N] [--stdout FILE | --stdout-starts TEXT]
#                  [--stderr-line ERE | --stderr-starts TEXT] -- PROGRAM [ARGS...]
#   --status N            the exit status PROGRAM must return (default 0)
#   --stdout FILE         stdout must equal FILE exactly
#   --stdout-starts TEXT  stdout's first line must start with TEXT
#   --stderr-line ERE     stderr must be exactly one line, matching the extended regex ERE
#   --stderr-starts TEXT  stderr's first line must start with TEXT
# A stream no option mentions must be empty.
set -u

status=0 stdout_file= stdout_starts= stderr_line= stderr_starts=
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --status) status=$2 ;;
    --stdout) stdout_file=$2 ;;
    --stdout-starts) stdout_starts=$2 ;;
    --stderr-line) stderr_line=$2 ;;
    --stderr-starts) stderr_starts=$2 ;;
    *) echo "expect.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
[ $# -ge 2 ] || { echo "expect.sh: missing '-- PROGRAM [ARGS...]'" >&2; exit 2; }
shift  # the "--"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$@" >"$scratch/out" 2>"$scratch/err"
actual=$?

problems=()
[ "$actual" = "$status" ] || problems+=("exit status $actual, expected $status")

starts_with() {  # file, text: does the file's first line start with text?
  local first
  first=$(head -n 1 "$1")
  [ "${first#"$2"}" != "$first" ] || [ -z "$2" ]
}

if [ -n "$stdout_file" ]; then
  cmp -s "$scratch/out" "$stdout_file" || problems+=("stdout differs from $stdout_file")
elif [ -n "$stdout_starts" ]; then
  starts_with "$scratch/out" "$stdout_starts" || problems+=("stdout does not start with '$stdout_starts'")
else
  [ ! -s "$scratch/out" ] || problems+=("stdout should be empty")
fi

if [ -n "$stderr_line" ]; then
  lines=$(wc -l <"$scratch/err")
  [ "$lines" = 1 ] || problems+=("stderr has $lines lines, expected exactly 1")
  grep -qE -- "$stderr_line" "$scratch/err" || problems+=("stderr does not match /$stderr_line/")
elif [ -n "$stderr_starts" ]; then
  starts_with "$scratch/err" "$stderr_starts" || problems+=("stderr does not start with '$stderr_starts'")
else
  [ ! -s "$scratch/err" ] || problems+=("stderr should be empty")
fi

echo "\$ $(basename "$1") ${*:2}"
echo "--- exit status: $actual"
echo "--- stdout:"; cat "$scratch/out"
echo "--- stderr:"; cat "$scratch/err"
if [ ${#problems[@]} -gt 0 ]; then
  printf 'FAIL: %s\n' "${problems[@]}"
  exit 1
fi
echo "ok"
