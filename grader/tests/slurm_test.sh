#!/usr/bin/env bash
# Kit test of scripts/grade-class-slurm.sh against a real single-node Slurm cluster that this
# test starts and stops itself (munged, slurmctld and slurmd, with their own configuration,
# key, sockets, ports and state under the work directory; nothing of the machine's own Slurm or
# munge is touched or left running). Three hand-ins graded through a job array must give the
# gradebook a local `dtk-grade --batch` gives with the same seed.
#
# usage: slurm_test.sh <kit source dir> <dtk-grade> <work dir>
set -euo pipefail
root=$1 grade=$2 work=$3
fail() {
  echo "FAIL: $*"
  exit 1
}
[ "$(id -u)" = 0 ] || { echo "slurm test: needs root (slurmd runs jobs as their user); skipped"; exit 77; }
for tool in munged slurmctld slurmd sbatch scontrol; do
  command -v "$tool" > /dev/null || { echo "slurm test: $tool is not installed (slurm-wlm, munge); skipped"; exit 77; }
done
rm -rf "$work"
mkdir -p "$work"/{munge,state,spool,log}
work=$(cd "$work" && pwd)

# --- the cluster -----------------------------------------------------------------------------
export SLURM_CONF=$work/slurm.conf
stop_cluster() {
  scontrol shutdown > /dev/null 2>&1 || true
  for pid_file in "$work/slurmctld.pid" "$work/slurmd.pid" "$work/munge/munged.pid"; do
    [ -f "$pid_file" ] && kill "$(cat "$pid_file")" 2> /dev/null || true
  done
  sleep 1
  for pid_file in "$work/slurmctld.pid" "$work/slurmd.pid" "$work/munge/munged.pid"; do
    [ -f "$pid_file" ] && kill -9 "$(cat "$pid_file")" 2> /dev/null || true
  done
}
trap stop_cluster EXIT
trap 'exit 143' TERM INT  # a CTest timeout still stops the daemons (through the EXIT trap)
chmod 700 "$work/munge"
head -c 1024 /dev/urandom > "$work/munge/munge.key"
chmod 400 "$work/munge/munge.key"
munged --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/log/munged.log" \
  --seed-file="$work/munge/munged.seed" --force
host=$(hostname -s)
# Two free ports of our own, away from a system Slurm's 6817/6818.
port_in_use() { ss -Htan "sport = :$1" | grep -q .; }
port=$((20000 + $$ % 20000))
while port_in_use "$port" || port_in_use "$((port + 1))"; do port=$((port + 2)); done
cat > "$SLURM_CONF" << EOF
ClusterName=dtk-selftest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SlurmctldPort=$port
SlurmdPort=$((port + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# sbatch --wait polls every 2 s while that is under half of MinJobAge, else after 10 s and 42 s:
# 30 s lost on a class that grades in 12 s. (A completed job is kept 4 s, long enough to be seen.)
MinJobAge=4
MpiDefault=none
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=grading Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld
slurmd
# Up to 20 s for the node to come up; sinfo gives up after 2 s when the controller is not there.
for _ in $(seq 40); do
  timeout 2 sinfo -h -o %T 2> /dev/null | grep -q idle && break
  sleep 0.5
done
timeout 2 sinfo -h -o %T 2> /dev/null | grep -q idle ||
  { tail "$work/log/slurmctld.log" "$work/log/slurmd.log"; fail "the node never became idle"; }
echo "cluster up: $(sinfo -h -o '%P %D %T %N')"

# --- the class -------------------------------------------------------------------------------
mapfile -t files < <(grep '^[^#]' "$root/starter/handin/assignment1.txt")
class=$work/class
mkdir -p "$class/bob"
tar -cf "$class/alice.tar" -C "$root/solutions" "${files[@]}"
(cd "$root/starter" && cp --parents "${files[@]}" "$class/bob/")
mkdir -p "$class/carol"
(cd "$root/solutions" && cp --parents "${files[@]}" "$class/carol/")
patch -s -p1 -d "$class/carol" < "$root/grader/tests/submissions/wrong_split_modulo.patch"

timeout 300 "$root/scripts/grade-class-slurm.sh" --grader "$grade" --out "$work/slurm-graded" \
  --seed 7 "$class" -- --time=10 > "$work/slurm.log" 2>&1 ||
  { cat "$work/slurm.log"; fail "grade-class-slurm.sh failed or took more than 300 s"; }
cat "$work/slurm.log"
ls "$work/slurm-graded/slurm/"task-*.log > /dev/null 2>&1 || fail "no task ran through Slurm"
"$grade" --batch "$class" --out "$work/local-graded" --seed 7 > "$work/local.log" 2>&1 ||
  { cat "$work/local.log"; fail "the local batch failed"; }
# Everything but the seconds each grading took.
columns() { cut -d, -f1-10,12 "$1"; }
diff <(columns "$work/local-graded/gradebook.csv") <(columns "$work/slurm-graded/gradebook.csv") ||
  fail "Slurm's gradebook differs from the local one"
columns "$work/slurm-graded/gradebook.csv" | sed 's/^/    /'
pids=$(cat "$work/slurmctld.pid" "$work/slurmd.pid" "$work/munge/munged.pid")
stop_cluster
trap - EXIT
# A daemon killed a moment ago may still be exiting (its /proc entry can vanish between two
# looks, which once failed this check): each gets 5 s to be gone or a zombie. Gone, awk cannot
# open its status: an empty state, not a failure (set -e would end the test there, silently).
daemon_state() { awk '/^State:/ { print $2 }' "/proc/$1/status" 2> /dev/null || true; }
for pid in $pids; do
  for _ in $(seq 50); do
    state=$(daemon_state "$pid")
    [ -z "$state" ] || [ "$state" = Z ] && break
    sleep 0.1
  done
  [ -z "$state" ] || [ "$state" = Z ] ||
    fail "a daemon of the test is still running: $(ps -o pid=,args= -p "$pid")"
done
echo "PASS"
