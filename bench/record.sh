# Sourced by every benchmark, right after `set -euo pipefail`, with the benchmark's arguments:
#
#   source "$(dirname "$0")/record.sh" NAME "Title of its section" "$@"
#   ...                # everything printed from here on is kept
#   record_figures     # last line: writes it to docs/measurements.md
#
# record_figures is reached only when the benchmark succeeded; it writes what the benchmark
# printed into its section of docs/measurements.md (bench/record_measurement.py), stamped with
# when, on what machine, at what load, from which commit and with which command. That file is
# never edited by hand. DTK_BENCH_NO_RECORD=1: print only (a trial run).
record_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
record_name=$1
record_title=$2
record_command="bench/$(basename "$0")"
[ $# -le 2 ] || record_command+=$(printf ' %q' "${@:3}")
record_load=$(cut -d' ' -f1 /proc/loadavg)
# The commit measured: the checkout as the benchmark starts (it may move on while it runs).
record_commit=$(git -C "$record_root" rev-parse --short HEAD 2> /dev/null || echo "no git checkout")
[ -z "$(git -C "$record_root" status --porcelain --untracked-files=no 2> /dev/null)" ] ||
  record_commit+=" with local changes"
record_output=$(mktemp)
exec {record_stdout}>&1
exec > >(tee "$record_output")
record_tee=$!

# built_program BUILD_DIR NAME: the path of a program the build made, or (exit 2) a line saying
# to build first.   program=$(built_program "$build" gpt_train) || exit 2
built_program() {
  [ -x "$1/$2" ] || { echo "no $1/$2: build first (make, or cmake --build $1)" >&2; return 2; }
  echo "$1/$2"
}

record_figures() {
  exec >&"$record_stdout"  # ends tee's input: wait for it to write everything
  wait "$record_tee"
  if [ "${DTK_BENCH_NO_RECORD:-0}" = 1 ]; then
    echo "(not recorded: DTK_BENCH_NO_RECORD=1)" >&2
  else
    "$record_root/bench/record_measurement.py" "$record_root/docs/measurements.md" \
      "$record_name" "$record_title" "$record_command" "$record_load" "$record_commit" \
      "$record_output"
  fi
  rm -f "$record_output"
}
