#!/usr/bin/env bash
# Across 2 emulated hosts (test/hosts/hosts.sh: network namespaces, links shaped with tbf to RATE), jtrain beside its
# peers on the same hosts in one run:
#   1. all-reduce of 64 MiB, 2 hosts x 2 ranks: jtrain, torch 1.13 gloo, Open MPI (--mca btl tcp,self); the link
#      bound t = 2(H-1)/H * S / R (H hosts, S bytes, R link rate) beside them;
#   2. DDP `small` (6L/6H/384, T 256, byte vocab, global batch 8), tokens/s: jtrain across 2 hosts x 1 rank (fp32 and
#      --grad-wire bf16), jtrain on 1 host x 2 ranks, PyTorch DDP gloo across the same 2 hosts;
#   3. (PART=gather) all-reduce, all-gather and reduce-scatter, 2 hosts x 2 ranks, at 4 KiB and 64 MiB: jtrain's flat ring and its
#      hierarchical form forced (JTRAIN_ALGO), and what the cost model picks by itself. SIZES and ITERS override
#      the sizes and the 10 timed iterations (small messages on these shared cores need hundreds).
#   4. (PART=sharding) `small` on 2 hosts x 2 ranks, global batch 8 (GRAD_ACCUM micro-steps, default 1): DDP, ZeRO-1,
#      HSDP ZeRO-1, ZeRO-3 and HSDP ZeRO-3 (--shard-within host): tokens/s, and the bytes the hosts' links carry per
#      step, read from the hosts' eth0 tx counters (frames, so TCP/IP headers included) and differenced between a
#      run of WARM steps and one of WARM + STEPS steps, so start-up and the end of training cancel out. PyTorch DDP
#      (gloo) on the same hosts beside them. ONLY="zero3 hsdp3" runs those strategies alone (names: ddp zero1 hsdp1
#      zero3 hsdp3 torch).
#
# usage: bench/multihost_vs_peers.sh [RATE] [STEPS]     (default 2gbit; STEPS 40 for the DDP part, 10 for the others:
#        the DDP figure is the steady state; at steps 7-16 the JIT still takes 5-7% of a host's CPU)
#        PART=allreduce, PART=ddp, PART=gather or PART=sharding runs one part only (the default runs the first two).
#        PAIRS=N (DDP part) repeats the rounds (jtrain 2 hosts, PyTorch beside it, jtrain 1 host) N times and gives
#        the median share of one host and the median of the rounds' ratios to PyTorch.
#        PRECISION=bf16 (DDP part): jtrain --precision bf16 against PyTorch under bf16 autocast (default fp32).
#        KEEP=1 keeps the logs and metrics (their directory is printed at the end).
# needs: root, test/hosts (iproute2), Open MPI; JTRAIN_PEERS_DIR (env.sh, gpt_bench.py, mpi_bench.py) for the peers;
#        the jtrain jar built (./jtrain builds it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RATE=${1:-2gbit}
STEPS_ARG=${2:-}
STEPS=${STEPS_ARG:-10}
PART=${PART:-all}
PEERS=${JTRAIN_PEERS_DIR:-}
[ -n "$PEERS" ] && [ -f "$PEERS/env.sh" ] || { echo "multihost_vs_peers: set JTRAIN_PEERS_DIR (env.sh, gpt_bench.py, mpi_bench.py)" >&2; exit 2; }
HOSTS=$ROOT/test/hosts/hosts.sh
# Each emulated host runs on its own share of the cores (host 1 on CPU 0, host 2 on CPU 1), as separate machines
# would: processes see their host's CPU count and spin or yield accordingly (JT_HOST_CPUS=shared to compare).
export JT_HOST_CPUS=${JT_HOST_CPUS:-split}
"$HOSTS" check >/dev/null || { echo "multihost_vs_peers: emulated hosts unavailable: $("$HOSTS" check)" >&2; exit 2; }
"$ROOT/jtrain" --version >/dev/null 2>&1 || true # builds the jar if needed
# shellcheck disable=SC1091
source "$PEERS/env.sh"
PY=${PY:-python3}
OUT=$(mktemp -d)
trap '"$HOSTS" down >/dev/null 2>&1 || true; if [ -n "${KEEP:-}" ]; then echo "logs kept in $OUT"; else rm -rf "$OUT"; fi' EXIT
"$HOSTS" up 2 "$RATE" >/dev/null 2>&1
eval "$("$HOSTS" env)"
export JTRAIN_JOB_TOKEN=bench-$$ PEERS_DIR=$PEERS JTRAIN_PEERS_DIR=$PEERS
JAVA="$(ls -d /usr/lib/jvm/*25*/bin/java | head -1)"
JT=("$JAVA" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -jar "$ROOT/cli/target/jtrain-cli.jar")
BYTES=$((64 << 20))

