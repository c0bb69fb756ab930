#!/usr/bin/env bash
# Kit self-test of build/dtk-mpirun (cmake/dtk-mpirun.in): every run gets an Open MPI session
# directory of its own under TMPDIR, removed after it, so that mpiruns started at the same
# moment never collide creating theirs; mpirun's exit status comes through; a run that fails
# ends at once (no grace between SIGTERM and SIGKILL) unless the caller's environment says
# otherwise.
#
# usage: check_sessions.sh <dtk-mpirun> [mpirun flags...]
set -euo pipefail
mpirun=("$@")
export TMPDIR
TMPDIR=$(mktemp -d)
trap 'rm -rf "$TMPDIR"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# Three runs at once; each prints its session directory's base and checks Open MPI made its
# session directory there.
show='echo "$OMPI_MCA_orte_tmpdir_base"; ls -d "$OMPI_MCA_orte_tmpdir_base"/ompi.* > /dev/null'
for run in 1 2 3; do
  "${mpirun[@]}" -n 1 sh -c "$show" > "$TMPDIR/run$run.out" 2>&1 &
done
wait
bases=$(cat "$TMPDIR"/run*.out)
[ "$(echo "$bases" | sort -u | wc -l)" = 3 ] || fail "three runs, not three session directories: $bases"
for base in $bases; do
  case $base in "$TMPDIR"/dtk-mpirun.*) ;; *) fail "$base is not under TMPDIR ($TMPDIR)" ;; esac
  [ ! -e "$base" ] || fail "$base was left behind"
done
status=0
"${mpirun[@]}" -n 1 sh -c 'exit 3' > /dev/null 2>&1 || status=$?
[ "$status" = 3 ] || fail "mpirun's exit status 3 came out as $status"
grace=$("${mpirun[@]}" -n 1 sh -c 'echo "$OMPI_MCA_odls_base_sigkill_timeout"')
[ "$grace" = 0 ] || fail "the ranks' odls_base_sigkill_timeout is '$grace', not 0"
grace=$(OMPI_MCA_odls_base_sigkill_timeout=3 "${mpirun[@]}" -n 1 sh -c 'echo "$OMPI_MCA_odls_base_sigkill_timeout"')
[ "$grace" = 3 ] || fail "the caller's odls_base_sigkill_timeout 3 came out as '$grace'"
echo "check_sessions: three runs at once, three session directories, all removed; exit status kept;" \
  "no grace before SIGKILL unless asked"
