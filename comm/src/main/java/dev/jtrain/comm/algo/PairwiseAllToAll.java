package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Pairwise-exchange all-to-all (MPICH's algorithm for long messages): at step s = 1..p-1 rank r sends block
 * (r+s) to rank r+s while receiving block (r-s)'s contribution from rank r-s; every rank talks to exactly one
 * sender and one receiver per step, so no link is oversubscribed.
 *
 * <p>Cost (n = size of the whole buffer of p blocks): {@code (p-1)(α + (n/p)β)}.
 */
public final class PairwiseAllToAll implements AllToAllAlgorithm {
    public static final PairwiseAllToAll INSTANCE = new PairwiseAllToAll();

    @Override public String name() { return "pairwise"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) { return (p - 1) * m.message((double) n / p); }

    @Override
    public void allToAll(CollectiveContext c, MemorySegment in, MemorySegment out) {
        int p = c.size(), r = c.rank();
        long b = in.byteSize() / p;
        MemorySegment.copy(in, r * b, out, r * b, b);
        for (int s = 1; s < p; s++) {
            int to = (r + s) % p, from = (r - s + p) % p;
            c.sendRecvChunked(to, in.asSlice(to * b, b), from, out.asSlice(from * b, b));
        }
    }
}
