package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

import static dev.jtrain.comm.algo.CollectiveContext.blockLength;
import static dev.jtrain.comm.algo.CollectiveContext.blockStart;

/**
 * The two halves of a ring all-reduce (Patarasuk and Yuan 2009) over any ring of group ranks and any element range
 * of the buffer, so a flat ring ({@link RingAllReduce}) and the rings inside a hierarchical all-reduce
 * ({@link HierarchicalAllReduce}) share one implementation.
 *
 * <p>The range is cut into m = ring length near-equal blocks. After {@link #reduceScatter} the member at ring
 * position i holds block (i+1) mod m reduced over the ring; {@link #allGather} starts from that state and leaves every
 * member with every block.
 */
final class RingPhases {
    private RingPhases() { }

    /**
     * Reduce-scatter, s = 0..m-2: send block (i-s), receive block (i-s-1) and reduce it into the buffer (as it arrives
     * where the transport can, see {@link CollectiveContext#sendRecvReduce}). Chunked, so the scratch block stays in
     * cache while it is reduced.
     */
    static void reduceScatter(CollectiveContext c, int[] ring, int i, MemorySegment buf, long first, long count) {
        int m = ring.length;
        if (m == 1 || count == 0) return;
        int right = ring[(i + 1) % m], left = ring[(i - 1 + m) % m];
        long chunk = c.chunkElems();
        MemorySegment scratch = c.scratch(0, Math.min(chunk, (count + m - 1) / m) * c.elemSize());
        for (int s = 0; s < m - 1; s++) {
            int sendBlock = Math.floorMod(i - s, m), recvBlock = Math.floorMod(i - s - 1, m);
            long sendStart = first + blockStart(count, m, sendBlock), sendLen = blockLength(count, m, sendBlock);
            long recvStart = first + blockStart(count, m, recvBlock), recvLen = blockLength(count, m, recvBlock);
            for (long off = 0; off < Math.max(sendLen, recvLen); off += chunk) {
                long sn = clamp(sendLen - off, chunk), rn = clamp(recvLen - off, chunk);
                MemorySegment acc = c.elems(buf, recvStart + Math.min(off, recvLen), rn);
                c.sendRecvReduce(right, c.elems(buf, sendStart + Math.min(off, sendLen), sn), left, acc, scratch);
            }
        }
    }

    /** All-gather, s = 0..m-2: send block (i+1-s), receive block (i-s) straight into the buffer. */
    static void allGather(CollectiveContext c, int[] ring, int i, MemorySegment buf, long first, long count) {
        int m = ring.length;
        if (m == 1 || count == 0) return;
        int right = ring[(i + 1) % m], left = ring[(i - 1 + m) % m];
        long chunk = c.chunkElems();
        for (int s = 0; s < m - 1; s++) {
            int sendBlock = Math.floorMod(i + 1 - s, m), recvBlock = Math.floorMod(i - s, m);
            long sendStart = first + blockStart(count, m, sendBlock), sendLen = blockLength(count, m, sendBlock);
            long recvStart = first + blockStart(count, m, recvBlock), recvLen = blockLength(count, m, recvBlock);
            for (long off = 0; off < Math.max(sendLen, recvLen); off += chunk) {
                long sn = clamp(sendLen - off, chunk), rn = clamp(recvLen - off, chunk);
                c.sendRecv(right, c.elems(buf, sendStart + Math.min(off, sendLen), sn),
                        left, c.elems(buf, recvStart + Math.min(off, recvLen), rn));
            }
        }
    }

    /** The block member i holds after {@link #reduceScatter} over a ring of m. */
    static int ownedBlock(int i, int m) { return (i + 1) % m; }

    static long clamp(long remaining, long chunk) { return Math.max(0, Math.min(remaining, chunk)); }

    /** 0..p-1: the flat ring of a whole group. */
    static int[] identity(int p) {
        int[] r = new int[p];
        for (int k = 0; k < p; k++) r[k] = k;
        return r;
    }
}
