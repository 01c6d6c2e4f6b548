#!/usr/bin/env bash
# All-reduce float32 side by side, in one run: jtrain (jtrain bench comm) vs Open MPI (mpi4py) vs torch gloo, at 2 and
# 4 ranks, over shared memory and (2 ranks) TCP only. Prints each tool's own table, then a summary of the goals:
#   busbw at 64 MiB >= 2x Open MPI (shm) and >= 3x gloo; latency at 4 KiB within 2x of Open MPI at 2 ranks and no
#   worse than Open MPI at 4 ranks; TCP only: busbw at 64 MiB >= 1.5x Open MPI with --mca btl tcp,self.
#
# usage: bench/comm_vs_peers.sh            (peers from $JTRAIN_PEERS_DIR, default /work/shared/peers)
#   JTRAIN_PEERS_DIR  directory holding mpi_bench.py, gloo_bench.py (and env.sh, sourced if present)
#   PY                python with torch 1.13 and mpi4py (env.sh sets it; default /usr/bin/python3)
#   RANKS="2 4"       world sizes;  SKIP_GLOO=1 / SKIP_TCP=1 to shorten the run
# The machine must be quiet: these are 2-core boxes; compare ratios from the same run, not absolute numbers.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${JTRAIN_PEERS_DIR:-/work/shared/peers}"
RANKS="${RANKS:-2 4}"
OUT="$(mktemp -d /tmp/comm_vs_peers.XXXXXX)"
echo "# results in $OUT (stderr of every tool in $OUT/stderr.log)"

have_peers=1
if [ ! -f "$PEERS/mpi_bench.py" ] || [ ! -f "$PEERS/gloo_bench.py" ]; then
  cat >&2 <<MSG
comm_vs_peers: peer scripts not found in JTRAIN_PEERS_DIR=$PEERS (need mpi_bench.py and gloo_bench.py).
  Point JTRAIN_PEERS_DIR at them (see /work/shared/peers/README.md; install with its setup.sh). Running jtrain only.
MSG
  have_peers=0
fi
if [ "$have_peers" = 1 ] && [ -f "$PEERS/env.sh" ]; then set +u; source "$PEERS/env.sh"; set -u; fi
PY="${PY:-/usr/bin/python3}"
if [ "$have_peers" = 1 ] && ! command -v mpirun >/dev/null; then
  echo "comm_vs_peers: mpirun not found (apt-get install openmpi-bin python3-mpi4py); skipping Open MPI" >&2
fi

# jtrain: runs the built jar (build it first with ./jtrain --version); prefers the registered `bench comm`
# subcommand, else invokes the picocli command class directly.
JAVA="${JAVA_HOME:-/nonexistent}/bin/java"; [ -x "$JAVA" ] || JAVA="$(ls -d /usr/lib/jvm/*25*/bin/java 2>/dev/null | head -n1)"
JAR="$ROOT/cli/target/jtrain-cli.jar"
if [ ! -x "$JAVA" ] || [ ! -f "$JAR" ]; then
  echo "comm_vs_peers: need JDK 25 and $JAR; build once with ./jtrain --version" >&2; exit 2
fi
JOPTS=(--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC)
jtrain_bench() {
  if "$JAVA" "${JOPTS[@]}" -jar "$JAR" bench --help 2>/dev/null | grep -qE '^ +comm( |$)'; then
    "$JAVA" "${JOPTS[@]}" -jar "$JAR" bench comm "$@"
  else
    cat > "$OUT/RunBenchComm.java" <<'JAVA'
public class RunBenchComm {
    public static void main(String[] a) throws Exception {
        System.exit(new picocli.CommandLine(Class.forName("dev.jtrain.cli.BenchCommCommand")).execute(a));
    }
}
JAVA
    "$JAVA" "${JOPTS[@]}" -cp "$JAR:$ROOT/cli/target/lib/*" "$OUT/RunBenchComm.java" "$@"
  fi
}

