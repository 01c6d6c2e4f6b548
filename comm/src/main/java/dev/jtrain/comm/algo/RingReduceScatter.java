package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Ring reduce-scatter: at step s = 0..p-2 rank r sends its running partial of block (r-s-1) to the right and
 * receives the partial of block (r-s-2) from the left, adding its own contribution; after p-1 steps the partial
 * that arrives is block r, complete. Partials live in two alternating scratch chunks, so the input is only read.
 * Chunks are the outer loop, which bounds scratch to two chunks whatever n is.
 *
 * <p>Cost (n = size of the whole input of p blocks): {@code (p-1)α + ((p-1)/p)n(β + γ)}, plus α per extra chunk.
 */
public final class RingReduceScatter implements ReduceScatterAlgorithm {
    public static final RingReduceScatter INSTANCE = new RingReduceScatter();

    @Override public String name() { return "ring"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        double block = (double) n / p;
        return (p - 1) * (m.message(block) + block * m.gammaSecondsPerByte());
    }

    @Override
    public void reduceScatter(CollectiveContext c, MemorySegment in, MemorySegment out, long m) {
        int p = c.size(), r = c.rank();
        if (m == 0) return;
        if (p == 1) {
            MemorySegment.copy(in, 0, out, 0, out.byteSize());
            return;
        }
        int right = (r + 1) % p, left = (r - 1 + p) % p;
        long chunk = c.chunkElems();
        long bufElems = Math.min(chunk, m);
        MemorySegment[] partial = {c.scratch(0, bufElems * c.elemSize()), c.scratch(1, bufElems * c.elemSize())};
        for (long off = 0; off < m; off += chunk) {
            long n = Math.min(chunk, m - off);
            MemorySegment sending = c.elems(in, Math.floorMod(r - 1, p) * m + off, n);
            for (int s = 0; s < p - 1; s++) {
                MemorySegment got = c.elems(partial[s % 2], 0, n);
                c.sendRecv(right, sending, left, got);
                int block = Math.floorMod(r - s - 2, p);
                MemorySegment mine = c.elems(in, block * m + off, n);
                MemorySegment dst = s == p - 2 ? c.elems(out, off, n) : got;
                c.reduce(dst, got, mine, n);
                sending = got;
            }
        }
    }
}
