package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Recursive-doubling all-gather (Thakur et al. 2005) over p' = largest power of two <= p core ranks: at distance
 * d = 1, 2, 4, ... core rank k swaps everything it has with core rank k xor d, doubling its range each time.
 *
 * <p>Non-powers of two: with rem = p - p', even rank r < 2·rem first hands its block to r+1 (core rank r/2, which
 * then owns blocks r and r+1 — core ranges stay contiguous), and gets the whole result back at the end.
 *
 * <p>Cost: {@code log2(p')α + ((p-1)/p)nβ}; add {@code 2α + (n/p + n)β} for the fold when p is not a power of two.
 */
public final class RecursiveDoublingAllGather implements AllGatherAlgorithm {
    public static final RecursiveDoublingAllGather INSTANCE = new RecursiveDoublingAllGather();

    @Override public String name() { return "recursivedoubling"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        if (p == 1) return 0;
        int q = Algorithm.floorPow2(p);
        double t = 0;
        for (int d = 1; d < q; d *= 2) t += m.message((double) n * d / q);
        if (q != p) t += m.message((double) n / p) + m.message(n);
        return t;
    }

    @Override
    public void allGather(CollectiveContext c, MemorySegment in, MemorySegment out) {
        int p = c.size(), r = c.rank();
        long b = in.byteSize();
        if (b == 0) return;
        Fold fold = Fold.of(p);
        int q = fold.q();
        if (fold.sitsOut(r)) {
            c.sendChunked(r + 1, in);
            c.recvChunked(r + 1, out);
            return;
        }
        MemorySegment.copy(in, 0, out, r * b, b);
        if (fold.folds(r)) c.recvChunked(r - 1, out.asSlice((r - 1) * b, b));
        int k = fold.coreRank(r);
        for (int d = 1; d < q; d *= 2) {
            int partner = k ^ d;
            int mine = k & ~(d - 1), theirs = partner & ~(d - 1);
            long ms = fold.firstBlock(mine) * b, me = fold.firstBlock(mine + d) * b;
            long ts = fold.firstBlock(theirs) * b, te = fold.firstBlock(theirs + d) * b;
            int peer = fold.groupRank(partner);
            c.sendRecvChunked(peer, out.asSlice(ms, me - ms), peer, out.asSlice(ts, te - ts));
        }
        if (fold.folds(r)) c.sendChunked(r - 1, out);
    }

}
