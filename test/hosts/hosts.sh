#!/usr/bin/env bash
# shellcheck disable=SC2016  # single-quoted scripts for sh -c / bash -c are expanded there, on purpose
# hosts.sh - emulate N hosts on one Linux machine with network namespaces.
#
# Topology (everything lives in namespaces this script creates; the machine's own
# network namespace, interfaces, routes and /etc/hosts are never touched):
#
#     netns jtsw:   bridge br0 --+-- sw1 ==veth== eth0 (10.231.0.1/24)  netns jt-h1, hostname jt-node1
#                                +-- sw2 ==veth== eth0 (10.231.0.2/24)  netns jt-h2, hostname jt-node2
#                                +-- ...
#
# A "host" K is the triple (network ns jt-hK, a UTS ns with hostname jt-nodeK, a mount ns in which
# a harness-owned hosts file is bind-mounted over /etc/hosts). The UTS and mount namespaces only exist
# while a process is in them, so each host has a long-lived "keeper" process (a `sleep infinity`
# renamed jtrain-keeper-hK) that holds them; `exec K` enters the keeper's namespaces with nsenter.
# The PID namespace and the file system are shared by all hosts (like a cluster with a shared FS),
# so a process on any host can be seen (and signalled) from the machine.
#
# Usage: hosts.sh check | up N [RATE] | exec K CMD... | kill K [SIGNAL] [--all] | link K down|up|blackhole
#                 | shape RATE|off | status | env | down | addr K | n
# See usage() below and README.md next to this file.
set -euo pipefail

STATE=${JTRAIN_HOSTS_STATE:-/tmp/jtrain-hosts}
SW_NS=jtsw              # the switch namespace
HOST_NS=jt-h            # host K's network namespace is jt-hK
NODE=jt-node            # host K's hostname is jt-nodeK
SUBNET=10.231.0         # host K is $SUBNET.K/24; nothing outside our namespaces ever uses these
MAX_HOSTS=250
NETNS_DIR=/run/netns    # where `ip netns` keeps its handles (/var/run is a symlink to /run)
# tbf tuning; see tbf_params() for why these values.
TBF_BURST_US=${JT_TBF_BURST_US:-1000}       # burst = RATE x this many microseconds ...
TBF_MIN_BURST=${JT_TBF_MIN_BURST:-262144}   # ... but never less than this many bytes
TBF_LATENCY=${JT_TBF_LATENCY:-5ms}          # max time a packet may wait in the tbf queue
WAIT_S=${JT_HOSTS_TIMEOUT:-20}              # timeout for every wait in this script

SELF=$(readlink -f "${BASH_SOURCE[0]}")

usage() {
  cat <<EOF
usage: hosts.sh COMMAND [ARGS]
  check                   exit 0 if the harness can run here, else print why and exit 1
  up N [RATE]             create hosts jt-node1..jt-nodeN (10.231.0.1..N); with RATE (tc syntax, e.g.
                          2gbit, 500mbit) shape both directions of every host link with tbf.
                          Tears down leftovers of an earlier run first.
  exec K CMD [ARGS...]    run CMD on host K (its net, uts and mount namespaces), same cwd, env, stdio;
                          exit status passed through
  kill K [SIGNAL] [--all] send SIGNAL (default KILL) to every process on host K except its keeper
                          and, without --all, except Slurm daemons (slurmd, slurmstepd, slurmctld):
                            kill K          the job's processes on K die; slurmstepd reports the failure
                            kill K --all    the host dies: slurmd/slurmstepd too (combine with
                                            'link K down' for a host that also vanishes from the net)
  link K down|up|blackhole
                          down: both ends of K's link administratively down (K's own sends fail fast,
                                others see timeouts); blackhole: K's cable is unplugged from the switch
                                but K's interface stays up (packets silently lost both ways);
                          up: undo either
  shape RATE|off          change (or remove) the tbf shaping of every link of running hosts
  status                  what is up
  env                     print exports for callers: eval "\$(hosts.sh env)"
  addr K                  print host K's address;   n: print the number of hosts
  cpus K                  print host K's CPUs under JT_HOST_CPUS=split (taskset syntax)
  down                    kill every process on the hosts and in the switch, delete the namespaces,
                          remove the state dir ($STATE); idempotent, safe after a partial up or crash
