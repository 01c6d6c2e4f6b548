#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2001  # single-quoted task scripts expand in the task; sed for indenting
# selftest.sh - end-to-end check of hosts.sh, slurm.sh and rsh-agent.sh on this machine (~1.5 min).
# Exit 0: all passed; 1: something failed; 77: the harness cannot run here (reason printed).
# Leaves nothing behind: the trap tears everything down, also on failure or Ctrl-C.
set -euo pipefail
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
H=$HERE/hosts.sh
S=$HERE/slurm.sh
export JTRAIN_HOSTS_STATE=${JTRAIN_HOSTS_STATE:-/tmp/jtrain-hosts-selftest}
export JT_QUIET=1
cd /tmp

if ! why=$("$H" check); then echo "SKIP: $why"; exit 77; fi
etc_hosts=$(md5sum /etc/hosts)
trap '"$S" down >/dev/null 2>&1; "$H" down >/dev/null 2>&1' EXIT
FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
not() { ! "$@"; }

# ---- hosts
"$H" up 3
check "hostnames jt-node1..3" test "$("$H" exec 1 hostname) $("$H" exec 2 hostname) $("$H" exec 3 hostname)" = "jt-node1 jt-node2 jt-node3"
check "/etc/hosts inside a host lists the nodes" grep -q '^10.231.0.3 jt-node3$' <("$H" exec 1 cat /etc/hosts)
check "machine's /etc/hosts unchanged and not a mount" test "$(md5sum /etc/hosts)" = "$etc_hosts" -a -z "$(findmnt -n /etc/hosts || true)"
check "machine's hostname unchanged" test "$(hostname)" != jt-node1
check "exec keeps cwd" test "$(cd /usr/share && "$H" exec 2 pwd)" = /usr/share
rc=0; "$H" exec 2 sh -c 'exit 7' || rc=$?
check "exec passes the exit status" test "$rc" = 7
check "exec passes stdin" test "$(echo hi | "$H" exec 3 cat)" = hi

"$H" exec 2 python3 -c 'import socket,time
s=socket.create_server(("0.0.0.0",7777))
while True: s.accept()[0].close()' &
disown   # it is SIGKILLed by `hosts.sh kill 2` below; no "Killed" job report
sleep 0.5
conn() { "$H" exec "$1" timeout 3 bash -c "exec 3<>/dev/tcp/$2/7777" 2>/dev/null; }
check "TCP jt-node1 -> jt-node2" conn 1 jt-node2
check "TCP jt-node3 -> 10.231.0.2" conn 3 10.231.0.2
"$H" link 2 down
check "link 2 down: unreachable" not conn 1 jt-node2
"$H" link 2 up
check "link 2 up again" conn 1 jt-node2
"$H" link 2 blackhole
check "link 2 blackhole: unreachable" not conn 1 jt-node2
"$H" link 2 up
"$H" kill 2
check "kill 2: only the keeper is left on host 2" test "$(ip netns pids jt-h2 | wc -l)" = 1

# ---- shaping (tbf, both directions of each link)
for rate in 2gbit 500mbit; do
  "$H" shape "$rate"
  "$H" exec 2 "$HERE/tput.py" recv >/tmp/jt-selftest-tput.$$ &
  sleep 0.5
  "$H" exec 1 "$HERE/tput.py" send jt-node2 3 >/dev/null
  wait
  got=$(awk '{print $1}' /tmp/jt-selftest-tput.$$); rm -f /tmp/jt-selftest-tput.$$
  want=$(awk -v r="$rate" 'BEGIN{n=r+0; print (r ~ /gbit/) ? n*1000 : n}')
  # TCP payload is at most 1448/1514 = 95.6% of the shaped Ethernet frame bytes.
  check "tbf $rate: measured $got Mbit/s of $want" awk -v g="$got" -v w="$want" 'BEGIN{exit !(g > 0.85*w && g < 1.02*w)}'
done
"$H" shape off

# ---- slurm
"$S" up 2
eval "$("$S" env)"   # SLURM_CONF, OMPI_MCA_orte_tmpdir_base, ...
out=$("$H" exec 1 srun -N2 --ntasks-per-node=2 bash -c 'echo $SLURM_PROCID $(hostname) $SLURM_LOCALID $SLURM_NODEID $SLURM_STEP_NODELIST $SLURM_STEP_TASKS_PER_NODE $SLURM_STEP_NUM_TASKS' | sort)
echo "$out" | sed 's/^/    /'
check "srun -N2 --ntasks-per-node=2: 4 tasks on 2 hosts" test "$(echo "$out" | awk '{print $1, $2}' | tr '\n' ' ')" = "0 jt-node1 1 jt-node1 2 jt-node2 3 jt-node2 "

