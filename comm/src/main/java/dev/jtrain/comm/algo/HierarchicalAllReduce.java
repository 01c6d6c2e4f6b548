package dev.jtrain.comm.algo;

import dev.jtrain.comm.topology.HostTopology;
import dev.jtrain.comm.transport.SegmentAccess;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import static dev.jtrain.comm.algo.CollectiveContext.blockLength;
import static dev.jtrain.comm.algo.CollectiveContext.blockStart;

/**
 * Two-level all-reduce for a group spread over H hosts with L ranks each (the hierarchical scheme of Horovod's
 * {@code HOROVOD_HIERARCHICAL_ALLREDUCE}, NCCL's intra-node/inter-node split and "2D-torus all-reduce", Mikami et
 * al. 2018):
 * <ol>
 *   <li>ring reduce-scatter among the L ranks of each host: local rank i holds block b(i) of L, reduced over its host;
 *   <li>ring all-reduce of that block among the H ranks with local index i, one per host (a "rail"): the L rails run
 *       at once, each on its own connection, and together put exactly {@code 2(H-1)/H · n} through each host link
 *       each way, the bound for any all-reduce across H hosts;
 *   <li>ring all-gather among the L ranks of each host.
 * </ol>
 * A flat ring over the same ranks puts {@code 2(p-1)/p · n} through the host link (1.5n instead of n for 2 hosts × 2
 * ranks); recursive halving, whose first step pairs every rank with one on the other host, 2n.
 *
 * <p>Needs the same number of ranks (at least 2) on every host, and more than one host; otherwise there is nothing
 * to gain, the prediction is infinite so it is never chosen automatically, and a forced call runs {@link RingAllReduce}.
 * Every element is reduced once along one path and then copied, so all ranks end with identical bits.
 *
 * <p>Cost: {@code 2(L-1)·[α_i + (n/L)β_i] + ((L-1)/L)nγ} within hosts plus {@code 2(H-1)·[α_o + (n/(LH))·L·β_o]
 * + ((H-1)/(LH))nγ} between them, the L rails sharing each host link. Cut into s segments and pipelined (below),
 * the two overlap: {@code max(within, between) + within/s}.
 */
public final class HierarchicalAllReduce extends TwoLevel implements AllReduceAlgorithm {
    public static final HierarchicalAllReduce INSTANCE = new HierarchicalAllReduce();

    @Override
    double predict(Fabric f, int local, int hosts, int p, long n) {
        double hostBlock = (double) n / local, railBlock = hostBlock / hosts;
        double gamma = f.flat().gammaSecondsPerByte();
        double within = 2.0 * (local - 1) * f.intraHost().message(hostBlock) + (local - 1) * hostBlock * gamma;
        double between = 2.0 * (hosts - 1) * railStep(f, local, railBlock) + (hosts - 1) * railBlock * gamma;
        int segments = segments(n);
        return segments == 1 ? within + between : Math.max(within, between) + within / segments;
    }

    @Override
    public void allReduce(CollectiveContext c, MemorySegment buf, long count) {
        HostTopology t = c.topology();
        int local = ranksPerHost(t);
        if (local < 2) {
            RingAllReduce.INSTANCE.allReduce(c, buf, count);
            return;
        }
        if (count == 0) return;
        int segments = segments(count * c.elemSize());
        if (segments == 1 || !SegmentAccess.anyThreadMayAccess(buf)) {
            Plan plan = Plan.of(c, t, local, buf, count, 1);
            plan.reduceScatterWithinHost(c, 0);
            plan.allReduceAlongRail(c, 0);
            plan.allGatherWithinHost(c, 0);
        } else {
            pipelined(c, Plan.of(c, t, local, buf, count, segments));
        }
    }

