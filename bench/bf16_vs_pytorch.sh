#!/usr/bin/env bash
# bf16 beside PyTorch on this CPU, each pair in one run (these machines are noisy: compare the ratios):
#   gemm   bf16 GEMM GFLOP/s at 1024^3 and 2048^3, 1 and 2 threads, each side like for like: jtrain on bf16
#          operands (`bench matmul --dtype bf16 --inputs bf16`) against torch.mm on bfloat16 tensors (oneDNN), and
#          jtrain on fp32 operands rounded as they are packed (`--inputs fp32`, what a training step multiplies)
#          against torch.mm on fp32 tensors under autocast (bench/bf16_mm_autocast.py: the casts timed too, as a
#          training step pays them), alternating per thread count;
#   gpt2   GPT-2 124M shape (12L/12H/768, T 256, batch 4, vocab 50304), 1 process x 2 threads: jtrain
#          `bench train --precision bf16` (and fp32) against PyTorch 1.13 with torch.autocast("cpu", bfloat16) (and
#          fp32), with the activation memory each keeps for backward in both precisions
#          (bench/saved_bytes_pytorch.py counts PyTorch's through saved_tensors_hooks);
#   ddp    `small` preset, DDP over 2 processes x 1 thread, bf16: `jtrain train --nproc 2 --precision bf16` against
#          PyTorch DDP (gloo) with autocast;
#   small1 the same model and per-rank batch (4) in 1 process x 1 thread, the other core idle, both sides: against
#          `ddp`, what two ranks sharing the machine cost each of them.
#
# usage: bench/bf16_vs_pytorch.sh [PART...]      (default: gemm gpt2 ddp small1)
#        REPS=N repeats the gemm, ddp and small1 parts N times (each repetition jtrain then the peer, per thread count) and gives the
#        median ratio of each cell: on a noisy host one run's ratio can swing by 10%.
#        STEPS / WARM (ddp, small1): timed and warm-up steps, both sides (default 30 after 6: the steady state).
# needs: ./jtrain built; JTRAIN_PEERS_DIR = directory with sgemm.py, gpt_bench.py and env.sh (PyTorch peer).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PARTS=("${@:-gemm gpt2 ddp small1}")
read -r -a PARTS <<< "${PARTS[*]}"
PEERS="${JTRAIN_PEERS_DIR:-}"
if [ -z "$PEERS" ] || [ ! -f "$PEERS/sgemm.py" ] || [ ! -f "$PEERS/gpt_bench.py" ] || [ ! -f "$PEERS/env.sh" ]; then
  echo "bf16_vs_pytorch: set JTRAIN_PEERS_DIR to the directory holding sgemm.py, gpt_bench.py and env.sh (PyTorch peer)" >&2
  exit 2
fi
grep -qw avx512_bf16 /proc/cpuinfo || echo "bf16_vs_pytorch: warning: this CPU has no AVX512_BF16; jtrain computes bf16 matmuls in fp32 here" >&2
# shellcheck disable=SC1091
source "$PEERS/env.sh"
PY="${PY:-python3}"
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
REPS=${REPS:-1}
ratio() { awk -v j="$1" -v p="$2" 'BEGIN{ if (p+0 > 0 && j+0 > 0) printf "%.2f", j/p; else print "n/a" }'; }