# on both hosts: jtrain launch --nnodes 2 --nproc-per-node N -- CMD (node 0's output is printed)
two_hosts() {
  local n=$1; shift
  "$HOSTS" exec 2 "${JT[@]}" launch --nnodes 2 --node-rank 1 --master-addr jt-node1 --master-port 29600 --nproc-per-node "$n" -- "$@" \
    > "$OUT/node1.log" 2>&1 &
  local other=$!
  "$HOSTS" exec 1 "${JT[@]}" launch --nnodes 2 --node-rank 0 --master-addr jt-node1 --master-port 29600 --nproc-per-node "$n" -- "$@" \
    > "$OUT/node0.log" 2>&1 || { cat "$OUT/node0.log" "$OUT/node1.log" >&2; exit 1; }
  wait "$other" || { cat "$OUT/node1.log" >&2; exit 1; }
  sed -n 's/^\[rank 0\] //p' "$OUT/node0.log"
}

rate_bps=$(python3 -c "import re,sys; m=re.fullmatch(r'([0-9.]+)([kmg]?)bit','$RATE'.lower()); print(float(m[1])*{'':1,'k':1e3,'m':1e6,'g':1e9}[m[2]])")
if [ "$PART" = all ] || [ "$PART" = allreduce ]; then
echo "== all-reduce 64 MiB, 2 hosts x 2 ranks, links shaped to $RATE"
python3 -c "r=$rate_bps/8; S=$BYTES; H=2; t=2*(H-1)/H*S/r; print(f'link bound 2(H-1)/H*S/R = {t*1e3:.1f} ms -> busbw {S/t*2*3/4/1e9:.3f} GB/s (4 ranks)')"
echo "-- jtrain"
two_hosts 2 "${JT[@]}" bench comm --op all_reduce --sizes 64M --iters 10 | grep -E "size|64M|^ *[0-9]" | sed 's/^/   /'
echo "-- torch $($PY -c 'import torch; print(torch.__version__)') gloo"
GLOO_SOCKET_IFNAME=eth0 PEER_PORT=29700 two_hosts 2 "$PY" "$ROOT/bench/multihost/gloo_allreduce.py" "$BYTES" 10 | sed 's/^/   /'
echo "-- Open MPI, --mca btl tcp,self"
"$HOSTS" exec 1 mpirun --allow-run-as-root --bind-to none --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
  --mca plm_rsh_agent "$ROOT/test/hosts/rsh-agent.sh" --host jt-node1:2,jt-node2:2 -np 4 -x LD_LIBRARY_PATH \
  "$PY" "$PEERS/mpi_bench.py" allreduce 2>/dev/null | tr -d '\000' | grep -aE "coll|64MiB" | sed 's/^/   /'

fi
if [ "$PART" = all ] || [ "$PART" = ddp ]; then
STEPS=${STEPS_ARG:-40}
echo "== DDP small, global batch 8, $STEPS steps (tokens/s: median step after 6 warm-up steps)"
# The emulated hosts share this machine's cores: one kernel thread per rank, as the one-host run and the peer use.
# PRECISION=bf16: both sides compute in bf16 (jtrain --precision bf16, PyTorch under autocast), as a user on a CPU with
# AVX512_BF16 would run them.
PRECISION=${PRECISION:-fp32}
echo "   precision $PRECISION (both sides)"
TRAIN=(train --threads 1 --preset small --max-steps $((STEPS + 6)) --eval-interval 0 --eval-batches 1 --sample-tokens 0
       --data-max-bytes 3000000 --no-progress --peak-gflops 100 --precision "$PRECISION")
