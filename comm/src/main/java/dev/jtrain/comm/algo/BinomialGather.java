package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Binomial-tree gather (MPICH's MPIR_Gather_intra_binomial): in relative ranks v = (r - root) mod p, at step
 * k = 1, 2, 4, ... a rank with bit k set sends everything it holds — its own block and its subtree's, blocks
 * [v, v + k) — to v - k and stops; the others receive the subtree [v + k, v + 2k) of v + k after what they hold.
 * The root receives ceil(log2 p) messages instead of p - 1, which is what matters for small blocks.
 *
 * <p>Blocks travel in relative order, so a rank keeps its subtree contiguous in scratch; a root other than 0 receives
 * into scratch too and rotates once into absolute order at the end.
 *
 * <p>Cost (n = gathered size, d = ceil(log2 p)): {@code dα + ((p-1)/p)nβ + (n/2)β}. The last term is the store and
 * forward of the largest subtree: the child at k = p/2 can only send its half after gathering it, where the linear
 * gather streams every block to the root directly, so for large n linear wins.
 */
public final class BinomialGather implements GatherAlgorithm {
    public static final BinomialGather INSTANCE = new BinomialGather();

    @Override public String name() { return "binomial"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        if (p == 1) return 0;
        double forward = p > 2 ? n / 2.0 * m.betaSecondsPerByte() : 0;
        return Algorithm.ceilLog2(p) * m.alphaSeconds() + (double) (p - 1) / p * n * m.betaSecondsPerByte() + forward;
    }

    @Override
    public void gather(CollectiveContext c, MemorySegment in, MemorySegment out, int root) {
        int p = c.size(), r = c.rank();
        long b = in.byteSize();
        int v = Math.floorMod(r - root, p);
        if (p == 1) {
            MemorySegment.copy(in, 0, out, 0, b);
            return;
        }
        // Where this rank collects blocks [v, v + held) in relative order: out itself when that is absolute order.
        int subtree = v == 0 ? p : Math.min(v & -v, p - v);
        MemorySegment held = v == 0 && root == 0 ? out : c.scratch(1, subtree * b);
        MemorySegment.copy(in, 0, held, 0, b);
        int have = 1;
        for (int k = 1; k < p; k <<= 1) {
            if ((v & k) != 0) {
                c.sendChunked(Math.floorMod(v - k + root, p), held.asSlice(0, have * b));
                return;
            }
            if (v + k < p) {
                int blocks = Math.min(k, p - v - k);
                c.recvChunked(Math.floorMod(v + k + root, p), held.asSlice(have * b, blocks * b));
                have += blocks;
            }
        }
        if (held != out) { // root != 0: relative block j belongs to rank (j + root) mod p
            long tail = (long) (p - root) * b;
            MemorySegment.copy(held, 0, out, root * b, tail);
            MemorySegment.copy(held, tail, out, 0, (long) root * b);
        }
    }
}
