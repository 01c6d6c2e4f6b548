#!/usr/bin/env bash
# Fault tolerance on `small` (6L/6H/384, T 256, byte vocab, global batch 8) across 2 emulated hosts x 2 ranks
# (test/hosts/hosts.sh), each host one `jtrain launch --max-restarts 1`:
#   1. in-memory checkpoint overhead: the same run without checkpoints and with --mem-ckpt-every K (each rank's shard
#      into the memory of the launchers), alternating, ROUNDS pairs: mean step time of steps 3.. and what each save
#      stalled training (save call + the optimizer step's wait for the overlapped snapshot); both also in the run's
#      second half, past the first saves' one-time costs; and, within each run, what the steps after a save cost
#      beyond the other steps (see summary()). Steady state needs long runs: bench/recovery_small.sh 200 10 35;
#   2. recovery from the nodes' memory: host 2 (ranks and launcher) SIGKILLed at step KILL_AT and its launcher started
#      again; the restarted lead rank's recovery record (failure seen -> restarted -> state loaded -> first step done);
#   3. recovery from disk: the same with --ckpt-every K to disk and no memory tier;
#   4. continuing without the lost host: host 2 SIGKILLed at step KILL_AT for good, --min-nodes 1 and a join timeout
#      of JOIN_MS (default 60000; host 2's launcher is known gone at once): host 1's ranks continue as the whole job, each running two ranks' rows, with
#      --grad-reduce ordered (gradients summed in one fixed order), against an uninterrupted run with the same option;
#      then the same from disk (--ckpt-every K, no memory tier);
#   6. a hot spare (PART=spare only): the job as in 2, with no --min-nodes, and a spare launcher (`launch --spare`) on a
#      third emulated host pinned to host 2's CPU (the CPU a replacement machine would bring); its ranks warm up while
#      the job trains; host 2 SIGKILLed with its launcher at step KILL_AT once the spare stands by (later if it is not
#      ready by then); the spare takes node 1's place and the job restarts at full size; then the same from disk;
#   5. growing back (PART=regrow only): as 4, and host 2's launcher started again 5 steps later: its ranks warm up while
#      host 1 trains, host 1's ranks stop at a step boundary with that step saved, and the job grows back to 4 ranks;
#      both recoveries reported.
# Every run must end; 2, 3 and 4 also check the final model is bitwise the uninterrupted run's (same steps).
#
# usage: bench/recovery_small.sh [STEPS] [K] [KILL_AT]     (default 60, 10, 35)
#        PART=overhead|ram|disk|shrink|regrow|spare runs one part only (regrow and spare run only when asked); KEEP=1 keeps the logs and metrics; EXTRA="--trace" adds train
#        options to every run; LAUNCH_EXTRA="--cold-restarts" launcher options (cold: the surviving host's ranks are
#        started anew too, instead of continuing in their JVMs)
# needs: root, test/hosts (iproute2); the jtrain jar built (./jtrain builds it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STEPS=${1:-60}
K=${2:-10}
KILL_AT=${3:-35}
NAME=recovery_small
[ "${PART:-}" = spare ] && export NHOSTS=3 # the spare's host
# shellcheck source=bench/lib/two_hosts.sh
source "$ROOT/bench/lib/two_hosts.sh"
export JTRAIN_JOB_TOKEN=bench-$$
# the launchers (which hold the in-memory checkpoints): JVM options as ./jtrain gives them, or LAUNCHER_JAVA_OPTS
read -r -a LOPTS <<< "${LAUNCHER_JAVA_OPTS:--XX:+UseParallelGC}"
JTL=("$JAVA" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED "${LOPTS[@]}" -jar "$ROOT/cli/target/jtrain-cli.jar")
PORT=29650

