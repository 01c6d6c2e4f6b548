#!/usr/bin/env bash
# bf16 mixed precision learns as fp32 does: trains the `small` preset for STEPS steps (default 300) from the same
# seed, data and schedule, once with --precision fp32 and once with bf16, and compares the final validation losses
# (goal: within 2%). Prints both losses, their relative difference, and each run's tokens/s.
#
# usage: bench/bf16_convergence.sh [STEPS] [THREADS]     (default 300 steps, 2 threads, 1 process)
# needs: ./jtrain (builds itself on first use).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STEPS="${1:-300}"; THREADS="${2:-2}"
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
for p in fp32 bf16; do
  "$ROOT/jtrain" train --preset small --nproc 1 --threads "$THREADS" --precision "$p" --max-steps "$STEPS" \
    --decay-steps "$STEPS" --eval-interval 0 --eval-batches 16 --sample-tokens 0 --seed 1337 --no-progress \
    --out "$OUT/$p" > "$OUT/$p.log" 2>&1 || { cat "$OUT/$p.log" >&2; exit 1; }
done
python3 - "$OUT" "$STEPS" <<'PY'
import json, sys, statistics
out, steps = sys.argv[1], int(sys.argv[2])
res = {}
for p in ("fp32", "bf16"):
    rows = [json.loads(l) for l in open(f"{out}/{p}/metrics.jsonl")]
    evals = [r for r in rows if r.get("type") == "eval"]
    tps = statistics.median(r["tokensPerSecond"] for r in rows if r.get("type") == "step" and r["step"] >= 3)
    res[p] = (evals[-1]["valLoss"], evals[-1]["trainLoss"], tps)
    print(f"{p}: after {steps} steps val loss {res[p][0]:.4f} (train {res[p][1]:.4f}), median {tps:,.0f} tokens/s")
f, b = res["fp32"][0], res["bf16"][0]
print(f"bf16 against fp32: val loss {100 * (b - f) / f:+.2f}% (goal within 2%), tokens/s {res['bf16'][2] / res['fp32'][2]:.2f}x")
PY