for part in "${PARTS[@]}"; do
case "$part" in
gemm)
  echo "== bf16 GEMM (C = A*B, square), jtrain against torch.mm bf16 (oneDNN)"
  declare -A JT J16 PT AC
  for ((rep = 1; rep <= REPS; rep++)); do
    if [ "$REPS" -gt 1 ]; then echo "-- repetition $rep of $REPS"; fi
    for t in 1 2; do
      for n in 1024 2048; do
        J16[$t,$n]=$("$ROOT/jtrain" bench matmul --dtype bf16 --inputs bf16 --m "$n" --n "$n" --k "$n" --threads "$t" 2>/dev/null | tail -n 1 | awk '{print $6}')
      done
      out=$(OMP_NUM_THREADS=$t "$PY" "$PEERS/sgemm.py" "$t" bf16 2>/dev/null)
      for n in 1024 2048; do PT[$t,$n]=$(grep "torch.mm bf16 *n=$n:" <<< "$out" | awk '{print $4}'); done
      for n in 1024 2048; do
        JT[$t,$n]=$("$ROOT/jtrain" bench matmul --dtype bf16 --m "$n" --n "$n" --k "$n" --threads "$t" 2>/dev/null | tail -n 1 | awk '{print $6}')
      done
      out=$(OMP_NUM_THREADS=$t "$PY" "$ROOT/bench/bf16_mm_autocast.py" "$t" 2>/dev/null)
      for n in 1024 2048; do AC[$t,$n]=$(grep "autocast mm n=$n:" <<< "$out" | awk '{print $4}'); done
    done
    echo "   bf16 operands: jtrain --inputs bf16 against torch.mm on bf16 tensors;"
    echo "   fp32 operands: jtrain --inputs fp32 (rounded as packed) against torch.mm on fp32 tensors under autocast (casts included)"
    printf "%6s %7s %11s %11s %6s %11s %11s %6s\n" n threads "jtrain bf16" "torch bf16" ratio "jtrain fp32" autocast ratio
    for t in 1 2; do for n in 1024 2048; do
      printf "%6d %7d %11s %11s %6s %11s %11s %6s\n" "$n" "$t" "${J16[$t,$n]}" "${PT[$t,$n]}" "$(ratio "${J16[$t,$n]}" "${PT[$t,$n]}")" \
        "${JT[$t,$n]}" "${AC[$t,$n]}" "$(ratio "${JT[$t,$n]}" "${AC[$t,$n]}")"
      echo "$n $t $(ratio "${J16[$t,$n]}" "${PT[$t,$n]}") $(ratio "${JT[$t,$n]}" "${PT[$t,$n]}") $(ratio "${JT[$t,$n]}" "${AC[$t,$n]}")" >> "$OUT/gemm-ratios"
    done; done
  done
  if [ "$REPS" -gt 1 ]; then
    echo "   median ratios over $REPS repetitions (min-max): bf16 operands against torch.mm bf16; fp32 operands against"
    echo "   torch.mm bf16 and against autocast"
    python3 - "$OUT/gemm-ratios" <<'PY'
import collections, statistics, sys
by = collections.defaultdict(lambda: ([], [], []))
for line in open(sys.argv[1]):
    n, t, *rs = line.split()
    for col, r in zip(by[(int(t), int(n))], rs):
        if r != "n/a": col.append(float(r))
def cell(rs):
    return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})" if rs else "n/a"
for (t, n), cols in sorted(by.items()):
    print(f"   {n:6d} {t:7d} threads: " + " | ".join(cell(c) for c in cols))
PY
  fi
  ;;
gpt2)
  echo "== GPT-2 124M shape, 1 process x 2 threads, T 256, batch 4, vocab 50304"
  "$ROOT/jtrain" bench train --preset "$ROOT/bench/gpt2_124m.json" --vocab 50304 --batch-size 4 --steps 5 --warmup 2 \
    --threads 2 --compare-precision 2>/dev/null | tee "$OUT/jt.txt" | sed 's/^/   /'
  for p in fp32 bf16; do
    OMP_NUM_THREADS=2 "$PY" "$PEERS/gpt_bench.py" --world 1 --threads 2 --vocab 50304 --layers 12 --heads 12 --embd 768 \
      --block 256 --batch 4 --steps 5 --warmup 2 --precision "$p" 2>/dev/null | tail -n 1 | tee "$OUT/pt-$p.txt" | sed "s/^/   PyTorch $p: /"
  done
  for p in fp32 bf16; do
    j=$(grep "^  $p " "$OUT/jt.txt" | sed -n 's/.*-> \([0-9,]*\) tokens\/s.*/\1/p' | tr -d ,)
    t=$(sed -n 's/.*-> \([0-9,]*\) tokens\/s.*/\1/p' "$OUT/pt-$p.txt" | tr -d ,)
    echo "   $p: jtrain $j tokens/s, PyTorch $t tokens/s (autocast for bf16): $(ratio "$j" "$t")x"
  done
  # activation memory: what each keeps for backward, counted the same way (distinct saved storages, no weights)
  OMP_NUM_THREADS=2 "$PY" "$ROOT/bench/saved_bytes_pytorch.py" "$PEERS" --vocab 50304 --layers 12 --heads 12 --embd 768 \
    --block 256 --batch 4 2>/dev/null | sed 's/^/   /'
  grep -o 'activations [0-9.]*x, step working set [0-9.]*x' "$OUT/jt.txt" | sed 's/^/   jtrain bf16 against fp32: /'
  ;;
