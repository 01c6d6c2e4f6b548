package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * The reference all-reduce: every rank sends its vector to rank 0, which reduces them in rank order and sends the
 * result back to each rank. Obviously correct, and slow: rank 0's link carries 2(p-1)n bytes.
 *
 * <p>Cost: {@code 2(p-1)(α + nβ) + (p-1)nγ}.
 */
public final class NaiveAllReduce implements AllReduceAlgorithm {
    public static final NaiveAllReduce INSTANCE = new NaiveAllReduce();

    @Override public String name() { return "naive"; }

    @Override public boolean chosenByCost() { return false; } // the reference

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        return 2.0 * (p - 1) * m.message(n) + (p - 1) * n * m.gammaSecondsPerByte();
    }

    @Override
    public void allReduce(CollectiveContext c, MemorySegment buf, long count) {
        int p = c.size();
        if (p == 1 || count == 0) return;
        long chunk = c.chunkElems();
        if (c.rank() != 0) {
            for (long off = 0; off < count; off += chunk) c.send(0, c.elems(buf, off, Math.min(chunk, count - off)));
            for (long off = 0; off < count; off += chunk) c.recv(0, c.elems(buf, off, Math.min(chunk, count - off)));
            return;
        }
        MemorySegment in = c.scratch(0, Math.min(chunk, count) * c.elemSize());
        for (int src = 1; src < p; src++) {
            for (long off = 0; off < count; off += chunk) {
                long n = Math.min(chunk, count - off);
                MemorySegment got = c.elems(in, 0, n);
                c.recv(src, got);
                MemorySegment acc = c.elems(buf, off, n);
                c.reduce(acc, acc, got, n);
            }
        }
        for (int dst = 1; dst < p; dst++) {
            for (long off = 0; off < count; off += chunk) c.send(dst, c.elems(buf, off, Math.min(chunk, count - off)));
        }
    }
}
