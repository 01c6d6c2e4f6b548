package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Linear scatter: the root sends block r to rank r in rank order and copies its own.
 *
 * <p>Cost (n = scattered size): {@code (p-1)α + ((p-1)/p)nβ}.
 */
public final class LinearScatter implements ScatterAlgorithm {
    public static final LinearScatter INSTANCE = new LinearScatter();

    @Override public String name() { return "linear"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) { return (p - 1) * m.message((double) n / p); }

    @Override
    public void scatter(CollectiveContext c, MemorySegment in, MemorySegment out, int root) {
        int p = c.size(), r = c.rank();
        long b = out.byteSize();
        if (r != root) {
            c.recvChunked(root, out);
            return;
        }
        for (int dst = 0; dst < p; dst++) if (dst != root) c.sendChunked(dst, in.asSlice(dst * b, b));
        MemorySegment.copy(in, r * b, out, 0, b);
    }
}