# launcher HOST LOG TRAIN-ARGS...: starts host HOST's launcher in the background (node HOST-1, or with ROLE=--spare a
# spare); its pid in PID
launcher() {
  local host=$1 log=$2; shift 2
  "$HOSTS" exec "$host" "${JTL[@]}" launch --nnodes 2 ${ROLE:---node-rank $((host - 1))} --master-addr jt-node1 --master-port $PORT \
    --nproc-per-node 2 --max-restarts "${RESTARTS:-1}" --join-timeout-ms "${JOIN:-60000}" ${LAUNCH_EXTRA:-} -- \
    "${JT[@]}" train --preset small --max-steps "$STEPS" --eval-interval 0 --sample-tokens 0 --no-progress "$@" ${EXTRA:-} > "$log" 2>&1 &
  PID=$!
}


# run NAME TRAIN-ARGS...: both hosts, to the end
run() {
  local name=$1; shift
  PORT=$((PORT + 1))
  local a b
  launcher 1 "$OUT/$name-1.log" --out "$OUT/$name" "$@"; a=$PID
  launcher 2 "$OUT/$name-2.log" --out "$OUT/$name" "$@"; b=$PID
  wait "$a" || { tail -30 "$OUT/$name-1.log" "$OUT/$name-2.log" >&2; exit 1; }
  wait "$b" || { tail -30 "$OUT/$name-2.log" >&2; exit 1; }
}

# killed NAME TRAIN-ARGS...: both hosts; host 2 SIGKILLed at step KILL_AT and its launcher started again
killed() {
  local name=$1; shift
  PORT=$((PORT + 1))
  local a b
  launcher 1 "$OUT/$name-1.log" --out "$OUT/$name" "$@"; a=$PID
  launcher 2 "$OUT/$name-2.log" --out "$OUT/$name" "$@"
  until [ "$(steps_done "$OUT/$name")" -ge "$KILL_AT" ]; do
    kill -0 "$a" 2>/dev/null || { tail -30 "$OUT/$name-1.log" >&2; exit 1; }
    sleep 0.2
  done
  "$HOSTS" kill 2 >/dev/null 2>&1
  launcher 2 "$OUT/$name-2b.log" --out "$OUT/$name" "$@"; b=$PID
  wait "$a" || { tail -30 "$OUT/$name-1.log" >&2; exit 1; }
  wait "$b" || { tail -30 "$OUT/$name-2b.log" >&2; exit 1; }
}

# gone NAME TRAIN-ARGS...: both hosts, --min-nodes 1; host 2 SIGKILLed at step KILL_AT and not started again
gone() {
  local name=$1; shift
  PORT=$((PORT + 1))
  local a
  JOIN=${JOIN_MS:-60000} LAUNCH_EXTRA="${LAUNCH_EXTRA:-} --min-nodes 1" launcher 1 "$OUT/$name-1.log" --out "$OUT/$name" "$@"; a=$PID
  JOIN=${JOIN_MS:-60000} LAUNCH_EXTRA="${LAUNCH_EXTRA:-} --min-nodes 1" launcher 2 "$OUT/$name-2.log" --out "$OUT/$name" "$@"
  until [ "$(steps_done "$OUT/$name")" -ge "$KILL_AT" ]; do
    kill -0 "$a" 2>/dev/null || { tail -30 "$OUT/$name-1.log" >&2; exit 1; }
    sleep 0.2
  done
  "$HOSTS" kill 2 >/dev/null 2>&1
  wait "$a" || { tail -30 "$OUT/$name-1.log" >&2; exit 1; }
}

