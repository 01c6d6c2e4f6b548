package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * Double binary tree all-reduce (the NCCL 2.4 idea): the first half of the vector is reduced up tree A and
 * broadcast down it, the second half goes through tree B (see {@link DoubleBinaryTree}); each half is cut into
 * chunks that are pipelined up and down the tree, so latency is logarithmic in p while, for large vectors, every
 * rank moves about the same bytes as a ring.
 *
 * <p>Order on every rank: for each chunk j, tree A then tree B — receive from children and reduce, send to parent;
 * then, after all chunks went up, the same walk down. Within a tree messages only flow one way per phase, so this
 * order is deadlock-free even when sends block. Unlike NCCL the two phases do not overlap and one thread drives
 * both trees, so a rank interior in one tree serialises ~3 transfers per chunk step.
 *
 * <p>Cost with d = ceil(log2 p) levels, k chunks per half and s = n/(2k):
 * {@code 2(d + k - 1)(3α + 3sβ) + (d + k - 1)·2sγ} — about {@code 3nβ} for large n (ring: {@code 2nβ}), about
 * {@code 6dα} for small n (ring: {@code 2(p-1)α}).
 */
public final class DoubleBinaryTreeAllReduce implements AllReduceAlgorithm {
    public static final DoubleBinaryTreeAllReduce INSTANCE = new DoubleBinaryTreeAllReduce();

    @Override public String name() { return "doubletree"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        if (p == 1) return 0;
        int d = Algorithm.ceilLog2(p);
        long k = m.chunks(n / 2.0);
        double s = n / (2.0 * k);
        double steps = d + k - 1;
        return 2 * steps * (3 * m.alphaSeconds() + 3 * s * m.betaSecondsPerByte()) + steps * 2 * s * m.gammaSecondsPerByte();
    }

    @Override
    public void allReduce(CollectiveContext c, MemorySegment buf, long count) {
        int p = c.size(), r = c.rank();
        if (p == 1 || count == 0) return;
        int[][] nodes = {DoubleBinaryTree.node(0, r, p), DoubleBinaryTree.node(1, r, p)};
        long half = count / 2;
        long[] start = {0, half}, len = {half, count - half};
        long chunk = c.chunkElems();
        long k = (Math.max(len[0], len[1]) + chunk - 1) / chunk;
        MemorySegment in = c.scratch(0, Math.min(chunk, count) * c.elemSize());
        for (long j = 0; j < k; j++) {
            for (int t = 0; t < 2; t++) {
                long off = j * chunk, n = RingPhases.clamp(len[t] - off, chunk);
                if (n == 0) continue;
                MemorySegment mine = c.elems(buf, start[t] + off, n);
                for (int ci = 1; ci <= 2; ci++) {
                    int child = nodes[t][ci];
                    if (child >= 0) c.recvReduce(t, child, mine, in);
                }
                if (nodes[t][0] >= 0) c.send(t, nodes[t][0], mine);
            }
        }
        for (long j = 0; j < k; j++) {
            for (int t = 0; t < 2; t++) {
                long off = j * chunk, n = RingPhases.clamp(len[t] - off, chunk);
                if (n == 0) continue;
                MemorySegment mine = c.elems(buf, start[t] + off, n);
                if (nodes[t][0] >= 0) c.recv(t, nodes[t][0], mine);
                for (int ci = 1; ci <= 2; ci++) if (nodes[t][ci] >= 0) c.send(t, nodes[t][ci], mine);
            }
        }
    }
}