    /**
     * The buffer is cut into segments. This thread reduce-scatters every segment within the host, then all-gathers each
     * one as soon as its rail all-reduce is done. The rail all-reduces run on {@link #RAIL_LANES} helper threads, each
     * on its own tag, segment k on lane {@code k mod RAIL_LANES}: while one lane waits for its exchange to complete,
     * the other's message is already on the wire, so the host link does not idle for a round trip between segments.
     * All orders are fixed and the same on every rank, and each lane talks to its own (peer, tag) pairs, so no thread
     * waits on another's messages: the intra-host rings hide behind the slower host link except for the first
     * reduce-scatter and the last all-gather, {@code 1/segments} of the intra-host time.
     */
    private static void pipelined(CollectiveContext c, Plan plan) {
        int segments = plan.segments;
        CompletableFuture<?>[] scattered = new CompletableFuture<?>[segments], railed = new CompletableFuture<?>[segments];
        for (int k = 0; k < segments; k++) {
            scattered[k] = new CompletableFuture<>();
            railed[k] = new CompletableFuture<>();
        }
        Thread[] rails = new Thread[RAIL_LANES];
        for (int j = 0; j < RAIL_LANES; j++) {
            int first = j;
            CollectiveContext lane = c.lane(j + 1);
            rails[j] = Thread.ofVirtual().name("jtrain-rail" + j + "-r" + c.rank()).start(() -> {
                int k = first;
                try {
                    for (; k < segments; k += RAIL_LANES) {
                        await(scattered[k]);
                        plan.allReduceAlongRail(lane, k);
                        railed[k].complete(null);
                    }
                } catch (Throwable e) {
                    for (; k < segments; k += RAIL_LANES) railed[k].completeExceptionally(e);
                }
            });
        }
        int k = 0;
        try {
            for (; k < segments; k++) {
                plan.reduceScatterWithinHost(c, k);
                scattered[k].complete(null);
            }
            for (int g = 0; g < segments; g++) {
                await(railed[g]);
                plan.allGatherWithinHost(c, g);
            }
        } catch (Throwable e) {
            for (; k < segments; k++) scattered[k].completeExceptionally(e); // lets the rail threads end
            throw e;
        }
        for (Thread t : rails) joinQuietly(t);
    }

    /** Rail all-reduces in flight at once (helper threads, one tag each). */
    static final int RAIL_LANES = 2;

    /** Segments of at least {@link #MIN_SEGMENT_BYTES}, at most {@link #MAX_SEGMENTS}. */
    static int segments(long bytes) { return (int) Math.max(1, Math.min(MAX_SEGMENTS, bytes / MIN_SEGMENT_BYTES)); }

    /**
     * Fewer, larger segments pay the per-message latency fewer times; more segments expose less of the intra-host
     * time (1/segments of it). Segments of at least 1 MiB keep each rail message in the hundreds of KiB; across 2
     * hosts at 2 Gbit/s, 64 MiB in 32 segments came within 1% of the TCP payload bound, 0.6% closer than 16
     * (bench/MEASUREMENTS.md, "rail segments").
     */
    static final int MAX_SEGMENTS = 32;
    static final long MIN_SEGMENT_BYTES = 1 << 20;

    private static void await(CompletableFuture<?> f) {
        try {
            f.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            if (e.getCause() instanceof Error r) throw r;
            throw e;
        }
    }

    private static void joinQuietly(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Where each segment, this rank's block of it and this rank's rings lie. */
    private record Plan(int segments, long count, MemorySegment buf, int[] hostRing, int localIndex, int[] railRing, int host,
                        int ownedBlock, int local) {
        static Plan of(CollectiveContext c, HostTopology t, int local, MemorySegment buf, long count, int segments) {
            int me = c.rank(), i = t.localIndex(me), host = t.hostOf(me);
            return new Plan(segments, count, buf, t.ranksOn(host), i, t.rail(i), host, RingPhases.ownedBlock(i, local), local);
        }

        long segStart(int k) { return blockStart(count, segments, k); }

        long segLength(int k) { return blockLength(count, segments, k); }

        void reduceScatterWithinHost(CollectiveContext c, int k) {
            RingPhases.reduceScatter(c, hostRing, localIndex, buf, segStart(k), segLength(k));
        }

        void allReduceAlongRail(CollectiveContext c, int k) {
            long len = segLength(k);
            long start = segStart(k) + blockStart(len, local, ownedBlock), blockLen = blockLength(len, local, ownedBlock);
            RingPhases.reduceScatter(c, railRing, host, buf, start, blockLen);
            RingPhases.allGather(c, railRing, host, buf, start, blockLen);
        }

        void allGatherWithinHost(CollectiveContext c, int k) {
            RingPhases.allGather(c, hostRing, localIndex, buf, segStart(k), segLength(k));
        }
    }
}