environment: JTRAIN_HOSTS_STATE (state dir, default /tmp/jtrain-hosts), JT_HOSTS_TIMEOUT (s, default 20),
             JT_HOST_CPUS=split (exec pins host K's commands to its own share of the CPUs, as separate machines
             would have; default shared: every host may use every CPU),
             JT_HOST_CPU_LIST=LIST (exec pins this command to these CPUs, taskset syntax; e.g. a spare host
             on the CPUs of the host it is to replace),
             JT_QUIET=1 (no progress messages on stderr),
             JT_TBF_BURST_US, JT_TBF_MIN_BURST, JT_TBF_LATENCY (tbf tuning)
EOF
}

die() { echo "hosts.sh: error: $*" >&2; exit 1; }
log() { [[ -n ${JT_QUIET:-} ]] || echo "hosts.sh: $*" >&2; }

# ---------------------------------------------------------------------------------------------------
# helpers

# Serialise up/down/shape between concurrent callers. The lock is on this script file itself so
# that no lock file is left behind. fd 9 must not leak into long-lived children (keepers, daemons):
# they would hold the lock forever, so every background start below closes it (9<&-).
lock() {
  exec 9<"$SELF"
  flock -w "$WAIT_S" 9 || die "another hosts.sh up/down is running (lock on $SELF held for ${WAIT_S}s)"
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

num_hosts() { cat "$STATE/n" 2>/dev/null || echo 0; }

# host_arg K: validate K against the running harness.
host_arg() {
  local k=${1:-}
  is_uint "$k" || die "host number expected, got '${k}'"
  local n; n=$(num_hosts)
  ((n > 0)) || die "hosts are not up (no $STATE/n); run: hosts.sh up N"
  ((k >= 1 && k <= n)) || die "host $k out of range 1..$n"
}

# keeper_pid K: pid of host K's keeper, checked to still be our keeper (guards against pid reuse).
keeper_pid() {
  local k=$1 pid
  pid=$(cat "$STATE/keeper/$k.pid" 2>/dev/null) || die "no keeper pid file for host $k (is the harness up?)"
  is_keeper "$pid" "$k" || die "keeper of host $k (pid $pid) is gone; run: hosts.sh down; hosts.sh up N"
  echo "$pid"
}

# is_keeper PID K: /proc/PID/cmdline starts with our marker argv[0].
is_keeper() {
  local argv0
  argv0=$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | head -n1) || return 1
  [[ $argv0 == "jtrain-keeper-h$2" ]]
}

# The pids of this shell and its ancestors: never signal the caller, even if it runs on a host
# (e.g. `hosts.sh exec 1 hosts.sh kill 1`).
ancestors() {
  local p=$$
  while [[ -n $p && $p != 0 ]]; do
    echo "$p"
    p=$(awk '/^PPid:/{print $2}' "/proc/$p/status" 2>/dev/null) || break
  done
}

# ns_pids NS: pids whose network namespace is NS (empty if NS does not exist).
ns_pids() { ip netns pids "$1" 2>/dev/null || true; }

our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^(${SW_NS}|${HOST_NS}[0-9]+)\$" || true; }