for n in $RANKS; do
  echo; echo "=== $n ranks, shared memory ==="
  jtrain_bench --nproc "$n" --op all_reduce --sizes 4K,64K,1M,16M,64M --transport auto 2>>"$OUT/stderr.log" | tee "$OUT/jtrain_shm_$n.txt"
  if [ "$have_peers" = 1 ] && command -v mpirun >/dev/null; then
    mpirun --allow-run-as-root --oversubscribe -np "$n" "$PY" "$PEERS/mpi_bench.py" allreduce 2>>"$OUT/stderr.log" | tee "$OUT/mpi_shm_$n.txt"
  fi
  if [ "$have_peers" = 1 ] && [ -z "${SKIP_GLOO:-}" ]; then
    OMP_NUM_THREADS=1 "$PY" "$PEERS/gloo_bench.py" "$n" all_reduce 2>>"$OUT/stderr.log" | tee "$OUT/gloo_$n.txt"
  fi
done
if [ -z "${SKIP_TCP:-}" ]; then
  echo; echo "=== 2 ranks, TCP only ==="
  jtrain_bench --nproc 2 --op all_reduce --sizes 4K,1M,64M --transport tcp 2>>"$OUT/stderr.log" | tee "$OUT/jtrain_tcp_2.txt"
  if [ "$have_peers" = 1 ] && command -v mpirun >/dev/null; then
    mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl tcp,self "$PY" "$PEERS/mpi_bench.py" allreduce 2>>"$OUT/stderr.log" | tee "$OUT/mpi_tcp_2.txt"
  fi
fi

# ---- summary: jtrain rows are "bytes count algo time_us algbw busbw ..."; peers print "allreduce 64MiB med_ms algbw busbw"
jt() { awk -v b="$2" -v col="$3" '$1==b {print $col}' "$OUT/$1" 2>/dev/null || true; }  # a skipped tool leaves no file
peer() { awk -v s="$2" -v col="$3" '$2==s {print $col}' "$OUT/$1" 2>/dev/null || true; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
echo; echo "=== summary (same run) ==="
printf "%-34s %12s %12s %12s %8s %8s\n" "metric" "jtrain" "OpenMPI" "gloo" "vs MPI" "vs gloo"
for n in $RANKS; do
  jb=$(jt "jtrain_shm_$n.txt" 67108864 6); mb=$(peer "mpi_shm_$n.txt" 64MiB 5); gb=$(peer "gloo_$n.txt" 64MiB 5)
  printf "%-34s %12s %12s %12s %8s %8s\n" "busbw GB/s @64MiB, $n ranks shm" "${jb:-n/a}" "${mb:-n/a}" "${gb:-n/a}" "$(ratio "$jb" "$mb")" "$(ratio "$jb" "$gb")"
  jl=$(jt "jtrain_shm_$n.txt" 4096 4); ml=$(peer "mpi_shm_$n.txt" 4KiB 3); gl=$(peer "gloo_$n.txt" 4KiB 3)
  ml_us=$(awk -v v="$ml" 'BEGIN { if (v != "") printf "%.1f", v * 1000 }'); gl_us=$(awk -v v="$gl" 'BEGIN { if (v != "") printf "%.1f", v * 1000 }')
  printf "%-34s %12s %12s %12s %8s %8s\n" "latency us @4KiB, $n ranks (lower=better)" "${jl:-n/a}" "${ml_us:-n/a}" "${gl_us:-n/a}" "$(ratio "$jl" "$ml_us")" "$(ratio "$jl" "$gl_us")"
done
if [ -z "${SKIP_TCP:-}" ]; then
  jb=$(jt jtrain_tcp_2.txt 67108864 6); mb=$(peer mpi_tcp_2.txt 64MiB 5)
  printf "%-34s %12s %12s %12s %8s %8s\n" "busbw GB/s @64MiB, 2 ranks TCP" "${jb:-n/a}" "${mb:-n/a}" "-" "$(ratio "$jb" "$mb")" "-"
fi
echo "(busbw ratios: higher is better; latency ratios: jtrain/peer, lower is better)"
