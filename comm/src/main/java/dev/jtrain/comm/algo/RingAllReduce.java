package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Ring all-reduce (Patarasuk and Yuan 2009; the "ring" of Baidu allreduce, Horovod, NCCL): a reduce-scatter around
 * the ring, after which rank r owns the reduced block r+1, then an all-gather around the ring. Works for any p.
 *
 * <p>Steps for rank r with right neighbour r+1 and left r-1 (blocks of n/p bytes, cut into chunks):
 * <pre>
 *   reduce-scatter, s = 0..p-2: send block (r-s), receive block (r-s-1) and reduce it into buf
 *                               (as it arrives where the transport can, see CollectiveContext.sendRecvReduce)
 *   all-gather,     s = 0..p-2: send block (r+1-s), receive block (r-s) straight into buf
 * </pre>
 * Every step is a simultaneous send-right/receive-left, so each link carries traffic in both directions at once and
 * the per-rank volume is optimal. Chunking keeps the scratch block in cache while it is reduced.
 *
 * <p>Cost: {@code 2(p-1)α + 2((p-1)/p)nβ + ((p-1)/p)nγ}, plus α per extra chunk. Across hosts each step runs at the
 * pace of the slowest neighbour pair (see {@link Fabric#exchangeSeconds}): with hosts holding consecutive ranks only
 * one rank per host sends off-host, so the host link carries {@code 2((p-1)/p)n} each way.
 */
public final class RingAllReduce implements AllReduceAlgorithm {
    public static final RingAllReduce INSTANCE = new RingAllReduce();

    @Override public String name() { return "ring"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        if (p == 1) return 0;
        double block = (double) n / p;
        return 2.0 * (p - 1) * m.message(block) + (p - 1) * block * m.gammaSecondsPerByte();
    }

    @Override
    public double predictSeconds(Fabric f, int p, long n) {
        if (!f.spansHosts() || p == 1) return predictSeconds(f.flat(), p, n);
        double block = (double) n / p;
        double step = f.exchangeSeconds(r -> (r + 1) % p, block); // every step pairs the same neighbours
        return 2.0 * (p - 1) * step + (p - 1) * block * f.flat().gammaSecondsPerByte();
    }

    @Override
    public void allReduce(CollectiveContext c, MemorySegment buf, long count) {
        int p = c.size();
        if (p == 1 || count == 0) return;
        int[] ring = RingPhases.identity(p);
        RingPhases.reduceScatter(c, ring, c.rank(), buf, 0, count);
        RingPhases.allGather(c, ring, c.rank(), buf, 0, count);
    }
}
