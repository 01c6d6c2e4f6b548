package dev.jtrain.comm.algo;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Measures α and β with back-to-back exchanges ({@code sendRecv}) between group ranks 0 and 1 — the pattern of a
 * collective's steps, where both sides are active; a ping-pong would instead time how fast an idle rank wakes up —
 * and γ with a local float32 sum on rank 0, then broadcasts rank 0's figures (and its chunk size) so that every rank
 * selects algorithms from the same model. Collective: every rank of the group must call it (it runs at group start).
 * Warms the path up first (the JIT would otherwise measure the interpreter); takes tens of milliseconds.
 */
public final class CostModelProbe {
    private static final int SMALL = 8, LARGE = 1 << 20, SMALL_ROUNDS = 100, LARGE_ROUNDS = 8;
    /** Exchanges before timing: a cold JVM interprets the transport for the first thousand calls or so. */
    private static final int SMALL_WARMUP = 400, LARGE_WARMUP = 3;

    private CostModelProbe() {}

    /** @param chunkBytes this rank's choice of chunk size; rank 0's is broadcast with the figures */
    public static CostModel measure(CollectiveContext c, long chunkBytes) {
        MemorySegment fig = c.scratch(2, 32);
        if (c.size() == 1) return CostModel.typicalSharedMemory(chunkBytes);
        ReduceKernels.warmUp();
        if (c.rank() <= 1) {
            int peer = 1 - c.rank();
            MemorySegment big = c.scratch(3, LARGE), in = c.scratch(1, LARGE);
            warmUpExchanges(c, peer, big.asSlice(0, SMALL), in.asSlice(0, SMALL));
            double alpha = exchange(c, peer, big.asSlice(0, SMALL), in.asSlice(0, SMALL), 0, SMALL_ROUNDS);
            double large = exchange(c, peer, big, in, LARGE_WARMUP, LARGE_ROUNDS);
            double beta = Math.max(1e-12, (large - alpha) / LARGE);
            double gamma = c.rank() == 0 ? reduceTime(c) : 0;
            fig.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0, alpha);
            fig.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, 8, beta);
            fig.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, 16, gamma);
            fig.set(ValueLayout.JAVA_LONG_UNALIGNED, 24, chunkBytes);
        }
        BinomialBroadcast.INSTANCE.broadcast(c, fig, 0);
        return new CostModel(fig.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0), fig.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 8),
                fig.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 16), fig.get(ValueLayout.JAVA_LONG_UNALIGNED, 24));
    }

    /**
     * Exchanges until the JIT has compiled the transport path: at least {@link #SMALL_WARMUP}, then until 1 s or
     * 20,000 exchanges. Rank 0 decides when to stop and says so in byte 0 of its message, so both ranks stop after
     * the same exchange.
     */
    private static void warmUpExchanges(CollectiveContext c, int peer, MemorySegment out, MemorySegment in) {
        long stop = System.nanoTime() + 1_000_000_000L;
        for (int i = 0; ; i++) {
            boolean more = i < SMALL_WARMUP || (i < 20_000 && System.nanoTime() < stop);
            if (c.rank() == 0) out.set(ValueLayout.JAVA_BYTE, 0, (byte) (more ? 1 : 0));
            c.sendRecv(peer, out, peer, in);
            boolean go = c.rank() == 0 ? more : in.get(ValueLayout.JAVA_BYTE, 0) != 0;
            if (!go) return;
        }
    }

    /** Median seconds of one simultaneous exchange of {@code out}/{@code in} (sent whole, not chunked). */
    private static double exchange(CollectiveContext c, int peer, MemorySegment out, MemorySegment in, int warmup, int rounds) {
        double[] t = new double[rounds];
        for (int i = -warmup; i < rounds; i++) {
            long t0 = System.nanoTime();
            c.sendRecv(peer, out, peer, in);
            if (i >= 0) t[i] = (System.nanoTime() - t0) * 1e-9;
        }
        Arrays.sort(t);
        return t[rounds / 2];
    }

    /**
     * Best time per byte of an 8 MiB float32 sum (after {@link ReduceKernels#warmUp}), repeated for up to 50 ms: the
     * minimum, not the mean, is the figure the compiled kernel shows in steady state. 8 MiB exceeds the caches, as
     * do the vectors for which γ matters (for small ones α dominates anyway).
     */
    private static double reduceTime(CollectiveContext c) {
        int bytes = 8 << 20;
        MemorySegment a = c.scratch(3, bytes);
        a.fill((byte) 0);
        long n = bytes / 4;
        double best = Double.MAX_VALUE;
        long stop = System.nanoTime() + 50_000_000L;
        for (int i = 0; i < 200 && System.nanoTime() < stop; i++) {
            long t0 = System.nanoTime();
            ReduceKernels.apply(DType.FLOAT32, ReduceOp.SUM, a, a, a, n);
            best = Math.min(best, (System.nanoTime() - t0) * 1e-9);
        }
        // The JIT may not have installed the compiled kernel yet (compiler threads starve on a busy 2-core box), so
        // also bound γ by its memory-traffic proxy: a reduction moves 3 bytes per byte where a copy moves 2.
        MemorySegment b = c.scratch(1, bytes);
        double copy = Double.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            long t0 = System.nanoTime();
            MemorySegment.copy(a, 0, b, 0, bytes);
            copy = Math.min(copy, (System.nanoTime() - t0) * 1e-9);
        }
        return Math.min(best, 1.5 * copy) / bytes;
    }
}
