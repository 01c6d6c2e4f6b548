#!/usr/bin/env bash
# Sharding strategies on this machine, preset `small` (6L/6H/384, T=256, byte vocab, global batch 8), 2 processes x
# 1 thread, in one run, alternating so all see the same machine:
#   jtrain DDP, ZeRO-1, ZeRO-2 and ZeRO-3 (--zero 3: parameters sharded too, gathered block by block with prefetch),
#   ROUNDS rounds, then PyTorch 1.13 DDP (gloo) on the same model and batch, and PyTorch 1.13 FSDP if it runs here.
# Prints each run's median step time, tokens/s, exposed communication and bytes/param per rank, and ZeRO-3 / DDP.
#
# Across emulated hosts (HSDP against ZeRO-3, inter-host bytes per step): PART=sharding bench/multihost_vs_peers.sh.
#
# usage: bench/sharding_vs_peers.sh [STEPS=12] [ROUNDS=2]     needs: ./jtrain built; JTRAIN_PEERS_DIR (gpt_bench.py, env.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STEPS="${1:-12}"
ROUNDS="${2:-2}"
PEERS="${JTRAIN_PEERS_DIR:-}"
[ -n "$PEERS" ] && [ -f "$PEERS/gpt_bench.py" ] || { echo "sharding_vs_peers: set JTRAIN_PEERS_DIR (gpt_bench.py, env.sh)" >&2; exit 2; }
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT

run() { # name, extra args -> prints a line, appends "name tokens/s" to $OUT/tok
  local name="$1"; shift
  "$ROOT/jtrain" train --preset small --nproc 2 --threads 1 --max-steps $((STEPS + 6)) --eval-interval 0 --eval-batches 1 \
    --sample-tokens 0 --data-max-bytes 3000000 --no-progress --out "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1 \
    || { cat "$OUT/$name.log" >&2; exit 1; }
  python3 - "$OUT/$name/metrics.jsonl" "$name" "$(grep -o '[0-9.]* B/param' "$OUT/$name.log" | head -1)" "$OUT/tok" <<'PY'
import json, statistics, sys
st = [json.loads(l) for l in open(sys.argv[1]) if "\"type\":\"step\"" in l][6:]
ms = statistics.median(s["stepMs"] for s in st)
comm = statistics.median(s["commMs"] for s in st)
tok = st[0]["tokensPerSecond"] * st[0]["stepMs"] / 1e3 / (ms / 1e3)
print(f"   {sys.argv[2]:<12} step {ms:7.1f} ms  {tok:7.0f} tokens/s  exposed comm {comm:6.1f} ms ({100 * comm / ms:4.1f}%)  {sys.argv[3]}")
open(sys.argv[4], "a").write(f"{sys.argv[2].split('-')[0]} {tok}\n")
PY
}

echo "== jtrain, 2 processes x 1 thread, $ROUNDS round(s)"
for r in $(seq 1 "$ROUNDS"); do
  run "ddp-$r" --zero 0
  run "zero1-$r" --zero 1
  run "zero2-$r" --zero 2
  run "zero3-$r" --zero 3
done
python3 - "$OUT/tok" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, v = line.split(); t[k].append(float(v))
ddp = statistics.median(t["ddp"])
for k in ("zero1", "zero2", "zero3"):
    print(f"   {k} / DDP: {statistics.median(t[k]) / ddp:.2f}x (median over rounds; goal for zero3 >= 0.9x)")
PY

source "$PEERS/env.sh"
PY="${PY:-python3}"
echo "== PyTorch 1.13, 2 processes x 1 thread"
OMP_NUM_THREADS=1 "$PY" "$PEERS/gpt_bench.py" --world 2 --threads 1 --vocab 256 --layers 6 --heads 6 --embd 384 \
  --block 256 --batch 8 --steps "$STEPS" --warmup 3 2>/dev/null | tail -n 1 | sed 's/^/   DDP (gloo): /'
if "$PY" -c "import torch.distributed.fsdp" 2> "$OUT/fsdp.err"; then
  echo "   FSDP imports here; no FSDP peer script yet"
else
  echo "   FSDP: does not run here: import torch.distributed.fsdp fails ($(tail -n 1 "$OUT/fsdp.err" | cut -c1-120))"
fi
