package dev.jtrain.comm.algo;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.ReduceOp;
import dev.jtrain.comm.topology.LinkClass;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Measures α and β per class of link ({@link LinkClass}): for each class present in the
 * group, one pair of ranks joined by that class (two ranks on one host; rank 0 and a rank on another host) does
 * back-to-back exchanges ({@code sendRecv}) — the pattern of a collective's steps, where both sides are active; a
 * ping-pong would instead time how fast an idle rank wakes up — and the pair's lower rank measures γ with a local
 * float32 sum, then broadcasts its figures (and its chunk size) so that every rank selects algorithms from the same
 * models. Collective: every rank of the group must call it (it runs at group start). Warms each path up first (the
 * JIT would otherwise measure the interpreter); takes about a second per class.
 */
public final class CostModelProbe {
    private static final int SMALL = 8, LARGE = 1 << 20, SMALL_ROUNDS = 100, LARGE_ROUNDS = 8, LARGE_MAX_ROUNDS = 400;
    /**
     * Large exchanges are timed over at least this long: eight 1 MiB exchanges over shared memory take about a
     * millisecond, which one burst of the other rank's start-up (its JIT, class loading) covers whole.
     */
    private static final long LARGE_MIN_NANOS = 30_000_000L;
    /** Exchanges before timing: a cold JVM interprets the transport for the first thousand calls or so. */
    private static final int SMALL_WARMUP = 400, LARGE_WARMUP = 3;

    private CostModelProbe() {}

    /** The figures of each link class; null for a class the group does not have. */
    public record LinkCosts(CostModel intraHost, CostModel interHost) {
        /**
         * {@code intra: <figures>; inter: <figures>} ({@link CostModel#parse}), a class the group lacks left out: the
         * form of {@code JTRAIN_LINK_COSTS}, which a run prints after measuring.
         */
        public static LinkCosts parse(String text) {
            CostModel intra = null, inter = null;
            for (String part : text.split(";")) {
                if (part.isBlank()) continue;
                int colon = part.indexOf(':');
                String kind = colon < 0 ? "" : part.substring(0, colon).trim();
                if (!kind.equals("intra") && !kind.equals("inter")) {
                    throw new IllegalArgumentException("link figures '" + text.trim() + "': each part starts with 'intra:' "
                            + "(ranks on one host) or 'inter:' (ranks on different hosts), got '" + part.trim() + "'");
                }
                CostModel m = CostModel.parse(part.substring(colon + 1));
                if (kind.equals("intra")) intra = m;
                else inter = m;
            }
            if (intra == null && inter == null) throw new IllegalArgumentException("link figures '" + text.trim() + "' name no link class");
            return new LinkCosts(intra, inter);
        }

        /** The form {@link #parse} reads. */
        public String format() {
            return (intraHost == null ? "" : "intra: " + intraHost) + (intraHost != null && interHost != null ? "; " : "")
                    + (interHost == null ? "" : "inter: " + interHost);
        }
    }

    /**
     * @param chunkBytes this rank's choice of chunk size; the measuring rank's is broadcast with the figures
     * @param intraPair  two group ranks on one host, or null
     * @param interPair  two group ranks on different hosts, or null
     */
    public static LinkCosts measure(CollectiveContext c, long chunkBytes, int[] intraPair, int[] interPair) {
        if (c.size() == 1) return new LinkCosts(CostModel.typicalSharedMemory(chunkBytes), null);
        ReduceKernels.warmUp();
        CostModel intra = intraPair == null ? null : measurePair(c, chunkBytes, intraPair[0], intraPair[1]);
        CostModel inter = interPair == null ? null : measurePair(c, chunkBytes, interPair[0], interPair[1]);
        return new LinkCosts(intra, inter);
    }

    private static CostModel measurePair(CollectiveContext c, long chunkBytes, int a, int b) {
        MemorySegment fig = c.scratch(2, 32);
        if (c.rank() == a || c.rank() == b) {
            int peer = c.rank() == a ? b : a;
            boolean lead = c.rank() == a;
            MemorySegment big = c.scratch(3, LARGE), in = c.scratch(1, LARGE);
            warmUpExchanges(c, lead, peer, big.asSlice(0, SMALL), in.asSlice(0, SMALL));
            double alpha = exchange(c, lead, peer, big.asSlice(0, SMALL), in.asSlice(0, SMALL), 0, SMALL_ROUNDS, SMALL_ROUNDS, 0);
            double large = exchange(c, lead, peer, big, in, LARGE_WARMUP, LARGE_ROUNDS, LARGE_MAX_ROUNDS, LARGE_MIN_NANOS);
            double beta = Math.max(1e-12, (large - alpha) / LARGE);
            double gamma = lead ? reduceTime(c) : 0;
            fig.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0, alpha);
            fig.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, 8, beta);
            fig.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, 16, gamma);
            fig.set(ValueLayout.JAVA_LONG_UNALIGNED, 24, chunkBytes);
        }
        BinomialBroadcast.INSTANCE.broadcast(c, fig, a);
        return new CostModel(fig.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0), fig.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 8),
                fig.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 16), fig.get(ValueLayout.JAVA_LONG_UNALIGNED, 24));
    }

    /**
     * Exchanges until the JIT has compiled the transport path: at least {@link #SMALL_WARMUP}, then until 1 s or
     * 20,000 exchanges. The pair's lead decides when to stop and says so in byte 0 of its message, so both ranks stop
     * after the same exchange.
     */
    private static void warmUpExchanges(CollectiveContext c, boolean lead, int peer, MemorySegment out, MemorySegment in) {
        long stop = System.nanoTime() + 1_000_000_000L;
        for (int i = 0; ; i++) {
            boolean more = i < SMALL_WARMUP || (i < 20_000 && System.nanoTime() < stop);
            if (lead) out.set(ValueLayout.JAVA_BYTE, 0, (byte) (more ? 1 : 0));
            c.sendRecv(peer, out, peer, in);
            boolean go = lead ? more : in.get(ValueLayout.JAVA_BYTE, 0) != 0;
            if (!go) return;
        }
    }

    /**
     * Median seconds of one simultaneous exchange of {@code out}/{@code in} (sent whole, not chunked), after {@code
     * warmup} untimed ones: at least {@code minRounds} and {@code minNanos}, at most {@code maxRounds}. The lead decides
     * when to stop and says so in byte 0 of its message, so both ranks stop after the same exchange.
     */
    private static double exchange(CollectiveContext c, boolean lead, int peer, MemorySegment out, MemorySegment in,
                                   int warmup, int minRounds, int maxRounds, long minNanos) {
        double[] t = new double[maxRounds];
        int n = 0;
        long start = 0;
        for (int i = -warmup; ; i++) {
            if (i == 0) start = System.nanoTime();
            boolean more = i < 0 || i + 1 < minRounds || (i + 1 < maxRounds && System.nanoTime() - start < minNanos);
            if (lead) out.set(ValueLayout.JAVA_BYTE, 0, (byte) (more ? 1 : 0));
            long t0 = System.nanoTime();
            c.sendRecv(peer, out, peer, in);
            if (i >= 0) t[n++] = (System.nanoTime() - t0) * 1e-9;
            boolean go = lead ? more : in.get(ValueLayout.JAVA_BYTE, 0) != 0;
            if (!go) break;
        }
        Arrays.sort(t, 0, n);
        return t[n / 2];
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
