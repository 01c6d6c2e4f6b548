package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Recursive-halving reduce-scatter (Thakur et al. 2005) over p' = largest power of two <= p core ranks: at
 * distance d = p'/2, ..., 1 core rank k sends the half of its current range it does not keep to core rank
 * k xor d and reduces the half it keeps with what it receives. The first step reads the input directly; later
 * steps work in a pooled scratch copy, so the input is never written.
 *
 * <p>Non-powers of two: with rem = p - p', even rank r < 2·rem sends its whole input to r+1 (core rank r/2, which
 * owns blocks r and r+1 — core ranges stay contiguous) and receives its finished block at the end.
 *
 * <p>Cost: {@code log2(p')α + ((p'-1)/p')n(β + γ)}; add {@code 2α + (n + n/p)β + nγ} for the fold.
 */
public final class RecursiveHalvingReduceScatter implements ReduceScatterAlgorithm {
    public static final RecursiveHalvingReduceScatter INSTANCE = new RecursiveHalvingReduceScatter();

    @Override public String name() { return "recursivehalving"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        if (p == 1) return 0;
        int q = Algorithm.floorPow2(p);
        double t = 0;
        for (int d = q / 2; d >= 1; d /= 2) t += m.message((double) n * d / q) + (double) n * d / q * m.gammaSecondsPerByte();
        if (q != p) t += m.message(n) + n * m.gammaSecondsPerByte() + m.message((double) n / p);
        return t;
    }

    @Override
    public void reduceScatter(CollectiveContext c, MemorySegment in, MemorySegment out, long m) {
        int p = c.size(), r = c.rank();
        if (m == 0) return;
        if (p == 1) {
            MemorySegment.copy(in, 0, out, 0, out.byteSize());
            return;
        }
        Fold fold = Fold.of(p);
        int q = fold.q();
        long total = m * p, chunk = c.chunkElems();
        if (fold.sitsOut(r)) {
            for (long off = 0; off < total; off += chunk) c.send(r + 1, c.elems(in, off, Math.min(chunk, total - off)));
            c.recvChunked(r + 1, out);
            return;
        }
        MemorySegment got = c.scratch(0, Math.min(chunk, total) * c.elemSize());
        MemorySegment work = c.scratch(1, total * c.elemSize());
        MemorySegment src = in;
        if (fold.folds(r)) {
            for (long off = 0; off < total; off += chunk) {
                long n = Math.min(chunk, total - off);
                MemorySegment g = c.elems(got, 0, n);
                c.recv(r - 1, g);
                c.reduce(c.elems(work, off, n), c.elems(in, off, n), g, n);
            }
            src = work;
        }
        int k = fold.coreRank(r);
        for (int d = q / 2; d >= 1; d /= 2) {
            int lo = k & ~(2 * d - 1), mid = lo + d;
            boolean keepLow = (k & d) == 0;
            int keep = keepLow ? lo : mid, give = keepLow ? mid : lo;
            long ks = fold.firstBlock(keep) * m, ke = fold.firstBlock(keep + d) * m;
            long gs = fold.firstBlock(give) * m, ge = fold.firstBlock(give + d) * m;
            int peer = fold.groupRank(k ^ d);
            for (long off = 0; off < Math.max(ke - ks, ge - gs); off += chunk) {
                long sn = RingPhases.clamp(ge - gs - off, chunk), kn = RingPhases.clamp(ke - ks - off, chunk);
                MemorySegment g = c.elems(got, 0, kn);
                c.sendRecv(peer, c.elems(src, gs + Math.min(off, ge - gs), sn), peer, g);
                long k0 = ks + Math.min(off, ke - ks);
                c.reduce(c.elems(work, k0, kn), c.elems(src, k0, kn), g, kn);
            }
            src = work;
        }
        if (fold.folds(r)) c.sendChunked(r - 1, c.elems(work, (long) (r - 1) * m, m));
        MemorySegment.copy(work, (long) r * m * c.elemSize(), out, 0, m * c.elemSize());
    }
}
