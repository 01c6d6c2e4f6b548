package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Binomial-tree broadcast (MPICH): with relative rank v = (r - root) mod p, a rank receives from v minus its lowest
 * set bit, then sends to v + d for every d below that bit, largest first. The message is sent in chunks, which does
 * not pipeline across levels (each level forwards only after receiving all) but bounds message size.
 *
 * <p>Cost: {@code ceil(log2 p)(α + nβ)}.
 */
public final class BinomialBroadcast implements BroadcastAlgorithm {
    public static final BinomialBroadcast INSTANCE = new BinomialBroadcast();

    @Override public String name() { return "binomial"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) { return Algorithm.ceilLog2(p) * m.message(n); }

    @Override
    public void broadcast(CollectiveContext c, MemorySegment buf, int root) {
        int p = c.size();
        if (p == 1 || buf.byteSize() == 0) return;
        int v = Math.floorMod(c.rank() - root, p);
        long chunk = c.chunkBytes(), n = buf.byteSize();
        int d = 1;
        while (d < p) {
            if ((v & d) != 0) {
                int parent = (v - d + root) % p;
                for (long off = 0; off < n; off += chunk) c.recv(parent, buf.asSlice(off, Math.min(chunk, n - off)));
                break;
            }
            d <<= 1;
        }
        for (d >>= 1; d > 0; d >>= 1) {
            if (v + d < p) {
                int child = (v + d + root) % p;
                for (long off = 0; off < n; off += chunk) c.send(child, buf.asSlice(off, Math.min(chunk, n - off)));
            }
        }
    }
}
