#!/usr/bin/env bash
# rsh-agent.sh - an "ssh" for Open MPI's rsh launcher that reaches the emulated hosts of hosts.sh.
#
#   mpirun --allow-run-as-root --mca plm_rsh_agent /path/to/rsh-agent.sh --host jt-node1:2,jt-node2:2 CMD
#
# Open MPI (plm/rsh) runs `AGENT [options] HOST COMMAND-WORDS...` to start its orted daemon on HOST,
# exactly as it would run ssh; the command words form one shell command line (PATH=...; export PATH;
# ... orted -mca ...) meant for the remote login shell. We accept and ignore ssh-style options, map
# HOST (jt-nodeK or 10.231.0.K) to host K and run the line with /bin/sh on that host through
# `hosts.sh exec K`: its network, UTS and mount namespaces, cwd, environment and stdio, and the
# exit status flows back to mpirun as ssh's would. No ssh server, keys or network login needed.
set -euo pipefail
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")

while (($# > 0)) && [[ $1 == -* ]]; do
  case $1 in
    -l | -p | -o | -i | -F) shift 2 ;;   # ssh options with an argument
    *) shift ;;                          # flags such as -x, -T, -q
  esac
done
(($# >= 2)) || { echo "usage: rsh-agent.sh [ssh-options] HOST COMMAND..." >&2; exit 255; }
host=$1
shift
case $host in
  jt-node[0-9]*) k=${host#jt-node} ;;
  10.231.0.[0-9]*) k=${host##*.} ;;
  *) echo "rsh-agent.sh: $host is not an emulated host (jt-nodeK or 10.231.0.K)" >&2; exit 255 ;;
esac
# ssh joins its arguments with spaces and hands the result to the remote shell; do the same.
exec "$HERE/hosts.sh" exec "$k" /bin/sh -c "$*"
