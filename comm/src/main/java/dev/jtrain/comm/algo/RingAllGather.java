package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Ring all-gather: rank r copies its block into place, then for s = 0..p-2 sends block (r-s) to its right
 * neighbour while receiving block (r-s-1) from its left, straight into the output. Any p.
 *
 * <p>Cost (n = size of the whole gathered buffer): {@code (p-1)α + ((p-1)/p)nβ}, plus α per extra chunk.
 */
public final class RingAllGather implements AllGatherAlgorithm {
    public static final RingAllGather INSTANCE = new RingAllGather();

    @Override public String name() { return "ring"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) { return (p - 1) * m.message((double) n / p); }

    @Override
    public void allGather(CollectiveContext c, MemorySegment in, MemorySegment out) {
        int p = c.size(), r = c.rank();
        long b = in.byteSize();
        MemorySegment.copy(in, 0, out, r * b, b);
        if (p == 1 || b == 0) return;
        int right = (r + 1) % p, left = (r - 1 + p) % p;
        for (int s = 0; s < p - 1; s++) {
            int sendBlock = Math.floorMod(r - s, p), recvBlock = Math.floorMod(r - s - 1, p);
            c.sendRecvChunked(right, out.asSlice(sendBlock * b, b), left, out.asSlice(recvBlock * b, b));
        }
    }
}
