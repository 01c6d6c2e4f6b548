package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Binomial-tree scatter (MPICH's MPIR_Scatter_intra_binomial), the mirror of {@link BinomialGather}: in relative
 * ranks v = (r - root) mod p, a rank receives its subtree's blocks [v, v + k) from v - k (k = v's lowest set bit),
 * then, for halving k, hands [v + k, v + 2k) on to v + k and keeps its own block. Every rank receives once; the root
 * sends ceil(log2 p) messages instead of p - 1.
 *
 * <p>Cost (n = scattered size, d = ceil(log2 p)): {@code dα + ((p-1)/p)nβ + (n/2)β}, the last term for the store
 * and forward of the largest subtree (see {@link BinomialGather}); linear wins for large n.
 */
public final class BinomialScatter implements ScatterAlgorithm {
    public static final BinomialScatter INSTANCE = new BinomialScatter();

    @Override public String name() { return "binomial"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) { return BinomialGather.INSTANCE.predictSeconds(m, p, n); }

    @Override
    public void scatter(CollectiveContext c, MemorySegment in, MemorySegment out, int root) {
        int p = c.size(), r = c.rank();
        long b = out.byteSize();
        int v = Math.floorMod(r - root, p);
        if (p == 1) {
            MemorySegment.copy(in, 0, out, 0, b);
            return;
        }
        MemorySegment held; // blocks [v, v + subtree) in relative order
        int k = 1;
        if (v == 0) {
            while (k < p) k <<= 1;
            if (root == 0) {
                held = in;
            } else { // rotate once so every subtree is contiguous: relative block j is rank (j + root) mod p's
                held = c.scratch(1, (long) p * b);
                long tail = (long) (p - root) * b;
                MemorySegment.copy(in, root * b, held, 0, tail);
                MemorySegment.copy(in, 0, held, tail, (long) root * b);
            }
        } else {
            k = v & -v;
            int subtree = Math.min(k, p - v);
            held = subtree == 1 ? out : c.scratch(1, subtree * b);
            c.recvChunked(Math.floorMod(v - k + root, p), held.asSlice(0, subtree * b));
        }
        for (k >>= 1; k > 0; k >>= 1) {
            if (v + k < p) {
                int blocks = Math.min(k, p - v - k);
                c.sendChunked(Math.floorMod(v + k + root, p), held.asSlice(k * b, blocks * b));
            }
        }
        if (held != out) MemorySegment.copy(held, 0, out, 0, b);
    }
}