t0=$SECONDS
rc=0; timeout 30 "$H" exec 1 srun -N2 --ntasks-per-node=2 --kill-on-bad-exit=1 \
  bash -c 'if [ "$SLURM_PROCID" = 3 ]; then sleep 1; exit 1; fi; sleep 60' 2>/dev/null || rc=$?
check "--kill-on-bad-exit: rank 3 fails -> srun ends in $((SECONDS - t0))s with $rc" test "$rc" -ne 0 -a "$rc" -ne 124 -a $((SECONDS - t0)) -lt 15

outf=$JTRAIN_HOSTS_STATE/slurm/out/batch-%j.out
jid=$("$H" exec 1 sbatch --parsable -N2 --ntasks-per-node=2 --output="$outf" --wrap 'srun hostname')
for _ in $(seq 100); do
  st=$("$H" exec 1 scontrol show job "$jid" -o | grep -o 'JobState=[A-Z_]*' || true)
  case $st in *PENDING* | *RUNNING* | *CONFIGURING* | *COMPLETING* | "") sleep 0.2 ;; *) break ;; esac
done
check "sbatch job $jid $st with 4 lines of output" test "$st" = JobState=COMPLETED -a "$(wc -l <"${outf/\%j/$jid}")" = 4

out=$(timeout 60 "$H" exec 1 salloc -N2 --ntasks-per-node=2 mpirun --allow-run-as-root --bind-to none hostname 2>/dev/null | sort | uniq -c | awk '{print $1 $2}' | tr '\n' ' ')
check "salloc + mpirun: $out" test "$out" = "2jt-node1 2jt-node2 "
if [[ -e /usr/lib/x86_64-linux-gnu/libmpi.so.40 ]] || ldconfig -p | grep -q libmpi.so.40; then
  out=$(timeout 60 "$H" exec 1 salloc -N2 --ntasks-per-node=2 mpirun --allow-run-as-root --bind-to none python3 "$HERE/mpi_smoke.py" 2>/dev/null)
  echo "$out" | sed 's/^/    /'
  check "salloc + mpirun: MPI_Allreduce over both hosts" test "$(grep -c 'allreduce(sum of ranks)=6' <<<"$out")" = 4
fi
out=$(timeout 60 "$H" exec 1 mpirun --allow-run-as-root --bind-to none --mca plm_rsh_agent "$HERE/rsh-agent.sh" \
  --host jt-node1:2,jt-node2:2 hostname 2>/dev/null | sort | uniq -c | awk '{print $1 $2}' | tr '\n' ' ')
check "mpirun --mca plm_rsh_agent rsh-agent.sh (no Slurm): $out" test "$out" = "2jt-node1 2jt-node2 "

sig=$(mktemp -d /tmp/jt-selftest-sig.XXXXXX)
"$H" exec 1 srun -N2 --ntasks-per-node=2 -J sigtest bash -c \
  "trap 'echo TERM > $sig/\$SLURM_PROCID; exit 0' TERM; for i in \$(seq 300); do sleep 0.1; done" 2>/dev/null &
for _ in $(seq 50); do jid=$("$H" exec 1 squeue -h -n sigtest -t R -o %i); [[ -n $jid ]] && break; sleep 0.2; done
sleep 1
"$H" exec 1 scancel --signal=TERM "$jid.0"
rc=0; wait $! || rc=$?
check "scancel --signal=TERM: all 4 tasks trapped SIGTERM, srun rc=$rc" test "$(cat "$sig"/* 2>/dev/null | grep -c TERM)" = 4 -a "$rc" = 0
rm -rf "$sig"

t0=$SECONDS
"$H" exec 1 srun -N2 --ntasks-per-node=2 sleep 300 2>/dev/null &
sleep 2
"$H" link 2 down
"$H" kill 2 --all
rc=0; wait $! || rc=$?
check "host 2 dies (link down + kill --all): srun fails (rc=$rc) after $((SECONDS - t0))s" test "$rc" -ne 0 -a $((SECONDS - t0)) -lt 60
"$H" link 2 up
"$S" node 2 start
check "host 2 back: nodes idle again" "$S" wait-idle 30

# ---- teardown
"$S" down
"$H" down
trap - EXIT
check "no namespaces left" test -z "$(ip netns list 2>/dev/null | grep -E '^(jtsw|jt-h[0-9]+)( |$)' || true)"
check "no harness daemons left" test -z "$(ps -eo stat=,args= | awk '$1 !~ /Z/' | grep -E "$JTRAIN_HOSTS_STATE|jtrain-keeper" | grep -v grep || true)"
check "state dir removed" test ! -e "$JTRAIN_HOSTS_STATE"
check "machine's /etc/hosts unchanged" test "$(md5sum /etc/hosts)" = "$etc_hosts"

echo "$((FAILS)) failure(s)"
((FAILS == 0))
