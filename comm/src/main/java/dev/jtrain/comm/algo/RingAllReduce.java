package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

import static dev.jtrain.comm.algo.CollectiveContext.blockLength;
import static dev.jtrain.comm.algo.CollectiveContext.blockStart;

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
 * <p>Cost: {@code 2(p-1)α + 2((p-1)/p)nβ + ((p-1)/p)nγ}, plus α per extra chunk.
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
    public void allReduce(CollectiveContext c, MemorySegment buf, long count) {
        int p = c.size(), r = c.rank();
        if (p == 1 || count == 0) return;
        int right = (r + 1) % p, left = (r - 1 + p) % p;
        long chunk = c.chunkElems();
        MemorySegment scratch = c.scratch(0, Math.min(chunk, (count + p - 1) / p) * c.elemSize());
        for (int s = 0; s < p - 1; s++) {
            int sendBlock = Math.floorMod(r - s, p), recvBlock = Math.floorMod(r - s - 1, p);
            long sendStart = blockStart(count, p, sendBlock), sendLen = blockLength(count, p, sendBlock);
            long recvStart = blockStart(count, p, recvBlock), recvLen = blockLength(count, p, recvBlock);
            for (long off = 0; off < Math.max(sendLen, recvLen); off += chunk) {
                long sn = clamp(sendLen - off, chunk), rn = clamp(recvLen - off, chunk);
                MemorySegment acc = c.elems(buf, recvStart + Math.min(off, recvLen), rn);
                c.sendRecvReduce(right, c.elems(buf, sendStart + Math.min(off, sendLen), sn), left, acc, scratch);
            }
        }
        for (int s = 0; s < p - 1; s++) {
            int sendBlock = Math.floorMod(r + 1 - s, p), recvBlock = Math.floorMod(r - s, p);
            long sendStart = blockStart(count, p, sendBlock), sendLen = blockLength(count, p, sendBlock);
            long recvStart = blockStart(count, p, recvBlock), recvLen = blockLength(count, p, recvBlock);
            for (long off = 0; off < Math.max(sendLen, recvLen); off += chunk) {
                long sn = clamp(sendLen - off, chunk), rn = clamp(recvLen - off, chunk);
                c.sendRecv(right, c.elems(buf, sendStart + Math.min(off, sendLen), sn), left, c.elems(buf, recvStart + Math.min(off, recvLen), rn));
            }
        }
    }

    static long clamp(long remaining, long chunk) { return Math.max(0, Math.min(remaining, chunk)); }
}
