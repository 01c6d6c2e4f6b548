package dev.jtrain.comm.algo;

import dev.jtrain.comm.topology.HostTopology;

import java.lang.foreign.MemorySegment;

import static dev.jtrain.comm.algo.RingPhases.clamp;

/**
 * Two-level reduce-scatter for a group spread over H hosts with L ranks each, the reduce-scatter half of
 * {@link HierarchicalAllReduce}'s scheme and the mirror of {@link HierarchicalAllGather}:
 * <ol>
 *   <li>ring reduce-scatter within each host, by rails: after L - 1 steps of H blocks, local rank i holds its host's
 *       sum of the blocks that belong to the ranks of its rail (the ranks with local index i);
 *   <li>ring reduce-scatter along each rail, H - 1 steps, the L rails at once: each rank ends with its own block
 *       summed over every host, and each host link has carried {@code (H-1)/H · n}, the bound.
 * </ol>
 * The input is copied once into scratch, where the sums build up, so it is only read.
 *
 * <p>Needs the same number of ranks (at least 2) on every host and more than one host, else its prediction is
 * infinite and a forced call runs {@link RingReduceScatter}.
 *
 * <p>Cost (b = n/p, a block): {@code (L-1)·H·[α_i + b·(β_i + γ)]} within hosts plus {@code (H-1)·[α_o + L·b·β_o +
 * b·γ]} along the rails (L of them share each host link).
 */
public final class HierarchicalReduceScatter extends TwoLevel implements ReduceScatterAlgorithm {
    public static final HierarchicalReduceScatter INSTANCE = new HierarchicalReduceScatter();

    @Override
    double predict(Fabric f, int local, int hosts, int p, long n) {
        double block = (double) n / p, gamma = f.flat().gammaSecondsPerByte();
        return (local - 1) * hosts * (f.intraHost().message(block) + block * gamma)
                + (hosts - 1) * (railStep(f, local, block) + block * gamma);
    }

    @Override
    public void reduceScatter(CollectiveContext c, MemorySegment in, MemorySegment out, long m) {
        HostTopology t = c.topology();
        int local = ranksPerHost(t);
        if (local < 2) {
            RingReduceScatter.INSTANCE.reduceScatter(c, in, out, m);
            return;
        }
        if (m == 0) return;
        int me = c.rank(), i = t.localIndex(me), host = t.hostOf(me), hosts = t.hosts();
        MemorySegment acc = c.scratch(0, in.byteSize());
        MemorySegment.copy(in, 0, acc, 0, in.byteSize());
        MemorySegment scratch = c.scratch(1, Math.min(c.chunkElems(), m) * c.elemSize());
        int[] ring = t.ranksOn(host);
        int rightL = ring[(i + 1) % local], leftL = ring[(i - 1 + local) % local];
        for (int s = 0; s < local - 1; s++) { // ends owning rail i's blocks, summed over this host
            int sendRail = Math.floorMod(i - s - 1, local), recvRail = Math.floorMod(i - s - 2, local);
            for (int h = 0; h < hosts; h++) step(c, acc, m, t.ranksOn(h)[sendRail], rightL, t.ranksOn(h)[recvRail], leftL, scratch);
        }
        int[] rail = t.rail(i);
        int right = rail[(host + 1) % hosts], left = rail[(host - 1 + hosts) % hosts];
        for (int s = 0; s < hosts - 1; s++) // ends owning this rank's own block, summed over every host
            step(c, acc, m, rail[Math.floorMod(host - s - 1, hosts)], right, rail[Math.floorMod(host - s - 2, hosts)], left, scratch);
        MemorySegment.copy(acc, me * m * c.elemSize(), out, 0, m * c.elemSize());
    }

    /** Sends block {@code send} to {@code to} while block {@code recv} arrives from {@code from} and is added in, chunk by chunk. */
    private static void step(CollectiveContext c, MemorySegment acc, long m, int send, int to, int recv, int from, MemorySegment scratch) {
        long chunk = c.chunkElems();
        for (long off = 0; off < m; off += chunk) {
            long n = clamp(m - off, chunk);
            c.sendRecvReduce(to, c.elems(acc, send * m + off, n), from, c.elems(acc, recv * m + off, n), scratch);
        }
    }
}
