# Sourced by the release tests (test_bundle.sh, test_new_assignment.sh): a scratch directory and
# the way they report their steps.
#
# scratch_dir PREFIX KEEP: $work, a new directory under $TMPDIR, removed on exit unless KEEP is 1
# (a variable the caller documents, e.g. DTK_KEEP_BUNDLE_TEST) — then kept and said so.
scratch_dir() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  if [ "${2:-0}" = 1 ]; then
    echo "(keeping $work)"
  else
    trap 'rm -rf "$work"' EXIT
    trap 'exit 143' TERM INT  # so that a CTest timeout still cleans up
  fi
  start=$SECONDS
}
# A step, with the seconds since the start.
step() { echo "[$((SECONDS - start))s] $*"; }
fail() {
  echo "FAIL: $*"
  exit 1
}
# logged LOG COMMAND...: runs a command with its output in $work/LOG.
logged() {
  local log=$1
  shift
  "$@" > "$work/$log" 2>&1
}
# show LOG [N]: the last N (40) lines of $work/LOG, indented.
show() { sed 's/^/    | /' "$work/$1" | tail -n "${2:-40}"; }
