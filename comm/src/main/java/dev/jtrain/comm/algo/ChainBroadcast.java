package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Pipelined chain broadcast: relative ranks 0 → 1 → ... → p-1; each rank forwards chunk i to its successor right
 * after receiving it, so after a fill of p-2 steps all links carry chunks at once. Bandwidth-optimal for large
 * messages (each byte crosses each link once), latency linear in p.
 *
 * <p>Cost with k chunks: {@code (p-2+k)(α + (n/k)β)}.
 */
public final class ChainBroadcast implements BroadcastAlgorithm {
    public static final ChainBroadcast INSTANCE = new ChainBroadcast();

    @Override public String name() { return "chain"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        if (p == 1) return 0;
        long k = m.chunks(n);
        return (p - 2 + k) * (m.alphaSeconds() + (double) n / k * m.betaSecondsPerByte());
    }

    @Override
    public void broadcast(CollectiveContext c, MemorySegment buf, int root) {
        int p = c.size();
        if (p == 1 || buf.byteSize() == 0) return;
        int v = Math.floorMod(c.rank() - root, p);
        int prev = (c.rank() - 1 + p) % p, next = (c.rank() + 1) % p;
        long chunk = c.chunkBytes(), n = buf.byteSize();
        for (long off = 0; off < n; off += chunk) {
            MemorySegment piece = buf.asSlice(off, Math.min(chunk, n - off));
            if (v > 0) c.recv(prev, piece);
            if (v < p - 1) c.send(next, piece);
        }
    }
}