# regrow NAME TRAIN-ARGS...: as gone, and host 2's launcher started again 5 steps after the kill
regrow() {
  local name=$1; shift
  PORT=$((PORT + 1))
  local a b
  RESTARTS=2 JOIN=${JOIN_MS:-60000} LAUNCH_EXTRA="${LAUNCH_EXTRA:-} --min-nodes 1" launcher 1 "$OUT/$name-1.log" --out "$OUT/$name" "$@"; a=$PID
  RESTARTS=2 JOIN=${JOIN_MS:-60000} LAUNCH_EXTRA="${LAUNCH_EXTRA:-} --min-nodes 1" launcher 2 "$OUT/$name-2.log" --out "$OUT/$name" "$@"
  until [ "$(steps_done "$OUT/$name")" -ge "$KILL_AT" ]; do
    kill -0 "$a" 2>/dev/null || { tail -30 "$OUT/$name-1.log" >&2; exit 1; }
    sleep 0.2
  done
  "$HOSTS" kill 2 >/dev/null 2>&1
  until [ "$(steps_done "$OUT/$name")" -ge $((KILL_AT + 5)) ]; do
    kill -0 "$a" 2>/dev/null || { tail -30 "$OUT/$name-1.log" >&2; exit 1; }
    sleep 0.2
  done
  RESTARTS=2 JOIN=${JOIN_MS:-60000} LAUNCH_EXTRA="${LAUNCH_EXTRA:-} --min-nodes 1" launcher 2 "$OUT/$name-2b.log" --out "$OUT/$name" "$@"; b=$PID
  wait "$a" || { tail -30 "$OUT/$name-1.log" >&2; exit 1; }
  wait "$b" || { tail -30 "$OUT/$name-2b.log" >&2; exit 1; }
}

