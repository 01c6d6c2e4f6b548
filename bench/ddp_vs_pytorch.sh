#!/usr/bin/env bash
# Data-parallel training on this machine, 2 processes x 1 thread, preset `small` (6L/6H/384, T=256, byte vocab,
# global batch 8), in one run:
#   jtrain DDP, ZeRO-1 (hooks overlap backward), ZeRO-1 --no-overlap (collectives after backward), ZeRO-2,
#   and PyTorch 1.13 DDP (gloo, OpenBLAS, 1 thread per process) on the same model and global batch.
# Prints median step time, tokens/s, exposed-communication share and bytes/param per rank.
#
# usage: bench/ddp_vs_pytorch.sh [STEPS]       needs: ./jtrain built; JTRAIN_PEERS_DIR with gpt_bench.py and env.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STEPS="${1:-12}"
PEERS="${JTRAIN_PEERS_DIR:-}"
[ -n "$PEERS" ] && [ -f "$PEERS/gpt_bench.py" ] || { echo "ddp_vs_pytorch: set JTRAIN_PEERS_DIR (gpt_bench.py, env.sh)" >&2; exit 2; }
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT

run() { # name, extra args
  local name="$1"; shift
  "$ROOT/jtrain" train --preset small --nproc 2 --max-steps $((STEPS + 6)) --eval-interval 0 --eval-batches 1 \
    --sample-tokens 0 --data-max-bytes 3000000 --no-progress --out "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1 \
    || { cat "$OUT/$name.log" >&2; exit 1; }
  python3 - "$OUT/$name/metrics.jsonl" "$name" "$(grep -o '[0-9.]* B/param' "$OUT/$name.log" | head -1)" <<'PY'
import json, statistics, sys
st = [json.loads(l) for l in open(sys.argv[1]) if "\"type\":\"step\"" in l][6:]
ms = statistics.median(s["stepMs"] for s in st)
comm = statistics.median(s["commMs"] for s in st)
tok = st[0]["tokensPerSecond"] * st[0]["stepMs"] / 1e3
print(f"{sys.argv[2]:<22} step {ms:7.1f} ms  {tok / (ms / 1e3):7.0f} tokens/s  exposed comm {comm:6.1f} ms ({100 * comm / ms:4.1f}%)  {sys.argv[3]}")
PY
}
echo "== jtrain, 2 processes x 1 thread"
run ddp --zero 0
run zero1 --zero 1
run zero1-no-overlap --zero 1 --no-overlap
run zero2 --zero 2
echo "== PyTorch DDP (gloo), 2 processes x 1 thread"
# shellcheck disable=SC1091
source "$PEERS/env.sh"
OMP_NUM_THREADS=1 "${PY:-python3}" "$PEERS/gpt_bench.py" --world 2 --threads 1 --vocab 256 --layers 6 --heads 6 \
  --embd 384 --block 256 --batch 8 --steps "$STEPS" --warmup 3 | sed 's/^/   /'
