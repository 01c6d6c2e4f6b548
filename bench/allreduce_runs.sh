#!/usr/bin/env bash
# Run-to-run stability of the large all-reduce, 2 ranks on one host: N consecutive runs, each a fresh pair of
# processes (the mode is decided at process start), jtrain with CPU binding (JTRAIN_CPU_BIND=auto), jtrain without
# (the default) and Open MPI (mpi4py; binds to cores by default at 2 ranks), one after the other in every round so all
# see the same machine. Prints median time (us) and busbw (GB/s) at 4 MiB and
# 64 MiB per run, then the min/median/max over runs.
#
# Each jtrain run also measures a 4-byte all-reduce: the cross-CPU round trip at that moment. On this VM it switches
# between ~0.65 us and ~1.25 us as the hypervisor moves the two vCPUs, and the slow runs are the slow-latency ones
# (bench/MEASUREMENTS.md, "two modes").
#
# ONE_CPU=1 adds a column with both ranks confined to CPU 0 (taskset): the slow mode two ranks sharing a CPU give.
#
# usage: bench/allreduce_runs.sh [RUNS=10]     (peers from $JTRAIN_PEERS_DIR, default /work/shared/peers)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${1:-10}"
PEERS="${JTRAIN_PEERS_DIR:-/work/shared/peers}"
if [ -f "$PEERS/env.sh" ]; then set +u; source "$PEERS/env.sh"; set -u; fi
PY="${PY:-/usr/bin/python3}"
have_mpi=1
if [ ! -f "$PEERS/mpi_bench.py" ] || ! command -v mpirun >/dev/null; then
  echo "allreduce_runs: no mpirun or $PEERS/mpi_bench.py; running jtrain only (see /work/shared/peers/README.md)" >&2
  have_mpi=0
fi
OUT="$(mktemp -d /tmp/allreduce_runs.XXXXXX)"
echo "# results in $OUT"

jtrain_run() { # $1 = JTRAIN_CPU_BIND value, then an optional command prefix; prints "t4 bw4 t64 bw64 t4B"
  # the 4-byte all-reduce is the cross-CPU round trip of the moment: it tells which mode the run was in
  local bind="$1"; shift
  JTRAIN_CPU_BIND="$bind" "$@" "$ROOT/jtrain" bench comm --nproc 2 --op all_reduce --sizes 4,4M,64M 2>>"$OUT/stderr.log" \
    | awk '$1 == 4 {l = $4} $1 == 4194304 {a = $4 " " $6} $1 == 67108864 {b = $4 " " $6} END {print a, b, l}'
}
mpi_run() {
  mpirun --allow-run-as-root -np 2 "$PY" "$PEERS/mpi_bench.py" allreduce 2>>"$OUT/stderr.log" \
    | awk '$2 == "1MiB" {next} $2 == "16MiB" {next} $2 == "64MiB" {b = $3 * 1000 " " $5} END {print "-", "-", b}'
}

printf "%-4s | %-34s | %-34s | %-16s | %s\n" run "jtrain (bind auto) 4M   64M   4B" "jtrain (bind none) 4M   64M   4B" "Open MPI 64M" \
  "$([ "${ONE_CPU:-0}" = 1 ] && echo "jtrain, both ranks on CPU 0: 4M   64M")"
printf "%-4s | %-34s | %-34s | %-16s |\n" "" "us  GB/s   us  GB/s   us" "us  GB/s   us  GB/s   us" "us  GB/s"
for i in $(seq 1 "$RUNS"); do
  a=$(jtrain_run auto); b=$(jtrain_run none); m="- - - -"; c=""
  [ "$have_mpi" = 1 ] && m=$(mpi_run)
  [ "${ONE_CPU:-0}" = 1 ] && c=$(jtrain_run none taskset -c 0)
  echo "$i $a" >> "$OUT/bind_auto.txt"; echo "$i $b" >> "$OUT/bind_none.txt"; echo "$i $m" >> "$OUT/mpi.txt"
  [ -n "$c" ] && echo "$i $c" >> "$OUT/one_cpu.txt"
  read -r a1 a2 a3 a4 a5 <<<"$a"; read -r b1 b2 b3 b4 b5 <<<"$b"; read -r _ _ m3 m4 <<<"$m"
  printf "%-4s | %6s %5s %8s %5s %5s | %6s %5s %8s %5s %5s | %8s %5s | %s\n" "$i" "$a1" "$a2" "$a3" "$a4" "$a5" "$b1" "$b2" "$b3" "$b4" "$b5" "$m3" "$m4" "$c"
done
summary() { sort -g -k"$2" "$OUT/$1" | awk -v c="$2" '{v[NR] = $c} END {printf "min %s  median %s  max %s", v[1], v[int((NR + 1) / 2)], v[NR]}'; }
echo
echo "64 MiB time (us) over $RUNS runs:"
echo "  jtrain bind auto: $(summary bind_auto.txt 4)"
echo "  jtrain bind none: $(summary bind_none.txt 4)"
[ "$have_mpi" = 1 ] && echo "  Open MPI:         $(summary mpi.txt 4)"
[ -f "$OUT/one_cpu.txt" ] && echo "  jtrain, 1 CPU:    $(summary one_cpu.txt 4)" || true
echo "4 MiB time (us):"
echo "  jtrain bind auto: $(summary bind_auto.txt 2)"
echo "  jtrain bind none: $(summary bind_none.txt 2)"
