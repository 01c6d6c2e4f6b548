#!/usr/bin/env bash
# Distributed checkpoint of 1 GiB fp32 state (64 x 16 MiB) from 2 processes, jtrain beside its peers in one run:
#   jtrain (replicated = DDP: de-duplicated and balanced; sharded = ZeRO halves), save with fsync + commit,
#   what a save costs a training loop (sync / async / async with the snapshot overlapped: time blocked, and the
#   slowdown of stand-in training steps until the commit), load cold (posix_fadvise DONTNEED on the files) and warm, broadcast load;
#   torch 1.13 sharded checkpoint (torch.distributed._shard.checkpoint) and torch.save/torch.load (ckpt_bench.py);
#   the disk's own ceiling: dd 1 GiB with conv=fsync.
# The disk's speed drifts by tens of percent over minutes, so the two run in alternating blocks, ABBA
# (jtrain, torch, torch, jtrain, ...): a drift hits both alike. The summary compares medians over all blocks and
# gives each pair of neighbouring blocks' ratio as well.
# Everything on the same file system (default /tmp; CKPT_BENCH_DIR overrides).
#
# usage: bench/ckpt_vs_torch.sh [REPS_PER_BLOCK [ROUNDS]]   (default 3 and 2: ~12 min)
#        needs: cli built (./jtrain or mvn install); JTRAIN_PEERS_DIR with ckpt_bench.py, env.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS="${1:-3}"
ROUNDS="${2:-2}"
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
# shellcheck disable=SC1091
source "$PEERS/env.sh"
PYTHON="${PY:-python3}"

dd_ceiling() { # the disk is shared and noisy: measured around every block, so each figure has a neighbour
  echo "== disk ceiling ($1): dd 1 GiB, conv=fsync ($BASE)"
  dd if=/dev/zero of="$DIR/dd.bin" bs=4M count=256 conv=fsync 2>&1 | tail -1 | sed 's/^/   /'
  rm -f "$DIR/dd.bin"
}
jtrain_block() {
  echo "== jtrain, 2 processes (block $1)"
  "$JAVA" "${FLAGS[@]}" -jar "$JAR" launch --nproc-per-node 2 -- \
    "$JAVA" "${FLAGS[@]}" -cp "$JAR:$ROOT/cli/target/lib/*" dev.jtrain.checkpoint.bench.CheckpointBenchmark "$DIR/jtrain" "$REPS" \
    2>&1 | grep -v "WARNING: Using incubator" | sed 's/^\[rank 0\] //' | tee "$DIR/jtrain.$1.txt" | sed 's/^/   /'
}
torch_block() {
  echo "== torch 1.13 (ckpt_bench.py), 2 processes (block $1)"
  PEERS_CKPT_DIR="$DIR/torch" OMP_NUM_THREADS=1 "$PYTHON" "$PEERS/ckpt_bench.py" "$REPS" 2>&1 | tee "$DIR/torch.$1.txt" | sed 's/^/   /'
}

for ((r = 1; r <= ROUNDS; r++)); do
  dd_ceiling "round $r"
  if ((r % 2)); then jtrain_block "$r"; torch_block "$r"; else torch_block "$r"; jtrain_block "$r"; fi
done
dd_ceiling end

"$PYTHON" - "$DIR" "$ROUNDS" <<'PY'
import re, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
def table(path, torch):
    out = {}
    for line in open(path):
        m = re.match(r"\s*(\S.*?)\s{2,}-?\d+\.\d+\s", line)
        if not m: continue
        cols = line[m.end(1):].split()   # jtrain: median min GB/s run1 run2 ...; torch: median min bytes GB/s
        # ckpt_bench.py prints only a median per case (each block counts once); CheckpointBenchmark every run
        out[m.group(1)] = [float(cols[0])] if torch else [float(x) for x in cols[3:]] or [float(cols[0])]
    return out
J = [table(f"{d}/jtrain.{r}.txt", False) for r in range(1, rounds + 1)]
T = [table(f"{d}/torch.{r}.txt", True) for r in range(1, rounds + 1)]
# jtrain: the median of each block's runs, then the median over blocks (as for the peer, whose script prints one
# median per block). A process's first save and load fault in fresh staging memory, which this VM backs lazily
# (1 GiB took 1.5 s to touch here): that run is an outlier each block's median sets aside, for both tools.
def jt(k, r=None): return statistics.median(statistics.median(b[k]) for b in (J if r is None else [J[r]]))
def pt(keys, r=None):  # the faster of the peer's layouts, per block
    blocks = T if r is None else [T[r]]
    return statistics.median(min(b[k][0] for k in keys) for b in blocks)
cases = [
  ("save, replicated (DDP)",  "jtrain replicated save (fsync, commit)", ["dcp_replicated_1file/tensor save", "dcp_replicated_1file/rank save"], "torch.save + fsync"),
  ("save, sharded (ZeRO)",    "jtrain sharded save (fsync, commit)",    ["dcp_sharded_1file/tensor save", "dcp_sharded_1file/rank save"], "torch.save + fsync"),
  ("cold load, replicated",   "jtrain replicated load cold",            ["dcp_replicated_1file/tensor load cold", "dcp_replicated_1file/rank load cold"], "torch.load cold"),
  ("cold load, repl., bcast", "jtrain replicated load broadcast cold", ["dcp_replicated_1file/tensor load cold", "dcp_replicated_1file/rank load cold"], None),
  ("cold load, sharded",      "jtrain sharded load cold",               ["dcp_sharded_1file/tensor load cold", "dcp_sharded_1file/rank load cold"], None),
]
print(f"== summary: median over {rounds} blocks of each block's median (per-block ratios in brackets); ratio = peer time / jtrain time")
print("   (DCP = the faster of its two layouts; torch.save/torch.load = rank 0 alone; 'bcast' = jtrain's broadcast load, which")
print("   resume uses, against DCP 1.13's replicated load, which has no broadcast: every rank reads everything)")
print(f"   {'case':26s} {'jtrain_s':>9s} {'DCP_s':>7s} {'vs DCP':>22s} {'torch_s':>8s} {'vs torch.save/load':>24s}")
for name, jk, dk, tk in cases:
    j, p = jt(jk), pt(dk)
    per = " ".join(f"{pt(dk, r) / jt(jk, r):.2f}" for r in range(rounds))
    line = f"   {name:26s} {j:9.3f} {p:7.3f} {p / j:9.2f}x [{per}]"
    if tk:
        t = pt([tk]); tper = " ".join(f"{pt([tk], r) / jt(jk, r):.2f}" for r in range(rounds))
        line += f" {t:8.3f} {t / j:9.2f}x [{tper}]"
    print(line)
PY