# spare NAME TRAIN-ARGS...: as killed, with a spare launcher on host 3 instead of host 2's launcher started again
spare() {
  local name=$1; shift
  PORT=$((PORT + 1))
  local a s
  launcher 1 "$OUT/$name-1.log" --out "$OUT/$name" "$@"; a=$PID
  launcher 2 "$OUT/$name-2.log" --out "$OUT/$name" "$@"
  JT_HOST_CPU_LIST=$(JT_HOST_CPUS=split "$HOSTS" cpus 2) ROLE=--spare launcher 3 "$OUT/$name-3.log" --out "$OUT/$name" "$@"; s=$PID
  until [ "$(steps_done "$OUT/$name")" -ge "$KILL_AT" ] && grep -q 'spare warmed its ranks up' "$OUT/$name-3.log"; do
    kill -0 "$a" 2>/dev/null || { tail -30 "$OUT/$name-1.log" >&2; exit 1; }
    kill -0 "$s" 2>/dev/null || { tail -30 "$OUT/$name-3.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "   spare ready: $(grep -h 'spare warmed' "$OUT/$name-3.log" | sed 's/^\[launcher\] //'); host 2 killed at step $(steps_done "$OUT/$name")"
  "$HOSTS" kill 2 >/dev/null 2>&1
  wait "$a" || { tail -30 "$OUT/$name-1.log" >&2; exit 1; }
  wait "$s" || { tail -30 "$OUT/$name-3.log" >&2; exit 1; }
}

# summary RUN: prints "step_ms later_step_ms stall_ms later_stall_ms saves save_steps_extra_ms quiet_ms" for one run:
#   mean step ms (steps 3..), and the same in the run's second half (from step LATER, a multiple of K at or past half
#   of STEPS: past the first saves' one-time costs, which a long run pays once: connecting to the holders, the first
#   plan, compiling the save path, allocating the holders' memory for 2 kept checkpoints and 1 being saved);
#   stall per save (the save call + the optimizer step's wait for the snapshot; all saves, and all but the first);
#   within the run, from step LATER: the mean time of the steps that follow a save by 0, 1 and 2 (step % K = 0, 1, 2,
#   where a save's background work lands) against the mean of the steps that follow by 3..K-1, summed over the three:
#   what one save adds, measured against steps of the same run (these machines drift between runs; a run without
#   checkpoints gives the noise of this figure); and the mean of those other steps (3..K-1 after a save), where no
#   save work lands: the two runs' difference there is their drift
summary() {
  python3 - "$1/metrics.jsonl" "$K" "$LATER" <<'EOF'
import json, sys
k, later_from = int(sys.argv[2]), int(sys.argv[3])
steps, later, stalls, by_residue = [], [], [], [[] for _ in range(k)]
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "step" and r["step"] >= 3: steps.append(r["stepMs"])
    if r["type"] == "step" and r["step"] >= later_from:
        later.append(r["stepMs"])
        by_residue[r["step"] % k].append(r["stepMs"])
    if r["type"] == "checkpoint": stalls.append(r["blockedMs"] + r["snapshotWaitMs"])
mean = lambda xs: sum(xs) / len(xs) if xs else 0
profile = [mean(x) for x in by_residue]
quiet = mean(profile[3:])
extra = sum(p - quiet for p in profile[:3])
print(f"{mean(steps):.1f} {mean(later):.1f} {mean(stalls):.1f} {mean(stalls[1:]):.1f} {len(stalls)} {extra:.1f} {quiet:.1f}")
EOF
}

recovery() { grep '"type":"recovery"' "$1/metrics.jsonl"; }

# same_model RUN [REFERENCE]: RUN's final model against the uninterrupted run's (plain, or REFERENCE)
same_model() {
  local ref=$OUT/${2:-plain}/model.safetensors
  [ -f "$ref" ] || { echo "(no uninterrupted run in this part to compare with)"; return; }
  cmp -s "$ref" "$1/model.safetensors" && echo "bitwise equal to the uninterrupted run" || echo "DIFFERS from the uninterrupted run"
}

echo "== small, 2 hosts x 2 ranks, $STEPS steps, K = $K, host 2 killed at step $KILL_AT"
PART=${PART:-all}
if [ "$PART" = all ] || [ "$PART" = overhead ]; then
LATER=$(( (STEPS / 2 + K - 1) / K * K ))
echo "-- in-memory checkpoint overhead: runs without and with --mem-ckpt-every $K, alternating (ROUNDS=${ROUNDS:-2} pairs)"
for r in $(seq 1 "${ROUNDS:-2}"); do
  run plain
  run mem --mem-ckpt-every "$K"
  read -r plain_ms plain_later _ _ _ plain_extra plain_quiet <<< "$(summary "$OUT/plain")"
  read -r mem_ms mem_later stall_ms later_stall saves mem_extra mem_quiet <<< "$(summary "$OUT/mem")"
  python3 -c "p=$plain_ms; m=$mem_ms; pl=$plain_later; ml=$mem_later; s=$stall_ms; sl=$later_stall; k=$K; pe=$plain_extra; me=$mem_extra; pq=$plain_quiet; mq=$mem_quiet
print(f'   pair $r: step {p:.0f} ms without, {m:.0f} ms with ({(m-p)/p*100:+.1f}%); stall per save {s:.0f} ms ($saves saves)'
      f' = {s/k:.1f} ms per step = {s/k/p*100:.2f}% of step time')
print(f'           from step $LATER on: step {pl:.0f} ms without, {ml:.0f} ms with ({(ml-pl)/pl*100:+.1f}%);'
      f' stall per save after the first {sl:.0f} ms = {sl/k/pl*100:.2f}% of step time')
print(f'           within each run from step $LATER on, the 3 steps from a save against the others: {me:+.0f} ms per save ='
      f' {me/k/ml*100:+.2f}% of step time (the run without checkpoints, same steps: {pe:+.0f} ms = {pe/k/pl*100:+.2f}%)')
print(f'           steps 3..{k-1} after a save, where no save work lands, from step $LATER on: {pq:.0f} ms without, {mq:.0f} ms with'
      f' ({(mq-pq)/pq*100:+.1f}%: the drift between the two runs)')"
  echo "   $(same_model "$OUT/mem") (checkpoints do not change training)"
  [ "$r" = "${ROUNDS:-2}" ] || rm -rf "$OUT/plain" "$OUT/mem"
done
fi

if [ "$PART" = all ] || [ "$PART" = ram ]; then
killed fromram --ckpt-dir "$OUT/fromram-ckpt" --ckpt-every 50 --mem-ckpt-every "$K" --resume
echo "-- recovery from the nodes' memory (disk every 50)"
echo "   $(recovery "$OUT/fromram")"
echo "   $(same_model "$OUT/fromram")"
grep -h "resumed from" "$OUT"/fromram-1.log | sed 's/^/   /'
fi

if [ "$PART" = all ] || [ "$PART" = disk ]; then
killed fromdisk --ckpt-dir "$OUT/fromdisk-ckpt" --ckpt-every "$K" --resume
echo "-- recovery from disk"
echo "   $(recovery "$OUT/fromdisk")"
echo "   $(same_model "$OUT/fromdisk")"
grep -h "resumed from" "$OUT"/fromdisk-1.log | sed 's/^/   /'
fi

if [ "$PART" = all ] || [ "$PART" = shrink ]; then
run plain
run ordered --grad-reduce ordered
gone alone --ckpt-dir "$OUT/alone-ckpt" --ckpt-every 50 --mem-ckpt-every "$K" --resume --grad-reduce ordered
echo "-- continuing on host 1 alone (--min-nodes 1, join timeout ${JOIN_MS:-60000} ms, --grad-reduce ordered)"
echo "   $(recovery "$OUT/alone")"
echo "   $(same_model "$OUT/alone" ordered) (with --grad-reduce ordered)"
grep -h "shrank\\|resumed from" "$OUT"/alone-1.log | sed 's/^/   /'
gone alonedisk --ckpt-dir "$OUT/alonedisk-ckpt" --ckpt-every "$K" --resume --grad-reduce ordered
echo "-- the same from disk (--ckpt-every $K, no memory tier)"
echo "   $(recovery "$OUT/alonedisk")"
echo "   $(same_model "$OUT/alonedisk" ordered) (with --grad-reduce ordered)"
grep -h "resumed from" "$OUT"/alonedisk-1.log | sed 's/^/   /'
python3 - "$OUT/ordered/metrics.jsonl" "$OUT/alone/metrics.jsonl" "$KILL_AT" "$OUT/plain/metrics.jsonl" <<'EOF'
import json, sys
def steps(p): return [json.loads(l) for l in open(p) if '"type":"step"' in l]
whole, alone, kill = steps(sys.argv[1]), steps(sys.argv[2]), int(sys.argv[3])
mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
fast = mean([r["stepMs"] for r in steps(sys.argv[4]) if r["step"] >= 3])
before = mean([r["stepMs"] for r in whole if r["step"] >= 3])
after = mean([r["stepMs"] for r in alone if r["step"] > kill + 2])
print(f"   step time on 2 hosts {fast:.0f} ms with the fast reduction, {before:.0f} ms ordered ({before / fast:.3f}x);"
      f" on host 1 alone {after:.0f} ms ({after / before:.2f}x the ordered 2-host step)")
EOF
fi

if [ "$PART" = spare ]; then
run plain
echo "-- a spare on host 3 (host 2's CPU) takes host 2's place (no --min-nodes: the job keeps its 2 nodes)"
spare withspare --ckpt-dir "$OUT/withspare-ckpt" --ckpt-every 50 --mem-ckpt-every "$K" --resume
echo "   $(recovery "$OUT/withspare")"
echo "   $(same_model "$OUT/withspare")"
grep -h "takes the place\|replaces a launcher\|continues in its JVM" "$OUT"/withspare-3.log | sed 's/^/   /'
grep -h "resumed from" "$OUT"/withspare-1.log | sed 's/^/   /'
spare withsparedisk --ckpt-dir "$OUT/withsparedisk-ckpt" --ckpt-every "$K" --resume
echo "-- the same from disk (--ckpt-every $K, no memory tier)"
echo "   $(recovery "$OUT/withsparedisk")"
echo "   $(same_model "$OUT/withsparedisk")"
grep -h "resumed from" "$OUT"/withsparedisk-1.log | sed 's/^/   /'
fi

if [ "$PART" = regrow ]; then
run ordered --grad-reduce ordered
regrow back --ckpt-dir "$OUT/back-ckpt" --ckpt-every 50 --mem-ckpt-every "$K" --resume --grad-reduce ordered
echo "-- host 1 alone from step $KILL_AT, host 2's launcher back 5 steps later (--min-nodes 1, --grad-reduce ordered)"
grep -h '"type":"recovery"' "$OUT/back/metrics.jsonl" | sed 's/^/   /'
echo "   $(same_model "$OUT/back" ordered) (with --grad-reduce ordered)"
grep -h "lost their\\|rejoin\\|restarting" "$OUT"/back-1.log | sed 's/^/   /'
fi
