#!/usr/bin/env bash
# Distributed checkpoint of 1 GiB fp32 state (64 x 16 MiB) from 2 processes, in one run:
#   jtrain (replicated = DDP: de-duplicated and balanced; sharded = ZeRO halves), save with fsync + commit,
#   what a save costs a training loop (sync / async / async with the snapshot overlapped: time blocked, and the
#   slowdown of stand-in training steps until the commit), load cold (posix_fadvise DONTNEED on the files) and warm, broadcast load;
#   torch 1.13 sharded checkpoint (torch.distributed._shard.checkpoint) and torch.save/torch.load (ckpt_bench.py);
#   the disk's own ceiling: dd 1 GiB with conv=fsync.
# Everything on the same file system (default /tmp; CKPT_BENCH_DIR overrides).
#
# usage: bench/ckpt_vs_torch.sh [REPS]     needs: cli built (./jtrain or mvn install); JTRAIN_PEERS_DIR with ckpt_bench.py, env.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS="${1:-5}"
PEERS="${JTRAIN_PEERS_DIR:-}"
[ -n "$PEERS" ] && [ -f "$PEERS/ckpt_bench.py" ] || {
  echo "ckpt_vs_torch: set JTRAIN_PEERS_DIR to the peers directory (ckpt_bench.py, dcp_compat.py, env.sh)" >&2; exit 2; }
JAVA="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
JAR="$ROOT/cli/target/jtrain-cli.jar"
[ -f "$JAR" ] && [ -f "$ROOT/cli/target/lib/jtrain-checkpoint-0.1.0-SNAPSHOT.jar" ] || {
  echo "ckpt_vs_torch: build first (./jtrain --help, or ./mvnw -pl cli -am install -DskipTests)" >&2; exit 2; }
BASE="${CKPT_BENCH_DIR:-/tmp}"
DIR=$(mktemp -d "$BASE/jtrain-ckpt-bench.XXXXXX"); trap 'rm -rf "$DIR"' EXIT
FLAGS=(--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -Xmx3g)

dd_ceiling() { # the disk is shared and noisy: measured before, between and after, so each figure has a neighbour
  echo "== disk ceiling ($1): dd 1 GiB, conv=fsync ($BASE)"
  dd if=/dev/zero of="$DIR/dd.bin" bs=4M count=256 conv=fsync 2>&1 | tail -1 | sed 's/^/   /'
  rm -f "$DIR/dd.bin"
}
dd_ceiling before

echo "== jtrain, 2 processes"
"$JAVA" "${FLAGS[@]}" -jar "$JAR" launch --nproc-per-node 2 -- \
  "$JAVA" "${FLAGS[@]}" -cp "$JAR:$ROOT/cli/target/lib/*" dev.jtrain.checkpoint.bench.CheckpointBenchmark "$DIR/jtrain" "$REPS" \
  2>&1 | grep -v "WARNING: Using incubator" | sed 's/^\[rank 0\] //' | sed 's/^/   /'

dd_ceiling between
echo "== torch 1.13 (ckpt_bench.py), 2 processes"
# shellcheck disable=SC1091
source "$PEERS/env.sh"
PEERS_CKPT_DIR="$DIR/torch" OMP_NUM_THREADS=1 "${PY:-python3}" "$PEERS/ckpt_bench.py" "$REPS" 2>&1 | sed 's/^/   /'
dd_ceiling after
