package dev.jtrain.checkpoint;

import dev.jtrain.comm.ProcessGroup;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Decides <em>what</em> each rank writes (the split of torch.distributed.checkpoint's {@code planner.py} from
 * {@code storage.py}; where and how bytes go is {@link ShardFileWriter}'s business).
 *
 * <p>Call sequence of one save:
 * <pre>
 *   every rank:   local = LocalPlan.of(rank, world, state)                 what I hold
 *                 plan(local, group):
 *                   cache hit (local equals the cached key) → cached plan, no collectives
 *                   miss: gather(local → coordinator)
 *   coordinator:        merge(all locals) → GlobalPlan                      de-duplicate, balance
 *   every rank:         broadcast(GlobalPlan) → my writes = plan.writes(rank); cache (local → plan)
 * </pre>
 *
 * <p><b>De-duplication with balance.</b> A replicated piece (same item and flat range on several ranks) is written
 * once. Non-replicated pieces stay with their rank; then replicated pieces, largest first, go to the least-loaded of
 * their holders in bytes (Graham's LPT rule: the final spread is at most one piece above even). PyTorch DCP's
 * default planner kept the first holder, which puts every replicated byte on rank 0.
 *
 * <p><b>Plan cache.</b> Keyed on the whole local plan (names, shapes, dtypes, offsets, lengths, replication, rank,
 * world size), as veScale does, so a changed layout always replans. Layouts change collectively (every rank builds
 * the same model and strategy), so every rank hits or misses together; the commit step cross-checks that all ranks
 * used the same plan ({@link GlobalPlan#hashCode()} travels with each rank's report).
 *
 * <p>Threading: one save at a time (the {@link Checkpointer} serialises them).
 */
public final class SavePlanner {
    /** Outcome of {@link #plan}: the plan, whether it came from the cache, and the time planning took. */
    public record Result(GlobalPlan plan, boolean cacheHit, long planningNanos) {}

    /** The coordinator's answer: a plan, or why there is none (so no rank is left waiting on a broadcast). */
    record Reply(GlobalPlan plan, String error) {}

    private LocalPlan cachedLocal;
    private GlobalPlan cachedPlan;
    private int hits, misses;

    /** Forgets the cached plan: the next save replans (collectively). */
    public void invalidate() {
        cachedLocal = null;
        cachedPlan = null;
    }

    /** Collective over {@code group} on a miss (null group: one process). */
    public Result plan(LocalPlan local, ProcessGroup group) {
        long t0 = System.nanoTime();
        if (local.equals(cachedLocal)) {
            hits++;
            return new Result(cachedPlan, true, System.nanoTime() - t0);
        }
        misses++;
        GlobalPlan plan;
        if (group == null) {
            plan = merge(List.of(local));
        } else {
            byte[] mine = SaveMessage.wrap(SaveMessage.PLAN, PlanCodec.encode(local));
            List<byte[]> all = ByteExchange.gather(group, mine, 0);
            byte[] reply = null;
            if (group.rank() == 0) {
                String mixed = SaveMessage.mixedPhases(all);
                if (mixed != null) {
                    // the others are committing a save under their cached plan: answer them as a commit would
                    reply = SaveMessage.wrap(SaveMessage.LAYOUT_MISMATCH, mixed);
                } else {
                    Reply r;
                    try {
                        List<LocalPlan> locals = new ArrayList<>();
                        for (byte[] b : all) locals.add(PlanCodec.decodeLocal(SaveMessage.body(b)));
                        r = new Reply(merge(locals), null);
                    } catch (RuntimeException e) {
                        r = new Reply(null, e.getMessage());
                    }
                    reply = SaveMessage.wrap(SaveMessage.PLAN_REPLY, PlanCodec.encode(r));
                }
            }
            byte[] answer = ByteExchange.broadcast(group, reply, 0);
            if (SaveMessage.kind(answer) != SaveMessage.PLAN_REPLY) {
                invalidate();
                throw new CheckpointException("rank " + group.rank() + ": save not committed: " + SaveMessage.text(answer));
            }
            Reply r = PlanCodec.decodeReply(SaveMessage.body(answer));
            if (r.error() != null) throw new CheckpointException("save planning failed on the coordinator (rank 0): " + r.error());
            plan = r.plan();
        }
        if (!plan.layout().get(local.rank()).equals(local))
            throw new IllegalStateException("global plan does not hold this rank's local plan: rank=" + local.rank());
        cachedLocal = local;
        cachedPlan = plan;
        return new Result(plan, false, System.nanoTime() - t0);
    }

    /**
     * Runs the planning path once on a two-rank toy layout, without collectives, so the first real save does not pay
     * for the plan codec's and the merge's first use while training waits (bench/MEASUREMENTS.md, "first save").
     */
    static void warmUp() {
        List<LocalPlan> locals = new ArrayList<>();
        for (int r = 0; r < 2; r++)
            locals.add(new LocalPlan(r, 2, List.of(new PlannedShard("warmup/w", new long[]{8}, "F32", 0, 8, true),
                    new PlannedShard("warmup/s", new long[]{8}, "F32", 4L * r, 4, false))));
        List<LocalPlan> back = new ArrayList<>();
        for (LocalPlan l : locals) {
            byte[] message = SaveMessage.wrap(SaveMessage.PLAN, PlanCodec.encode(l));
            back.add(PlanCodec.decodeLocal(SaveMessage.body(message)));
        }
        Reply r = PlanCodec.decodeReply(PlanCodec.encode(new Reply(merge(back), null)));
        if (!r.plan().layout().equals(locals)) throw new IllegalStateException("save planning warm-up did not round-trip");
    }

    public int cacheHits() { return hits; }

    public int cacheMisses() { return misses; }

    /** The coordinator's step: one global plan from every rank's local plan (indexed by rank). Deterministic. */
    public static GlobalPlan merge(List<LocalPlan> locals) {
        int world = locals.size();
        Map<String, long[]> shapes = new LinkedHashMap<>();
        Map<String, Integer> shapeFrom = new LinkedHashMap<>();
        for (int r = 0; r < world; r++) {
            LocalPlan lp = locals.get(r);
            if (lp.rank() != r || lp.worldSize() != world)
                throw new CheckpointException("local plan of rank " + lp.rank() + " (world " + lp.worldSize()
                        + ") arrived as rank " + r + " of " + world);
            for (PlannedShard s : lp.shards()) {
                long[] prev = shapes.putIfAbsent(s.item(), s.shape());
                if (prev == null) shapeFrom.put(s.item(), r);
                else if (!Arrays.equals(prev, s.shape()))
                    throw new CheckpointException("item " + s.item() + " has global shape " + Arrays.toString(prev) + " on rank "
                            + shapeFrom.get(s.item()) + " but " + Arrays.toString(s.shape()) + " on rank " + r);
            }
        }
        long[] load = new long[world];
        List<List<Integer>> chosen = new ArrayList<>();
        for (int r = 0; r < world; r++) chosen.add(new ArrayList<>());
        Map<String, List<int[]>> replicas = new LinkedHashMap<>(); // range key -> (rank, local index) holders
        Map<String, Long> replicaBytes = new LinkedHashMap<>();
        for (int r = 0; r < world; r++) {
            List<PlannedShard> ss = locals.get(r).shards();
            for (int i = 0; i < ss.size(); i++) {
                PlannedShard s = ss.get(i);
                if (!s.replicated()) {
                    chosen.get(r).add(i);
                    load[r] += s.bytes();
                } else {
                    replicas.computeIfAbsent(s.rangeKey(), k -> new ArrayList<>()).add(new int[]{r, i});
                    replicaBytes.put(s.rangeKey(), s.bytes());
                }
            }
        }
        List<String> order = new ArrayList<>(replicas.keySet());
        order.sort(Comparator.comparingLong((String k) -> -replicaBytes.get(k)).thenComparing(Comparator.naturalOrder()));
        for (String k : order) {
            int[] best = null;
            for (int[] h : replicas.get(k)) if (best == null || load[h[0]] < load[best[0]]) best = h;
            chosen.get(best[0]).add(best[1]);
            load[best[0]] += replicaBytes.get(k);
        }
        List<List<WriteItem>> writes = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            List<Integer> idx = chosen.get(r);
            idx.sort(null); // local order: staging is filled front to back while walking the live buffers
            List<WriteItem> ws = new ArrayList<>();
            long begin = 0;
            for (int i : idx) {
                PlannedShard s = locals.get(r).shards().get(i);
                String tensor = s.whole() ? s.item() : s.item() + "@" + s.offset();
                ws.add(new WriteItem(i, s.item(), s.offset(), s.length(), tensor, begin));
                begin += s.bytes();
            }
            writes.add(ws);
        }
        return new GlobalPlan(world, writes, locals);
    }
}