tokens() { # metrics.jsonl [WIRE FILE] -> median tokens/s after the warm-up steps (appended to FILE as "WIRE tokens")
  python3 - "$@" <<'PY'
import json, statistics, sys
st = [json.loads(l) for l in open(sys.argv[1]) if '"type":"step"' in l][6:]
ms = statistics.median(s["stepMs"] for s in st)
tok = st[0]['tokensPerSecond'] * st[0]['stepMs'] / ms
if len(sys.argv) > 2: print(sys.argv[2], tok, file=open(sys.argv[3], "a"))
print(f"{tok:,.0f} tokens/s (step {ms:.1f} ms, exposed comm {statistics.median(s['commMs'] for s in st):.1f} ms)")
PY
}
median_step() { # metrics.jsonl -> median step time (ms) after the warm-up steps
  python3 - "$1" <<'PY'
import json, statistics, sys
st = [json.loads(l) for l in open(sys.argv[1]) if '"type":"step"' in l][6:]
print(statistics.median(s["stepMs"] for s in st))
PY
}
# PAIRS=N repeats the rounds N times. A round is jtrain across 2 hosts in fp32, PyTorch with fp32 gradients right
# after it, jtrain with --grad-wire bf16, PyTorch's fp16_compress_hook right after that, then jtrain on 1 host: each
# ratio is taken within its round, a minute or two apart, because this machine's speed drifts over minutes (both
# sides move together) and one peer run at the end compared against every round mixed the drift into the ratios.
PAIRS=${PAIRS:-1}
peer() { # COMPRESS (none|fp16): prints the peer's line and appends "COMPRESS tokens" to $OUT/peer; a failed run ends the script
  local line
  line=$(GLOO_SOCKET_IFNAME=eth0 PEER_PORT=29701 OMP_NUM_THREADS=1 two_hosts 1 "$PY" "$ROOT/bench/multihost/ddp_gpt.py" --vocab 256 \
    --layers 6 --heads 6 --embd 384 --block 256 --batch 8 --steps "$STEPS" --warmup 3 --precision "$PRECISION" \
    --compress "$1" | grep -- '-> ') || { echo "multihost_vs_peers: the PyTorch DDP run (--compress $1) gave no figure" >&2; exit 1; }
  echo "$1 $(sed -E 's/.*-> ([0-9,]+) tokens\/s.*/\1/; s/,//g' <<< "$line")" >> "$OUT/peer"
  echo "   $line"
}
for ((round = 1; round <= PAIRS; round++)); do
  if [ "$PAIRS" -gt 1 ]; then echo "-- round $round of $PAIRS"; fi
  rm -rf "$OUT/two-fp32" "$OUT/two-bf16" "$OUT/one"
  for wire in fp32 bf16; do
    two_hosts 1 "${JT[@]}" "${TRAIN[@]}" --grad-wire "$wire" --out "$OUT/two-$wire" > /dev/null
    echo "   jtrain DDP 2 hosts x 1 rank, --grad-wire $wire: $(tokens "$OUT/two-$wire/metrics.jsonl" "$wire" "$OUT/tokens")"
    if [ "$wire" = fp32 ]; then peer none; else peer fp16; fi
  done
  JT_HOST_CPUS=shared "$HOSTS" exec 1 "${JT[@]}" "${TRAIN[@]}" --nproc 2 --out "$OUT/one" > "$OUT/one.log" 2>&1 || { cat "$OUT/one.log" >&2; exit 1; }
  echo "   jtrain DDP 1 host x 2 ranks (both cores): $(tokens "$OUT/one/metrics.jsonl")"
  one=$(median_step "$OUT/one/metrics.jsonl")
  for wire in fp32 bf16; do
    awk -v o="$one" -v t="$(median_step "$OUT/two-$wire/metrics.jsonl")" -v w="$wire" 'BEGIN { printf "%s %.4f\n", w, o / t }' >> "$OUT/shares"
  done
  if [ "$PAIRS" -gt 1 ]; then
    awk '{ s[$1] = $2 } END { printf "   of one host: fp32 %.1f%%, bf16 gradients %.1f%%\n", 100 * s["fp32"], 100 * s["bf16"] }' <(tail -n 2 "$OUT/shares")
  fi
done
# the summary: shares of one host, and each round's ratio to the peer run beside it
python3 - "$OUT/shares" "$OUT/tokens" "$OUT/peer" <<'PY'
import collections, statistics, sys
def table(path):
    by = collections.defaultdict(list)
    for line in open(path):
        key, value = line.split(); by[key].append(float(value))
    return by
shares, tokens, peer = table(sys.argv[1]), table(sys.argv[2]), table(sys.argv[3])
for wire in ("fp32", "bf16"):
    s = shares[wire]
    print("   of one host, --grad-wire %s: median %.1f%% over %d round(s) (%.1f-%.1f)" % (
        wire, 100 * statistics.median(s), len(s), 100 * min(s), 100 * max(s)))
