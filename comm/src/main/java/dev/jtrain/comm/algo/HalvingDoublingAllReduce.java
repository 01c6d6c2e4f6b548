package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

import static dev.jtrain.comm.algo.CollectiveContext.blockStart;

/**
 * Rabenseifner's all-reduce (Thakur, Rabenseifner, Gropp 2005): reduce-scatter by recursive halving, then
 * all-gather by recursive doubling, over p' = largest power of two <= p ranks.
 *
 * <p>Non-powers of two use the standard fold: with rem = p - p', each even rank r < 2·rem first sends its whole
 * vector to r+1 and sits out; the odd partner reduces it and takes part as core rank r/2. At the end the partner
 * sends the result back. Core ranks hold p' near-equal blocks; at the level with distance d a core rank exchanges
 * half of its current range with core rank (k xor d), keeping the half that contains block k.
 *
 * <p>Cost: {@code 2·log2(p')α + 2((p'-1)/p')nβ + ((p'-1)/p')nγ}; when p is not a power of two add
 * {@code 2(α + nβ) + nγ} for the fold.
 */
public final class HalvingDoublingAllReduce implements AllReduceAlgorithm {
    public static final HalvingDoublingAllReduce INSTANCE = new HalvingDoublingAllReduce();

    @Override public String name() { return "halvingdoubling"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        if (p == 1) return 0;
        int q = Algorithm.floorPow2(p);
        int steps = Algorithm.ceilLog2(q);
        double t = 0;
        for (int i = 1; i <= steps; i++) t += 2 * m.message(n / (double) (1L << i));
        t += ((q - 1.0) / q) * n * m.gammaSecondsPerByte();
        if (q != p) t += 2 * m.message(n) + n * m.gammaSecondsPerByte();
        return t;
    }

    @Override
    public double predictSeconds(Fabric f, int p, long n) {
        if (!f.spansHosts() || p == 1) return predictSeconds(f.flat(), p, n);
        Fold fold = Fold.of(p);
        int q = fold.q();
        double t = 0;
        int level = 1;
        for (int d = q / 2; d >= 1; d /= 2, level++) {
            final int dist = d;
            // The same pairs exchange the same block size once halving and once doubling.
            t += 2 * f.exchangeSeconds(r -> fold.sitsOut(r) ? -1 : fold.groupRank(fold.coreRank(r) ^ dist), n / (double) (1L << level));
        }
        t += ((q - 1.0) / q) * n * f.flat().gammaSecondsPerByte();
        if (fold.rem() > 0) t += 2 * f.exchangeSeconds(r -> fold.sitsOut(r) ? r + 1 : -1, n) + n * f.flat().gammaSecondsPerByte();
        return t;
    }

    @Override
    public void allReduce(CollectiveContext c, MemorySegment buf, long count) {
        int p = c.size(), r = c.rank();
        if (p == 1 || count == 0) return;
        Fold fold = Fold.of(p);
        int q = fold.q();
        long chunk = c.chunkElems();
        MemorySegment scratch = c.scratch(0, Math.min(chunk, count) * c.elemSize());
        // Fold the extra ranks into their odd partners.
        if (fold.folds(r)) {
            if (fold.sitsOut(r)) {
                for (long off = 0; off < count; off += chunk) c.send(r + 1, c.elems(buf, off, Math.min(chunk, count - off)));
                c.recvChunked(r + 1, buf);
                return;
            }
            receiveAndReduce(c, r - 1, buf, 0, count, scratch, chunk);
        }
        int k = fold.coreRank(r);
        // Reduce-scatter by recursive halving: at distance d the current range is 2d blocks aligned to 2d.
        for (int d = q / 2; d >= 1; d /= 2) {
            int partner = k ^ d;
            int lo = k & ~(2 * d - 1), mid = lo + d;
            boolean keepLow = (k & d) == 0;
            int keepFirst = keepLow ? lo : mid, sendFirst = keepLow ? mid : lo;
            long keepStart = blockStart(count, q, keepFirst), keepEnd = blockStart(count, q, keepFirst + d);
            long sendStart = blockStart(count, q, sendFirst), sendEnd = blockStart(count, q, sendFirst + d);
            exchangeAndReduce(c, fold.groupRank(partner), buf, sendStart, sendEnd - sendStart,
                    keepStart, keepEnd - keepStart, scratch, chunk);
        }
        // All-gather by recursive doubling.
        for (int d = 1; d < q; d *= 2) {
            int partner = k ^ d;
            int mine = k & ~(d - 1), theirs = partner & ~(d - 1);
            long myStart = blockStart(count, q, mine), myEnd = blockStart(count, q, mine + d);
            long thStart = blockStart(count, q, theirs), thEnd = blockStart(count, q, theirs + d);
            int peer = fold.groupRank(partner);
            c.sendRecv(peer, c.elems(buf, myStart, myEnd - myStart), peer, c.elems(buf, thStart, thEnd - thStart));
        }
        if (fold.folds(r)) c.sendChunked(r - 1, buf);
    }

    private static void receiveAndReduce(CollectiveContext c, int peer, MemorySegment buf, long start, long len,
                                         MemorySegment scratch, long chunk) {
        for (long off = 0; off < len; off += chunk) {
            long n = Math.min(chunk, len - off);
            c.recvReduce(0, peer, c.elems(buf, start + off, n), scratch);
        }
    }

    /** Sends [sendStart, +sendLen) to peer while receiving its copy of [keepStart, +keepLen) and reducing it in. */
    static void exchangeAndReduce(CollectiveContext c, int peer, MemorySegment buf, long sendStart, long sendLen,
                                  long keepStart, long keepLen, MemorySegment scratch, long chunk) {
        for (long off = 0; off < Math.max(sendLen, keepLen); off += chunk) {
            long sn = RingPhases.clamp(sendLen - off, chunk), kn = RingPhases.clamp(keepLen - off, chunk);
            c.sendRecvReduce(peer, c.elems(buf, sendStart + Math.min(off, sendLen), sn), peer,
                    c.elems(buf, keepStart + Math.min(off, keepLen), kn), scratch);
        }
    }
}