ddp|small1)
  if [ "$part" = ddp ]; then
    nproc=2 batch=8
    echo "== small preset, DDP 2 processes x 1 thread, global batch 8, bf16"
  else
    nproc=1 batch=4
    echo "== small preset, 1 process x 1 thread, batch 4 (a DDP rank's share), bf16"
  fi
  # the steady state, both sides: WARM warm-up steps (the JVM's JIT still compiles through the first ten or so),
  # then STEPS timed ones; overridable for a quick look (STEPS=15 WARM=3 was the default through session 39)
  STEPS=${STEPS:-30} WARM=${WARM:-6}
  : > "$OUT/$part.ratios"
  for ((rep = 1; rep <= REPS; rep++)); do
  if [ "$REPS" -gt 1 ]; then echo "-- repetition $rep of $REPS"; fi
  rm -rf "$OUT/$part"
  "$ROOT/jtrain" train --preset small --nproc $nproc --threads 1 --batch-size $batch --precision bf16 \
    --max-steps $((STEPS + WARM)) --eval-interval 0 --eval-batches 1 --sample-tokens 0 --data-max-bytes 3000000 \
    --no-progress --out "$OUT/$part" > "$OUT/$part.log" 2>&1 || { cat "$OUT/$part.log" >&2; exit 1; }
  j=$(python3 - "$OUT/$part/metrics.jsonl" "$WARM" <<'PY'
import json, statistics, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"type":"step"' in l]
ms = statistics.median(s["stepMs"] for s in steps[int(sys.argv[2]):])
tok = steps[0]["tokensPerSecond"] * steps[0]["stepMs"] / 1e3
print(f"{tok / (ms / 1e3):.0f}")
PY
)
  echo "   jtrain bf16, $nproc process(es): $j tokens/s"
  pt=$(OMP_NUM_THREADS=1 "$PY" "$PEERS/gpt_bench.py" --world $nproc --threads 1 --vocab 256 --layers 6 --heads 6 --embd 384 \
    --block 256 --batch $batch --steps "$STEPS" --warmup "$WARM" --precision bf16 2>/dev/null | tail -n 1)
  echo "   PyTorch autocast bf16, $nproc process(es) (DDP gloo when 2): $pt"
  t=$(sed -n 's/.*-> \([0-9,]*\) tokens\/s.*/\1/p' <<< "$pt" | tr -d ,)
  echo "   ratio jtrain / PyTorch: $(ratio "$j" "$t")x"
  echo "$(ratio "$j" "$t")" >> "$OUT/$part.ratios"
  done
  if [ "$REPS" -gt 1 ]; then
    python3 -c "import statistics,sys; r=[float(l) for l in open(sys.argv[1])]; print(f'   median ratio over {len(r)} repetitions: {statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})')" "$OUT/$part.ratios"
  fi
  ;;
*) echo "bf16_vs_pytorch: unknown part '$part' (gemm, gpt2, ddp, small1)" >&2; exit 2 ;;
esac
done