# kill_all_in_ns NS...: SIGKILL every process in the namespaces until none is left (new ones may be
# forked while we kill, hence the loop), with a timeout.
kill_all_in_ns() {
  local deadline=$((SECONDS + WAIT_S)) pids ns me
  me=" $(ancestors | tr '\n' ' ') "
  while :; do
    pids=""
    for ns in "$@"; do pids+=" $(ns_pids "$ns")"; done
    local left=()
    for p in $pids; do [[ $me == *" $p "* ]] || left+=("$p"); done
    ((${#left[@]} == 0)) && return 0
    kill -KILL "${left[@]}" 2>/dev/null || true
    ((SECONDS < deadline)) || { echo "hosts.sh: warning: processes survive SIGKILL in $*: ${left[*]}" >&2; return 1; }
    sleep 0.1
  done
}

# Processes that belong to the harness but are no longer reachable through a namespace handle (a
# crash in the middle of an earlier down, a handle deleted by hand): those still in one of our
# namespaces (their ids are recorded in $STATE/nsids by up), keepers (argv0 jtrain-keeper-h*), and
# anything whose command line mentions the state dir (slurmd -f $STATE/slurm/slurm.conf, ...).
stray_pids() {
  local me ids p cmd net uts
  me=" $(ancestors | tr '\n' ' ') "
  ids=" $(tr '\n' ' ' <"$STATE/nsids" 2>/dev/null) "
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $me == *" $p "* ]] && continue
    cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
    net=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
    uts=$(readlink "/proc/$p/ns/uts" 2>/dev/null) || continue
    if [[ $cmd == jtrain-keeper-h* || $cmd == *"$STATE/"* || $ids == *" $net "* || $ids == *" $uts "* ]]; then
      echo "$p"
    fi
  done
}

# no_ipv6 NS IFACE...: disable IPv6 on the interfaces ("default": those created later). Without it
# every interface gets an fe80:: link-local address and sends router/neighbour solicitations; we want
# the hosts to have exactly one address each, 10.231.0.K (lo keeps ::1). No-op without IPv6.
no_ipv6() {
  nsenter --net="$NETNS_DIR/$1" sh -c 'for i; do f=/proc/sys/net/ipv6/conf/$i/disable_ipv6
    if [ -w "$f" ]; then echo 1 > "$f"; fi; done' no_ipv6 "${@:2}"
}

# `ip netns add` turns /run/netns into a shared bind mount of itself; once the last namespace handle
# is gone, undo that so the machine is left exactly as found (ip recreates it on demand).
cleanup_netns_dir() {
  [[ -d $NETNS_DIR ]] || return 0
  [[ -z $(ls -A "$NETNS_DIR" 2>/dev/null) ]] || return 0
  local _
  for _ in 1 2 3 4; do   # it may be mounted more than once over itself
    if mountpoint -q "$NETNS_DIR"; then umount "$NETNS_DIR" 2>/dev/null || break; else break; fi
  done
  rmdir "$NETNS_DIR" 2>/dev/null || true
}

# tbf_params RATE -> "rate R burst B latency L".
# tbf sends a packet only when the bucket holds enough tokens for all of it, and its watchdog timer
# refills the bucket with a granularity of tens of microseconds (hrtimer + softirq latency, worse on
# a busy 2-core VM). The bucket (burst) must therefore hold several timer periods' worth of bytes or
# the link idles between refills and never reaches RATE; it must also exceed a whole GSO super-packet
# (up to 64 KiB on veth), else tbf has to segment every packet in software. Measured here (TCP goodput
# with tput.py, 2gbit): burst 16 KiB -> 0.88 Gbit/s, 64 KiB -> 1.58, 128 KiB -> 1.85, 256 KiB -> 1.89;
# 10gbit needs more (128 KiB -> 7.2 Gbit/s, 1.25 MB -> 9.0). Hence burst = RATE x 1 ms, at least
# 256 KiB, which gives 94-96% of RATE as TCP goodput from 100mbit to 10gbit, i.e. the full rate: TCP
# payload is at most 1448 of every 1514 bytes tbf counts (95.6%). latency bounds the queue
# (limit = RATE x latency + burst) so that TCP sees back-pressure rather than a growing buffer.
tbf_params() {
  local rate=$1 num unit bps burst
  [[ ${rate,,} =~ ^([0-9]+(\.[0-9]+)?)([kmgt]?)(bit|bps)?$ ]] || die "bad RATE '$rate' (examples: 2gbit, 500mbit, 100mbit)"
  num=${BASH_REMATCH[1]} unit=${BASH_REMATCH[3]}
  # tc: "bit" (or a bare number) is bits/s, "bps" is bytes/s; k/m/g/t are powers of 1000.
  bps=$(awk -v n="$num" -v u="$unit" -v b="${BASH_REMATCH[4]}" 'BEGIN{
      m = (u=="k")?1e3:(u=="m")?1e6:(u=="g")?1e9:(u=="t")?1e12:1;
      bytes = (b=="bps") ? n*m : n*m/8; printf "%d", bytes }')
  ((bps > 0)) || die "RATE '$rate' is zero"
  burst=$(awk -v b="$bps" -v us="$TBF_BURST_US" -v min="$TBF_MIN_BURST" 'BEGIN{x=b*us/1e6; if (x<min) x=min; printf "%d", x}')
  echo "rate $rate burst $burst latency $TBF_LATENCY"
}

# shape_link K RATE|off: tbf on both directions of host K's link: egress of eth0 in jt-hK (K -> switch)
# and egress of swK in the switch (switch -> K).
shape_link() {
  local k=$1 rate=$2
  if [[ $rate == off ]]; then
    tc -n "$HOST_NS$k" qdisc del dev eth0 root 2>/dev/null || true
    tc -n "$SW_NS" qdisc del dev "sw$k" root 2>/dev/null || true
    return 0
  fi
  local params; params=$(tbf_params "$rate")
  # shellcheck disable=SC2086  # params is a list of words on purpose
  tc -n "$HOST_NS$k" qdisc replace dev eth0 root tbf $params
  # shellcheck disable=SC2086
  tc -n "$SW_NS" qdisc replace dev "sw$k" root tbf $params
}

# ---------------------------------------------------------------------------------------------------
# commands

cmd_check() {
  local missing=() c
  for c in ip tc unshare nsenter mount umount mountpoint flock setsid awk; do
    command -v "$c" >/dev/null 2>&1 || missing+=("$c")
  done
  ((${#missing[@]} == 0)) || { echo "missing commands: ${missing[*]} (packages: iproute2, util-linux)"; return 1; }
  # CapEff bits: CAP_NET_ADMIN=12 (netns, links, tc), CAP_SYS_ADMIN=21 (setns, unshare, mount).
  local cap
  cap=$(awk '/^CapEff:/{print $2}' /proc/self/status)
  if (((0x$cap >> 12 & 1) == 0 || (0x$cap >> 21 & 1) == 0)); then
    echo "needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); running as uid $(id -u) with CapEff=$cap"
    return 1
  fi
  # Capabilities are not enough inside some containers (seccomp, read-only /run, no bridge or tbf
  # module): try everything `up` does in a throwaway namespace and report the first failure.
  local probe="jtchk$$" rc=0
  probe_ns "$probe" || rc=1
  ip netns delete "$probe" 2>/dev/null || true
  cleanup_netns_dir
  ((rc == 0)) && echo "ok"
  return "$rc"
}

# probe_ns NAME: the body of `check`; prints the reason and returns 1 on the first failure.
probe_ns() {
  local probe=$1 err
  if ! err=$(ip netns add "$probe" 2>&1); then echo "cannot create a network namespace: $err"; return 1; fi
  if ! err=$(ip -n "$probe" link add jtchkbr type bridge 2>&1); then echo "no Linux bridge support: $err"; return 1; fi
  if ! err=$(ip -n "$probe" link add jtchka type veth peer name jtchkb 2>&1); then echo "no veth support: $err"; return 1; fi
  ip -n "$probe" link set jtchka up 2>/dev/null || true
  if ! err=$(tc -n "$probe" qdisc add dev jtchka root tbf rate 1gbit burst 256k latency 5ms 2>&1); then
    echo "tc tbf qdisc not available: $err"; return 1
  fi
  if ! err=$(nsenter --net="$NETNS_DIR/$probe" unshare --uts --mount --propagation slave \
      sh -c 'echo jtchk > /proc/sys/kernel/hostname && mount --bind /dev/null /proc/version' 2>&1); then
    echo "cannot create UTS/mount namespaces or bind-mount in them: $err"; return 1
  fi
}

cmd_up() {
  local n=${1:-} rate=${2:-}
  if ! is_uint "$n" || ((n < 1 || n > MAX_HOSTS)); then die "usage: hosts.sh up N [RATE]  (1 <= N <= $MAX_HOSTS)"; fi
  [[ -z $rate ]] || tbf_params "$rate" >/dev/null
  local why; why=$(cmd_check) || die "harness cannot run here: $why"
  lock
  # Start from a clean slate: whatever an earlier (crashed) run left behind goes first.
  if [[ -e $STATE || -n $(our_namespaces) ]]; then log "tearing down leftovers of an earlier run"; do_down; fi
  # Any failure from here on (set -e, die) must not leave half a cluster behind.
  trap 'echo "hosts.sh: up failed; tearing down" >&2; do_down' EXIT

  mkdir -p "$STATE/keeper" "$STATE/tmp"
  chmod 1777 "$STATE/tmp"               # scratch for tools run on the hosts, see cmd_env
  touch "$STATE/.jtrain-hosts"            # marker: do_down only removes a directory that has it
  # The hosts file every host sees as /etc/hosts (bind-mounted in the host's mount ns only). A host's
  # own name must resolve to its 10.231.0.K address (not 127.0.1.1): Slurm and Open MPI publish it.
  {
    echo "# generated by $SELF for the emulated hosts"
    echo "127.0.0.1 localhost"
    echo "::1 localhost ip6-localhost ip6-loopback"
    local k
    for ((k = 1; k <= n; k++)); do echo "$SUBNET.$k $NODE$k"; done
  } >"$STATE/hosts"
  # An empty resolv.conf: glibc then asks 127.0.0.1:53 inside the host's netns, which fails at once,
  # so unknown names fail fast instead of waiting for a DNS server the namespaces cannot reach.
  : >"$STATE/resolv.conf"

  ip netns add "$SW_NS"
  nsenter --net="$NETNS_DIR/$SW_NS" readlink /proc/self/ns/net >>"$STATE/nsids"
  no_ipv6 "$SW_NS" default
  ip -n "$SW_NS" link set lo up
  ip -n "$SW_NS" link add br0 type bridge      # STP is off by default: ports forward at once
  ip -n "$SW_NS" link set br0 up

  for ((k = 1; k <= n; k++)); do
    ip netns add "$HOST_NS$k"
    nsenter --net="$NETNS_DIR/$HOST_NS$k" readlink /proc/self/ns/net >>"$STATE/nsids"
    no_ipv6 "$HOST_NS$k" default
    ip -n "$HOST_NS$k" link set lo up
    # Create the pair inside the switch namespace with its peer directly in the host namespace, so
    # that not even transiently does an interface appear in the machine's own namespace.
    ip -n "$SW_NS" link add "sw$k" type veth peer name eth0 netns "$HOST_NS$k"
    no_ipv6 "$SW_NS" "sw$k"
    no_ipv6 "$HOST_NS$k" eth0
    ip -n "$SW_NS" link set "sw$k" master br0 up
    ip -n "$HOST_NS$k" addr add "$SUBNET.$k/24" dev eth0
    ip -n "$HOST_NS$k" link set eth0 up
    [[ -z $rate ]] || shape_link "$k" "$rate"
  done
  echo "$n" >"$STATE/n"
  echo "${rate:-off}" >"$STATE/rate"

  # Keepers. nsenter joins the host's netns, unshare creates the UTS and mount namespaces (no --fork:
  # that is only needed for PID namespaces, and without it the keeper is a single process), the
  # mount ns gets slave propagation so that nothing mounted inside (the /etc/hosts bind) can leak
  # out. setsid + redirections detach it from the caller's session and pipes: a Java test reading
  # our stdout to EOF must not wait for a keeper.
  for ((k = 1; k <= n; k++)); do
    setsid nsenter --net="$NETNS_DIR/$HOST_NS$k" unshare --uts --mount --propagation slave \
      bash -c 'set -e
        echo "$1" > /proc/sys/kernel/hostname
        mount --bind "$2" /etc/hosts
        if [ -e /etc/resolv.conf ]; then mount --bind "$3" /etc/resolv.conf; fi
        echo $$ > "$4.tmp"; mv "$4.tmp" "$4"
        exec -a "jtrain-keeper-h$5" sleep infinity' \
      keeper "$NODE$k" "$STATE/hosts" "$STATE/resolv.conf" "$STATE/keeper/$k.pid" "$k" \
      </dev/null >>"$STATE/keeper/$k.log" 2>&1 9<&- &
  done
  local deadline=$((SECONDS + WAIT_S)) pid
  for ((k = 1; k <= n; k++)); do
    until [[ -s $STATE/keeper/$k.pid ]] && is_keeper "$(cat "$STATE/keeper/$k.pid")" "$k"; do
      ((SECONDS < deadline)) || { cat "$STATE/keeper/$k.log" >&2 || true; die "keeper of host $k did not start in ${WAIT_S}s"; }
      sleep 0.05
    done
    # UTS namespace ids (the netns ids were recorded above), for down to find processes even if the
    # netns handles are gone.
    pid=$(cat "$STATE/keeper/$k.pid")
    readlink "/proc/$pid/ns/uts" >>"$STATE/nsids"
  done
  trap - EXIT
  log "up: $n hosts jt-node1..jt-node$n ($SUBNET.1..$n), shaping: ${rate:-off}, state: $STATE"
}

cmd_exec() {
  local k=${1:-}; shift || true
  (($# > 0)) || die "usage: hosts.sh exec K CMD [ARGS...]"
  host_arg "$k"
  local pid; pid=$(keeper_pid "$k")
  local pin=()
  if [[ -n ${JT_HOST_CPU_LIST:-} ]]; then pin=(taskset -c "$JT_HOST_CPU_LIST")
  elif [[ ${JT_HOST_CPUS:-shared} == split ]]; then pin=(taskset -c "$(host_cpus "$k")"); fi
  # nsenter execs CMD (no fork): the caller's pid, stdio, signals and exit status are CMD's own.
  # Entering a mount ns resets the cwd to its root, hence --wd (the file system is the same).
  exec nsenter -t "$pid" --net --uts --mount --wd="$PWD" -- "${pin[@]}" "$@"
}

# host_cpus K: host K's share of this machine's CPUs under JT_HOST_CPUS=split, e.g. "0" and "1" for 2 hosts on 2
# CPUs (hosts beyond the CPU count share them round-robin). Real hosts do not share cores: with the split, a JVM
# sees its host's CPUs (availableProcessors follows the affinity), so its spin/yield choices and thread counts are
# the ones it would make on its own machine.
host_cpus() {
  local k=$1 n c per
  n=$(num_hosts); c=$(nproc --all)
  if ((c < n)); then echo $(((k - 1) % c)); return; fi
  per=$((c / n))
  echo "$(((k - 1) * per))-$((k * per - 1))"
}

cmd_kill() {
  local k=${1:-}; shift || true
  host_arg "$k"
  local sig=KILL all=0 a
  for a in "$@"; do
    case $a in
      --all) all=1 ;;
      -*) die "unknown option $a" ;;
      *) sig=${a^^}; sig=${sig#SIG} ;;   # KILL, kill, SIGKILL and 9 all work
    esac
  done
  local keeper; keeper=$(keeper_pid "$k")
  local skip deadline=$((SECONDS + WAIT_S)) total=0
  skip=" $keeper $(ancestors | tr '\n' ' ') "
  # With SIGKILL repeat until nothing is left: a process may fork between our scan and its death.
  # Other signals are delivered once (the target may legitimately keep running, e.g. on SIGTERM).
  while :; do
    local targets=() p comm
    for p in $(ns_pids "$HOST_NS$k"); do
      [[ $skip == *" $p "* ]] && continue
      if ((all == 0)); then
        comm=$(cat "/proc/$p/comm" 2>/dev/null) || continue
        case $comm in slurmd | slurmstepd | slurmctld) continue ;; esac
      fi
      targets+=("$p")
    done
    ((${#targets[@]} == 0)) && break
    kill -s "$sig" "${targets[@]}" 2>/dev/null || true
    total=$((total + ${#targets[@]}))
    [[ $sig == KILL || $sig == 9 ]] || break
    ((SECONDS < deadline)) || die "processes on host $k survive SIGKILL: ${targets[*]}"
    sleep 0.05
    skip+="${targets[*]} "   # already killed; a zombie or slow exit must not be counted again
  done
  log "kill: sent SIG$sig to $total process(es) on host $k$( ((all)) && echo ' (including Slurm daemons)')"
}

cmd_link() {
  local k=${1:-} what=${2:-}
  host_arg "$k"
  case $what in
    down)
      ip -n "$HOST_NS$k" link set eth0 down
      ip -n "$SW_NS" link set "sw$k" down ;;
    blackhole)
      # Detach the switch port from the bridge: both veth ends stay up (K sees carrier, its sends
      # "succeed"), but frames to and from K go nowhere, like a dead switch port or a cut cable
      # behind a media converter. TCP peers only notice by timeouts.
      ip -n "$SW_NS" link set "sw$k" nomaster ;;
    up)
      ip -n "$SW_NS" link set "sw$k" master br0 up
      ip -n "$HOST_NS$k" link set eth0 up ;;
    *) die "usage: hosts.sh link K down|up|blackhole" ;;
  esac
  log "link: host $k $what"
}

cmd_shape() {
  local rate=${1:-}
  [[ -n $rate ]] || die "usage: hosts.sh shape RATE|off"
  [[ $rate == off ]] || tbf_params "$rate" >/dev/null
  local n; n=$(num_hosts); ((n > 0)) || die "hosts are not up"
  lock
  local k
  for ((k = 1; k <= n; k++)); do shape_link "$k" "$rate"; done
  echo "$rate" >"$STATE/rate"
  log "shape: $rate on all $n links"
}

# Exports for callers. OMPI_MCA_orte_tmpdir_base moves Open MPI's session directories
# (/tmp/ompi.<hostname>.<uid>/...) into the state dir: an orted killed by a failure test leaves its
# directory behind, and `down` then removes it with everything else. mpirun passes the variable on to
# the orteds it starts (through srun or rsh-agent.sh, both keep the environment).
cmd_env() {
  printf 'export JT_HOSTS=%q\n' "$SELF"
  printf 'export JTRAIN_HOSTS_STATE=%q\n' "$STATE"
  printf 'export OMPI_MCA_orte_tmpdir_base=%q\n' "$STATE/tmp"
}

cmd_status() {
  local n; n=$(num_hosts)
  if ((n == 0)); then
    echo "hosts: down"
    local left; left=$(our_namespaces | tr '\n' ' ')
    [[ -z $left ]] || echo "leftover namespaces: $left (run: hosts.sh down)"
    return 0
  fi
  echo "hosts: $n up, shaping $(cat "$STATE/rate"), state $STATE"
  local k pid name link q
  for ((k = 1; k <= n; k++)); do
    pid=$(cat "$STATE/keeper/$k.pid" 2>/dev/null || echo "?")
    if is_keeper "$pid" "$k"; then
      name=$(nsenter -t "$pid" --uts cat /proc/sys/kernel/hostname 2>/dev/null || echo "?")
    else
      name="KEEPER DEAD"
    fi
    link=$(ip -n "$HOST_NS$k" -br link show eth0 2>/dev/null | awk '{print $2}')
    ip -n "$SW_NS" -d link show "sw$k" 2>/dev/null | grep -q 'master br0' || link+=",blackholed"
    q=$(tc -n "$HOST_NS$k" qdisc show dev eth0 2>/dev/null | sed -n 's/^qdisc tbf .* \(rate .*\)$/tbf \1/p' | head -n1)
    echo "  host $k: $NODE$k $SUBNET.$k hostname=$name keeper=$pid link=$link ${q:+qdisc=$q} procs=$(ns_pids "$HOST_NS$k" | wc -l)"
  done
}

# do_down: the teardown, also used by `up` for leftovers and on its own failure. Never fails.
do_down() {
  set +e
  local nss; nss=$(our_namespaces)
  # 1. Every process in our namespaces (keepers, slurmd, slurmctld, munged, jobs...).
  # shellcheck disable=SC2086
  [[ -z $nss ]] || kill_all_in_ns $nss
  # 2. Harness processes no longer reachable through a namespace handle (crash in the middle of an
  #    earlier down, or a handle deleted by hand).
  local stray; stray=$(stray_pids)
  # shellcheck disable=SC2086
  [[ -z $stray ]] || kill -KILL $stray 2>/dev/null
  # 3. The namespaces. Deleting jtsw destroys the veth pairs with it (a veth dies with either end).
  local ns
  for ns in $nss; do ip netns delete "$ns" 2>/dev/null || echo "hosts.sh: warning: cannot delete netns $ns" >&2; done
  cleanup_netns_dir
  # 4. The state dir, only if it is ours (the marker) or empty: never rm -rf a mistyped path.
  if [[ -d $STATE ]]; then
    if [[ -e $STATE/.jtrain-hosts || -z $(ls -A "$STATE") ]]; then
      rm -rf "$STATE"
    else
      echo "hosts.sh: warning: $STATE lacks the .jtrain-hosts marker; not removing it" >&2
    fi
  fi
  set -e
}

cmd_down() {
  lock
  do_down
  local left; left=$(our_namespaces)
  [[ -z $left ]] || die "namespaces left after down: $left"
  log "down"
}

main() {
  local cmd=${1:-}
  shift || true
  case $cmd in
    check) cmd_check ;;
    up) cmd_up "$@" ;;
    exec) cmd_exec "$@" ;;
    kill) cmd_kill "$@" ;;
    link) cmd_link "$@" ;;
    shape) cmd_shape "$@" ;;
    status) cmd_status ;;
    env) cmd_env ;;
    down) cmd_down ;;
    addr) host_arg "${1:-}"; echo "$SUBNET.$1" ;;
    cpus) host_arg "${1:-}"; host_cpus "$1" ;;
    n) num_hosts ;;
    -h | --help | help) usage ;;
    *) usage >&2; exit 2 ;;
  esac
}

main "$@"
