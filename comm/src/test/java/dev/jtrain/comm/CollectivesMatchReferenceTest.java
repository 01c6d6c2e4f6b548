package dev.jtrain.comm;

import dev.jtrain.comm.algo.Algorithm;
import dev.jtrain.comm.algo.AlgorithmSelector;
import dev.jtrain.comm.algo.Collective;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Every collective x algorithm x world size (1..5 and 7) against a plain reference computed locally, over sizes 0, 1,
 * odd, not divisible by p, and ~4 MiB, every dtype and every reduce op (the 4 MiB case: float32 SUM only).
 * Ranks are threads over LocalTransport; heap and native buffers alternate.
 */
class CollectivesMatchReferenceTest {
    static final long SEED = Long.getLong("jtrain.test.seed", System.nanoTime());
    static final long[] SMALL_COUNTS = {0, 1, 37, 1001};
    static final long BIG_BYTES = 4 << 20;

    static Stream<Arguments> cases() {
        System.out.println("CollectivesMatchReferenceTest seed=" + SEED + " (rerun with -Djtrain.test.seed=" + SEED + ")");
        List<Arguments> out = new ArrayList<>();
        for (var e : AlgorithmSelector.ALL.entrySet()) {
            for (Algorithm a : e.getValue()) {
                for (int p : new int[] {1, 2, 3, 4, 5, 7}) out.add(Arguments.of(e.getKey(), a.name(), p));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} {1} p={2}")
    @MethodSource("cases")
    @Timeout(60)
    void matchesReference(Collective c, String algo, int p) throws Exception {
        ProcessGroupOptions small = LocalRanks.options().withAlgorithm(c, algo).withChunkBytes(4096);
        LocalRanks.run(p, small, 20_000, g -> {
            int caseIndex = 0;
            for (long count : SMALL_COUNTS) {
                for (DType d : DType.values()) {
                    for (ReduceOp op : reducing(c) ? ReduceOp.values() : new ReduceOp[] {ReduceOp.SUM}) {
                        check(g, c, count, d, op, caseIndex++);
                    }
                }
            }
        });
        ProcessGroupOptions big = LocalRanks.options().withAlgorithm(c, algo).withChunkBytes(512 * 1024);
        LocalRanks.run(p, big, 20_000, g -> check(g, c, BIG_BYTES / 4 / (perRank(c) ? p : 1), DType.FLOAT32, ReduceOp.SUM, 1000));
    }

    static boolean reducing(Collective c) {
        return c == Collective.ALL_REDUCE || c == Collective.REDUCE || c == Collective.REDUCE_SCATTER;
    }

    static boolean perRank(Collective c) {
        return c == Collective.ALL_GATHER || c == Collective.REDUCE_SCATTER || c == Collective.GATHER
                || c == Collective.SCATTER || c == Collective.ALL_TO_ALL;
    }

    /** One collective on every rank; {@code count} is the vector (all-reduce...) or the per-rank block size. */
    static void check(ProcessGroup g, Collective c, long count, DType d, ReduceOp op, int caseIndex) {
        int p = g.size(), r = g.rank();
        boolean nat = caseIndex % 2 == 1;
        String what = c.apiName() + " " + g.algorithmFor(c, 0).name() + " p=" + p + " rank=" + r + " count=" + count
                + " dtype=" + d + " op=" + op + " case=" + caseIndex + " seed=" + SEED;
        int root = caseIndex % p;
        long total = count * p;
        long[][] in = new long[p][];
        long inCount = switch (c) {
            case REDUCE_SCATTER, SCATTER, ALL_TO_ALL -> total;
            default -> count;
        };
        for (int s = 0; s < p; s++) in[s] = Values.generate(SEED, s, caseIndex, inCount, op);
        int n = (int) count;
        switch (c) {
            case ALL_REDUCE, REDUCE -> {
                MemorySegment buf = Values.segment(d, in[r], nat);
                if (c == Collective.ALL_REDUCE) g.allReduce(buf, count, d, op);
                else g.reduce(buf, count, d, op, root);
                double[] exp = c == Collective.REDUCE && r != root ? Values.asDoubles(in[r]) : Values.reference(d, op, in);
                Values.assertEquals(what, d, buf, 0, exp, 0, n);
            }
            case BROADCAST -> {
                MemorySegment buf = Values.segment(d, in[r], nat);
                g.broadcast(buf, count, d, root);
                Values.assertEquals(what, d, buf, 0, Values.asDoubles(in[root]), 0, n);
            }
            case ALL_GATHER, GATHER -> {
                MemorySegment src = Values.segment(d, in[r], nat);
                MemorySegment out = Values.allocate(d, total, !nat);
                if (c == Collective.ALL_GATHER) g.allGather(src, out, count, d);
                else g.gather(src, r == root ? out : null, count, d, root);
                if (c == Collective.ALL_GATHER || r == root) {
                    for (int s = 0; s < p; s++) Values.assertEquals(what + " block " + s, d, out, (long) s * n, Values.asDoubles(in[s]), 0, n);
                }
                if (c == Collective.ALL_GATHER) { // in place: the input is this rank's block of the output (ZeRO-3's gathers)
                    MemorySegment all = Values.allocate(d, total, nat);
                    MemorySegment mine = all.asSlice(d.bytes(count) * r, d.bytes(count));
                    mine.copyFrom(src);
                    g.allGather(mine, all, count, d);
                    for (int s = 0; s < p; s++) Values.assertEquals(what + " in place, block " + s, d, all, (long) s * n, Values.asDoubles(in[s]), 0, n);
                }
            }
            case REDUCE_SCATTER -> {
                MemorySegment src = Values.segment(d, in[r], nat);
                MemorySegment out = Values.allocate(d, count, !nat);
                g.reduceScatter(src, out, count, d, op);
                Values.assertEquals(what, d, out, 0, Values.reference(d, op, in), r * n, n);
                Values.assertEquals(what + " (input untouched)", d, src, 0, Values.asDoubles(in[r]), 0, (int) total);
            }
            case SCATTER -> {
                MemorySegment src = r == root ? Values.segment(d, in[root], nat) : null;
                MemorySegment out = Values.allocate(d, count, !nat);
                g.scatter(src, out, count, d, root);
                Values.assertEquals(what, d, out, 0, Values.asDoubles(in[root]), r * n, n);
            }
            case ALL_TO_ALL -> {
                MemorySegment src = Values.segment(d, in[r], nat);
                MemorySegment out = Values.allocate(d, total, !nat);
                g.allToAll(src, out, count, d);
                for (int s = 0; s < p; s++) Values.assertEquals(what + " from " + s, d, out, (long) s * n, Values.asDoubles(in[s]), r * n, n);
            }
            case BARRIER -> g.barrier();
        }
    }
}
