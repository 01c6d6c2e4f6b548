package dev.jtrain.comm.algo;

import dev.jtrain.comm.topology.HostTopology;

import java.lang.foreign.MemorySegment;

/**
 * Two-level all-gather for a group spread over H hosts with L ranks each, the all-gather half of
 * {@link HierarchicalAllReduce}'s scheme (what NCCL and FSDP's hybrid sharding do across nodes):
 * <ol>
 *   <li>ring all-gather along each rail (the ranks with local index i, one per host): each rank gathers the blocks of
 *       its rail, H - 1 steps, the L rails at once, so each host link carries {@code (H-1)/H · n}, the bound;
 *   <li>ring all-gather within each host, of whole rails: L - 1 steps of H blocks each.
 * </ol>
 * A flat ring over the same ranks has p - 1 steps, each crossing a host link with one block, for all p blocks:
 * {@code (p-1)/p · n} through a host link and p - 1 inter-host latencies instead of H - 1.
 *
 * <p>Needs the same number of ranks (at least 2) on every host and more than one host, else its prediction is
 * infinite and a forced call runs {@link RingAllGather}. Every block is copied, never combined: all ranks end with
 * identical bits.
 *
 * <p>Cost (b = n/p, a block): {@code (H-1)·[α_o + L·b·β_o]} along the rails (L of them share each host link) plus
 * {@code (L-1)·H·[α_i + b·β_i]} within hosts.
 */
public final class HierarchicalAllGather extends TwoLevel implements AllGatherAlgorithm {
    public static final HierarchicalAllGather INSTANCE = new HierarchicalAllGather();

    @Override
    double predict(Fabric f, int local, int hosts, int p, long n) {
        double block = (double) n / p;
        return (hosts - 1) * railStep(f, local, block) + (local - 1) * hosts * f.intraHost().message(block);
    }

    @Override
    public void allGather(CollectiveContext c, MemorySegment in, MemorySegment out) {
        HostTopology t = c.topology();
        int local = ranksPerHost(t);
        if (local < 2) {
            RingAllGather.INSTANCE.allGather(c, in, out);
            return;
        }
        int me = c.rank(), i = t.localIndex(me), host = t.hostOf(me), hosts = t.hosts();
        long b = in.byteSize();
        MemorySegment.copy(in, 0, out, me * b, b);
        if (b == 0) return;
        int[] rail = t.rail(i);
        int right = rail[(host + 1) % hosts], left = rail[(host - 1 + hosts) % hosts];
        for (int s = 0; s < hosts - 1; s++) {
            int send = rail[Math.floorMod(host - s, hosts)], recv = rail[Math.floorMod(host - s - 1, hosts)];
            c.sendRecvChunked(right, out.asSlice(send * b, b), left, out.asSlice(recv * b, b));
        }
        int[] ring = t.ranksOn(host);
        int rightL = ring[(i + 1) % local], leftL = ring[(i - 1 + local) % local];
        for (int s = 0; s < local - 1; s++) {
            int sendRail = Math.floorMod(i - s, local), recvRail = Math.floorMod(i - s - 1, local);
            for (int h = 0; h < hosts; h++) {
                int send = t.ranksOn(h)[sendRail], recv = t.ranksOn(h)[recvRail];
                c.sendRecvChunked(rightL, out.asSlice(send * b, b), leftL, out.asSlice(recv * b, b));
            }
        }
    }
}
