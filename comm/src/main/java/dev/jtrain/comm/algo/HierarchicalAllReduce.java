package dev.jtrain.comm.algo;

import dev.jtrain.comm.topology.HostTopology;

import java.lang.foreign.MemorySegment;

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
 * + ((H-1)/(LH))nγ} between them, the L rails sharing each host link.
 */
public final class HierarchicalAllReduce implements AllReduceAlgorithm {
    public static final HierarchicalAllReduce INSTANCE = new HierarchicalAllReduce();

    @Override public String name() { return "hierarchical"; }

    /** Without a topology this is a single-host call: a ring does the same work. */
    @Override
    public double predictSeconds(CostModel m, int p, long n) { return Double.POSITIVE_INFINITY; }

    @Override
    public double predictSeconds(Fabric f, int p, long n) {
        HostTopology t = f.topology();
        int local = ranksPerHost(t);
        if (local < 2) return Double.POSITIVE_INFINITY;
        int hosts = t.hosts();
        double hostBlock = (double) n / local, railBlock = hostBlock / hosts;
        double gamma = f.flat().gammaSecondsPerByte();
        double within = 2.0 * (local - 1) * f.intraHost().message(hostBlock) + (local - 1) * hostBlock * gamma;
        int[] next = railSuccessors(t, local);
        double between = 2.0 * (hosts - 1) * f.exchangeSeconds(r -> next[r], railBlock) + (hosts - 1) * railBlock * gamma;
        return within + between;
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
        int me = c.rank(), host = t.hostOf(me), i = t.localIndex(me);
        int[] hostRing = t.ranksOn(host);
        RingPhases.reduceScatter(c, hostRing, i, buf, 0, count);
        int block = RingPhases.ownedBlock(i, local);
        long start = blockStart(count, local, block), len = blockLength(count, local, block);
        int[] rail = rail(t, i);
        RingPhases.reduceScatter(c, rail, host, buf, start, len);
        RingPhases.allGather(c, rail, host, buf, start, len);
        RingPhases.allGather(c, hostRing, i, buf, 0, count);
    }

    /** Ranks per host when every host has the same number and there is more than one host, else 0. */
    static int ranksPerHost(HostTopology t) {
        if (t == null || !t.spansHosts()) return 0;
        int local = t.ranksOn(0).length;
        for (int h = 1; h < t.hosts(); h++) if (t.ranksOn(h).length != local) return 0;
        return local;
    }

    /** The rank with local index {@code i} on every host, in host order. */
    private static int[] rail(HostTopology t, int i) {
        int[] rail = new int[t.hosts()];
        for (int h = 0; h < rail.length; h++) rail[h] = t.ranksOn(h)[i];
        return rail;
    }

    /** For every rank, its right neighbour on its rail's ring (the same rank on the next host). */
    private static int[] railSuccessors(HostTopology t, int local) {
        int[] next = new int[t.size()];
        for (int i = 0; i < local; i++) {
            int[] rail = rail(t, i);
            for (int h = 0; h < rail.length; h++) next[rail[h]] = rail[(h + 1) % rail.length];
        }
        return next;
    }
}