for wire, compress, what in (("fp32", "none", "fp32 gradients"), ("bf16", "fp16", "fp16_compress_hook")):
    ratios = [j / p for j, p in zip(tokens[wire], peer[compress])]
    print(f"   against PyTorch ({what}), --grad-wire {wire}: median {statistics.median(ratios):.2f}x over {len(ratios)} round(s)"
          f" ({', '.join(f'{j:,.0f}/{p:,.0f}' for j, p in zip(tokens[wire], peer[compress]))} tokens/s)")
PY
STEPS=${STEPS_ARG:-10}
fi

if [ "$PART" = gather ]; then
echo "== all-reduce, all-gather and reduce-scatter, 2 hosts x 2 ranks, links shaped to $RATE (sizes: the whole buffer)"
for op in all_reduce all_gather reduce_scatter; do
  key=${op//_/}
  for algo in ring hierarchical auto; do
    echo "-- $op, $algo"
    if [ "$algo" = auto ]; then
      two_hosts 2 "${JT[@]}" bench comm --op "$op" --sizes "${SIZES:-4K,64M}" --iters "${ITERS:-10}" | grep -E "size|^ *[0-9]" | sed 's/^/   /'
    else
      two_hosts 2 env "JTRAIN_ALGO=$key:$algo" "${JT[@]}" bench comm --op "$op" --sizes "${SIZES:-4K,64M}" --iters "${ITERS:-10}" | grep -E "size|^ *[0-9]" | sed 's/^/   /'
    fi
  done
done
fi

if [ "$PART" = sharding ]; then
ACCUM=${GRAD_ACCUM:-1}
WARM=6
echo "== sharding strategies, small, 2 hosts x 2 ranks, links shaped to $RATE, global batch $((8 * ACCUM)) (8 rows x $ACCUM micro-steps)"
echo "   (tokens/s: median step after $WARM warm-up steps; inter-host bytes: both hosts' eth0 tx per step, over $STEPS steps)"
TRAIN=(train --threads 1 --preset small --eval-interval 0 --eval-batches 1 --sample-tokens 0 --grad-accum "$ACCUM"
       --data-max-bytes 3000000 --no-progress --peak-gflops 100)
tx() { # bytes both hosts have sent on their links so far
  local sum=0 k b
  for k in 1 2; do
    b=$(ip -n "jt-h$k" -s -j link show eth0 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])')
    sum=$((sum + b))
  done
  echo "$sum"
}
strategy() { # name, args...
  local name=$1; shift
  local t0 t1 t2
  t0=$(tx); two_hosts 2 "${JT[@]}" "${TRAIN[@]}" --max-steps "$WARM" "$@" --out "$OUT/$name-short" > /dev/null
  t1=$(tx); two_hosts 2 "${JT[@]}" "${TRAIN[@]}" --max-steps $((WARM + STEPS)) "$@" --out "$OUT/$name" > "$OUT/$name.out"
  t2=$(tx)
  python3 - "$OUT/$name/metrics.jsonl" "$name" $(( (t2 - t1) - (t1 - t0) )) "$STEPS" "$(grep -o '[0-9.]* B/param' "$OUT/$name.out" | head -1)" "$WARM" <<'PY'
import json, statistics, sys
st = [json.loads(l) for l in open(sys.argv[1]) if '"type":"step"' in l][int(sys.argv[6]):]
ms = statistics.median(s["stepMs"] for s in st)
tok = st[0]["tokensPerSecond"] * st[0]["stepMs"] / ms
comm = statistics.median(s["commMs"] for s in st)
per_step = int(sys.argv[3]) / int(sys.argv[4])
print(f"   {sys.argv[2]:<10} {tok:7,.0f} tokens/s  step {ms:7.1f} ms  exposed comm {comm:6.1f} ms  inter-host {per_step / 2**20:7.1f} MiB/step  {sys.argv[5]}")
PY
}
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
want ddp && strategy ddp --zero 0
want zero1 && strategy zero1 --zero 1
want hsdp1 && strategy hsdp1 --zero 1 --shard-within host
want zero3 && strategy zero3 --zero 3
want hsdp3 && strategy hsdp3 --zero 3 --shard-within host
want torch || exit 0
echo "-- torch $($PY -c 'import torch; print(torch.__version__)') DDP gloo, 2 hosts x 2 ranks (FSDP does not import on this Python)"
GLOO_SOCKET_IFNAME=eth0 PEER_PORT=29702 OMP_NUM_THREADS=1 two_hosts 2 "$PY" "$ROOT/bench/multihost/ddp_gpt.py" --vocab 256 \
  --layers 6 --heads 6 --embd 384 --block 256 --batch 8 --steps "$STEPS" --warmup 3 | sed 's/^/   /'
fi
