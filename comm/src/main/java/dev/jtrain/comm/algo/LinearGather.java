package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Linear gather: every rank sends its block to the root, which receives them in rank order straight into place.
 * Simple and bandwidth-optimal at the root (which must take in all (p-1)/p·n bytes anyway); latency linear in p.
 *
 * <p>Cost (n = gathered size): {@code (p-1)α + ((p-1)/p)nβ}.
 */
public final class LinearGather implements GatherAlgorithm {
    public static final LinearGather INSTANCE = new LinearGather();

    @Override public String name() { return "linear"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) { return (p - 1) * m.message((double) n / p); }

    @Override
    public void gather(CollectiveContext c, MemorySegment in, MemorySegment out, int root) {
        int p = c.size(), r = c.rank();
        long b = in.byteSize();
        if (r != root) {
            c.sendChunked(root, in);
            return;
        }
        MemorySegment.copy(in, 0, out, r * b, b);
        for (int src = 0; src < p; src++) if (src != root) c.recvChunked(src, out.asSlice(src * b, b));
    }
}
