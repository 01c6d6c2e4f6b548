package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Binomial-tree reduce (MPICH): with relative rank v = (r - root) mod p, at distance d = 1, 2, 4, ... a rank whose
 * bit d is set sends its partial result to v - d and stops; otherwise it receives from v + d (if it exists) and
 * reduces. Non-root ranks accumulate into scratch so their buffers are left unchanged.
 *
 * <p>Cost: {@code ceil(log2 p)(α + nβ + nγ)} on the root's critical path (plus α per extra chunk).
 */
public final class BinomialReduce implements ReduceAlgorithm {
    public static final BinomialReduce INSTANCE = new BinomialReduce();

    @Override public String name() { return "binomial"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        return Algorithm.ceilLog2(p) * (m.message(n) + n * m.gammaSecondsPerByte());
    }

    @Override
    public void reduce(CollectiveContext c, MemorySegment buf, long count, int root) {
        reduce(c, buf, count, root, false);
    }

    /** With {@code inPlace}, non-root buffers may be overwritten with partial results (saves a copy). */
    void reduce(CollectiveContext c, MemorySegment buf, long count, int root, boolean inPlace) {
        int p = c.size();
        if (p == 1 || count == 0) return;
        int v = Math.floorMod(c.rank() - root, p);
        long chunk = c.chunkElems();
        MemorySegment in = c.scratch(0, Math.min(chunk, count) * c.elemSize());
        MemorySegment acc = buf; // where the partial result lives
        boolean accIsBuf = true;
        for (int d = 1; d < p; d <<= 1) {
            if ((v & d) != 0) {
                int parent = (v - d + root) % p;
                for (long off = 0; off < count; off += chunk) c.send(parent, c.elems(acc, off, Math.min(chunk, count - off)));
                return;
            }
            if (v + d < p) {
                int child = (v + d + root) % p;
                if (accIsBuf && !inPlace && v != 0) {
                    acc = c.scratch(1, count * c.elemSize());
                    accIsBuf = false;
                    // first child: acc = buf (op) received, so buf is never written
                    for (long off = 0; off < count; off += chunk) {
                        long n = Math.min(chunk, count - off);
                        MemorySegment got = c.elems(in, 0, n);
                        c.recv(child, got);
                        c.reduce(c.elems(acc, off, n), c.elems(buf, off, n), got, n);
                    }
                    continue;
                }
                for (long off = 0; off < count; off += chunk) {
                    long n = Math.min(chunk, count - off);
                    c.recvReduce(0, child, c.elems(acc, off, n), in);
                }
            }
        }
    }
}
