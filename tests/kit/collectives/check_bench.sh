#!/usr/bin/env bash
# Kit self-test of collectives_bench (built from the reference): on 2 ranks, every collective's
# table has nccl-tests' columns for both implementations and #wrong = 0 on every row; --csv
# writes a CSV with one well-formed line per row; --svg writes well-formed SVG (xmllint); a bad
# flag gives one message and exit 2.
# usage: check_bench.sh <collectives_bench> <mpiexec> [mpirun flags...]
set -euo pipefail
bench=$1 mpiexec=$2
shift 2
mpirun_flags=("$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/dtk-bench-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
run() { "$mpiexec" "${mpirun_flags[@]}" -n 2 "$bench" "$@"; }

run --max-bytes 64K --iters 2 --collective all --csv "$work/out.csv" --svg "$work/out.svg" > "$work/table.txt" 2>&1 ||
  { cat "$work/table.txt"; fail "collectives_bench failed on the reference"; }
cat "$work/table.txt"
for collective in allreduce allgather reduce_scatter alltoall; do
  grep -q "^# $collective\$" "$work/table.txt" || fail "no table for $collective"
done
grep -Eq '^# +size +count +type +redop( +time +algbw +busbw +#wrong){2}$' "$work/table.txt" ||
  fail "the header lacks nccl-tests' columns for both implementations"
# Data rows: size count type op, then 4 columns per implementation; #wrong is columns 8 and 12.
awk '!/^#/ { rows++; if (NF != 12 || $8 != 0 || $12 != 0) { print "bad row: " $0; bad++ } }
     END { if (rows < 4 * 10 || bad) exit 1 }' "$work/table.txt" ||
  fail "a row is malformed or has #wrong != 0 (or too few rows)"

header=$(head -n 1 "$work/out.csv")
[ "$header" = "collective,impl,ranks,type,op,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong" ] ||
  fail "unexpected CSV header: $header"
awk -F, 'NR > 1 { n++; if (NF != 11 || $2 !~ /^(mine|mpi)$/ || $6 !~ /^[0-9]+$/ || $11 != 0) bad++ }
         END { if (n < 2 * 4 * 10 || bad) exit 1 }' "$work/out.csv" ||
  fail "the CSV has malformed lines or too few"
xmllint --noout "$work/out.svg" || fail "the SVG is not well-formed XML"
grep -q "bus bandwidth (GB/s)" "$work/out.svg" || fail "the SVG has no y-axis label"
[ "$(grep -c '<polyline' "$work/out.svg")" = 8 ] || fail "the SVG should draw 8 lines (4 collectives x 2)"

for bad in "--type half" "--min-bytes 1M --max-bytes 1K" "--iters 0" "--bogus 1" "--max-bytes"; do
  status=0
  # shellcheck disable=SC2086
  run $bad > "$work/bad.txt" 2>&1 || status=$?
  [ "$status" = 2 ] || { cat "$work/bad.txt"; fail "'$bad' should exit 2, exited $status"; }
  [ "$(grep -c '^collectives_bench: ' "$work/bad.txt")" = 1 ] ||
    { cat "$work/bad.txt"; fail "'$bad' should print exactly one message"; }
done
echo "ok: tables, CSV, SVG and bad flags"
