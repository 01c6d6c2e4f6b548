package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Dissemination barrier (Hensgen, Finkel, Manber 1988): in round i rank r signals rank r + 2^i and waits for
 * rank r - 2^i. After ceil(log2 p) rounds every rank has heard, transitively, from every other. Any p.
 *
 * <p>Cost: {@code ceil(log2 p)α}.
 */
public final class DisseminationBarrier implements BarrierAlgorithm {
    public static final DisseminationBarrier INSTANCE = new DisseminationBarrier();

    @Override public String name() { return "dissemination"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) { return Algorithm.ceilLog2(p) * m.alphaSeconds(); }

    @Override
    public void barrier(CollectiveContext c) {
        int p = c.size(), r = c.rank();
        if (p == 1) return;
        MemorySegment token = c.scratch(0, 2);
        for (int d = 1; d < p; d <<= 1) {
            c.sendRecv((r + d) % p, token.asSlice(0, 1), (r - d + p) % p, token.asSlice(1, 1));
        }
    }
}
