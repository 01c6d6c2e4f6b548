package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Recursive-doubling all-reduce (MPICH's choice for short messages): in round i core rank k swaps its whole
 * vector with core rank k xor 2^i and both reduce, so after log2(p') rounds everyone holds the total. Fewest rounds of
 * any algorithm here (one exchange at p = 2), at the price of moving the whole vector each round — the latency
 * algorithm. Both partners compute {@code a (op) b} and {@code b (op) a}; every op is commutative in IEEE
 * arithmetic, so all ranks end with identical bits.
 *
 * <p>Non-powers of two use the fold of {@link HalvingDoublingAllReduce}: even rank r < 2·rem hands its vector to
 * r+1 first and gets the result back at the end.
 *
 * <p>Cost: {@code log2(p')(α + nβ + nγ)}; add {@code 2(α + nβ) + nγ} when p is not a power of two.
 */
public final class RecursiveDoublingAllReduce implements AllReduceAlgorithm {
    public static final RecursiveDoublingAllReduce INSTANCE = new RecursiveDoublingAllReduce();

    @Override public String name() { return "recursivedoubling"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        if (p == 1) return 0;
        int q = Algorithm.floorPow2(p);
        double t = Algorithm.ceilLog2(q) * (m.message(n) + n * m.gammaSecondsPerByte());
        if (q != p) t += 2 * m.message(n) + n * m.gammaSecondsPerByte();
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
        if (fold.folds(r)) {
            if (r % 2 == 0) {
                for (long off = 0; off < count; off += chunk) c.send(r + 1, c.elems(buf, off, Math.min(chunk, count - off)));
                c.recvChunked(r + 1, buf);
                return;
            }
            for (long off = 0; off < count; off += chunk) {
                long n = Math.min(chunk, count - off);
                MemorySegment in = c.elems(scratch, 0, n);
                c.recv(r - 1, in);
                MemorySegment acc = c.elems(buf, off, n);
                c.reduce(acc, acc, in, n);
            }
        }
        int k = fold.coreRank(r);
        for (int d = 1; d < q; d <<= 1) {
            int peer = fold.groupRank(k ^ d);
            for (long off = 0; off < count; off += chunk) {
                long n = Math.min(chunk, count - off);
                MemorySegment mine = c.elems(buf, off, n), theirs = c.elems(scratch, 0, n);
                c.sendRecv(peer, mine, peer, theirs);
                c.reduce(mine, mine, theirs, n);
            }
        }
        if (fold.folds(r)) c.sendChunked(r - 1, buf);
    }
}
