#!/usr/bin/env bash
# Training throughput of the `small` preset (6 layers, 6 heads, width 384, context 256, byte vocabulary, batch 8):
# jtrain beside PyTorch (torch CPU + OpenBLAS, the peer's nanoGPT-style gpt_bench.py) in one run, same model shape,
# same global batch, same thread count. Prints median step time, tokens/s and the ratio jtrain / PyTorch.
#
# usage: bench/gpt_vs_pytorch.sh [STEPS] [THREADS]      (default 15 steps after warm-up, 2 threads)
# needs: ./jtrain built; JTRAIN_PEERS_DIR = directory with gpt_bench.py and env.sh (PyTorch + OpenBLAS).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STEPS="${1:-15}"; THREADS="${2:-2}"
PEERS="${JTRAIN_PEERS_DIR:-}"
if [ -z "$PEERS" ] || [ ! -f "$PEERS/gpt_bench.py" ] || [ ! -f "$PEERS/env.sh" ]; then
  echo "gpt_vs_pytorch: set JTRAIN_PEERS_DIR to the directory holding gpt_bench.py and env.sh (PyTorch peer)" >&2
  exit 2
fi
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT

echo "== jtrain (preset small, $THREADS threads)"
"$ROOT/jtrain" train --preset small --max-steps $((STEPS + 3)) --eval-interval 0 --eval-batches 1 --sample-tokens 0 \
  --data-max-bytes 3000000 --threads "$THREADS" --no-progress --out "$OUT/run" > "$OUT/jtrain.log" 2>&1 \
  || { cat "$OUT/jtrain.log" >&2; exit 1; }
JT=$(python3 - "$OUT/run/metrics.jsonl" <<'PY'
import json, statistics, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"type":"step"' in l]
ms = statistics.median(s["stepMs"] for s in steps[3:])
tok = steps[0]["tokensPerSecond"] * steps[0]["stepMs"] / 1e3  # tokens per step
print(f"{ms:.1f} {tok / (ms / 1e3):.0f}")
PY
)
read -r JT_MS JT_TOK <<< "$JT"
echo "   step median ${JT_MS} ms -> ${JT_TOK} tokens/s"

echo "== PyTorch (gpt_bench.py, $THREADS threads, OpenBLAS)"
# shellcheck disable=SC1091
source "$PEERS/env.sh"
PT_LOG=$(OMP_NUM_THREADS="$THREADS" "${PY:-python3}" "$PEERS/gpt_bench.py" --world 1 --threads "$THREADS" --vocab 256 \
  --layers 6 --heads 6 --embd 384 --block 256 --batch 8 --steps "$STEPS" --warmup 3)
echo "$PT_LOG" | sed 's/^/   /'
PT_TOK=$(echo "$PT_LOG" | sed -n 's/.*-> \([0-9,]*\) tokens\/s.*/\1/p' | tr -d ,)
python3 -c "print(f'ratio jtrain / PyTorch tokens/s: {${JT_TOK}/${PT_TOK}:.2f}x  (jtrain {${JT_TOK}:,}, PyTorch {${PT_TOK}:,})')"
