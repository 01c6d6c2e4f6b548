#!/usr/bin/env bash
# Soak: one long run on 2 emulated hosts x 2 ranks (test/hosts/hosts.sh), `tiny` preset, checkpoints in the nodes'
# memory every K steps and on disk every 4K, under `jtrain launch --max-restarts KILLS` on each host, with KILLS
# random failures at random times: SIGKILL of one random rank, or of every process of host 2 (its launcher too, which
# is then started again, as a cluster manager would). At the end:
#   - the final model must be bitwise the one of the same run without failures;
#   - every disk checkpoint left must verify (`jtrain ckpt verify`), and none may have been set aside as unusable;
#   - the recovery records (one per restart, in metrics.jsonl) give the distribution of the time from failure to the
#     next finished step, where each restart loaded from, and the steps recomputed.
#
# usage: bench/soak_recovery.sh [KILLS] [STEPS] [K]     (default 20, 4000, 4)
#        LAUNCH_EXTRA="--cold-restarts": every rank of a restarted group starts anew (default: the ranks whose process
#        survived continue in it, warm)
# needs: root, test/hosts (iproute2); the jtrain jar built (./jtrain builds it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KILLS=${1:-20}
STEPS=${2:-4000}
K=${3:-4}
NAME=soak_recovery
# shellcheck source=bench/lib/two_hosts.sh
source "$ROOT/bench/lib/two_hosts.sh"
export JTRAIN_JOB_TOKEN=soak-$$ JTRAIN_ALGO=allreduce:ring JTRAIN_HEARTBEAT_TIMEOUT_MS=5000 JTRAIN_COMM_TIMEOUT_MS=15000
PORT=29700
python3 -c "print('\n'.join(f'line {i}: ' + 'the quick brown fox jumps over the lazy dog ' * (1 + i % 7) for i in range(20000)))" > "$OUT/corpus.txt"

# launcher HOST LOG RESTARTS NAME: host HOST's launcher in the background; its pid in PID
launcher() {
  local host=$1 log=$2 restarts=$3 name=$4
  "$HOSTS" exec "$host" "${JT[@]}" launch --nnodes 2 --node-rank $((host - 1)) --master-addr jt-node1 --master-port $PORT \
    --nproc-per-node 2 --max-restarts "$restarts" --join-timeout-ms 60000 --stop-grace-ms 2000 ${LAUNCH_EXTRA:-} -- \
    "${JT[@]}" train --preset tiny --data "$OUT/corpus.txt" --max-steps "$STEPS" --peak-gflops 50 --eval-interval 0 \
    --sample-tokens 0 --no-progress --bucket-mb 4 --out "$OUT/$name" --ckpt-dir "$OUT/$name-ckpt" --ckpt-every $((4 * K)) \
    --keep-last 3 --mem-ckpt-every "$K" --resume >> "$log" 2>&1 &
  PID=$!
}

last_step() { grep -o '"type":"step","step":[0-9]*' "$1/metrics.jsonl" 2>/dev/null | tail -1 | grep -o '[0-9]*$' || echo 0; }

echo "== soak: tiny, 2 hosts x 2 ranks, $STEPS steps, memory checkpoints every $K, disk every $((4 * K)), $KILLS random kills"
PORT=$((PORT + 1))
launcher 1 "$OUT/ref-1.log" 0 ref; a=$PID
launcher 2 "$OUT/ref-2.log" 0 ref; b=$PID
wait "$a" && wait "$b" || { tail -20 "$OUT"/ref-*.log >&2; exit 1; }
echo "-- uninterrupted run done"

PORT=$((PORT + 1))
launcher 1 "$OUT/soak-1.log" "$KILLS" soak; a=$PID
launcher 2 "$OUT/soak-2.log" "$KILLS" soak; b=$PID
RANDOM=20261125
for i in $(seq 1 "$KILLS"); do
  # wait until the group is training again (past the previous restart), then a random 20-150 steps more
  before=$(steps_done "$OUT/soak")
  wait_for=$((before + 3 + 20 + RANDOM % 131))
  until [ "$(steps_done "$OUT/soak")" -ge "$wait_for" ]; do
    kill -0 "$a" 2>/dev/null || { echo "node 0's launcher ended before kill $i (raise STEPS)" >&2; tail -30 "$OUT/soak-1.log" >&2; exit 1; }
    sleep 0.05
  done
  if ((RANDOM % 2)); then
    "$HOSTS" kill 2 >/dev/null 2>&1 # host 2 lost with its launcher; the cluster manager starts the launcher again
    launcher 2 "$OUT/soak-2.log" "$KILLS" soak; b=$PID
    what="host 2"
  else
    # the ranks: java processes running `train` (a launcher's command line holds `launch` and the rank command)
    mapfile -t ranks < <(ps -eo pid=,args= | awk '/jtrain-cli.jar train/ && !/ launch / {print $1}')
    ((${#ranks[@]} > 0)) || { echo "no rank to kill" >&2; exit 1; } # the loop above saw the group training
    victim=${ranks[$((RANDOM % ${#ranks[@]}))]}
    kill -9 "$victim" 2>/dev/null || true
    what="rank process $victim"
  fi
  echo "   kill $i at step $(last_step "$OUT/soak"): $what"
done
wait "$a" || { tail -30 "$OUT/soak-1.log" >&2; exit 1; }
wait "$b" || true # host 2's first launchers were killed

echo "-- result"
cmp -s "$OUT/ref/model.safetensors" "$OUT/soak/model.safetensors" && echo "   final model bitwise equal to the uninterrupted run" \
  || echo "   FINAL MODEL DIFFERS from the uninterrupted run"
unusable=$(find "$OUT/soak-ckpt" -maxdepth 1 -name '*.unusable*' | wc -l)
bad=0
for d in "$OUT"/soak-ckpt/step-*; do
  [ -f "$d/metadata.json" ] || continue
  "${JT[@]}" ckpt verify "$d" >/dev/null 2>&1 || { echo "   checkpoint $d does NOT verify"; bad=$((bad + 1)); }
done
echo "   disk checkpoints: $(ls -d "$OUT"/soak-ckpt/step-* | wc -l) left, $bad failing verification, $unusable set aside as unusable"
python3 - "$OUT/soak/metrics.jsonl" <<'EOF'
import json, statistics, sys
rec = [json.loads(l) for l in open(sys.argv[1]) if '"type":"recovery"' in l]
t = sorted(r["total_s"] for r in rec)
if not t: sys.exit("no recovery records")
q = lambda p: t[min(len(t) - 1, int(p * len(t)))]
print(f"   {len(rec)} recoveries; failure -> next finished step: min {t[0]:.1f} s, median {statistics.median(t):.1f} s,"
      f" p90 {q(0.9):.1f} s, max {t[-1]:.1f} s")
src = {}
for r in rec: src[r.get("resumed_from")] = src.get(r.get("resumed_from"), 0) + 1
print(f"   the lead rank (rank 0) continued in its JVM in {sum(1 for r in rec if r.get('warm'))} of {len(rec)} restarts")
print(f"   loaded from: {src}; steps recomputed: max {max(r['steps_recomputed'] for r in rec)},"
      f" total {sum(max(0, r['steps_recomputed']) for r in rec)}")
EOF
