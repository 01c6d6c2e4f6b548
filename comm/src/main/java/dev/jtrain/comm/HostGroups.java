package dev.jtrain.comm;

import dev.jtrain.comm.topology.HostTopology;

import java.util.ArrayList;
import java.util.List;

/**
 * A group cut along its hosts, from its {@link HostTopology}: {@code host} holds the ranks on this rank's host, and
 * {@code rail} the ranks with this rank's local index, one per host (NCCL's "rail": in a cluster with one NIC per
 * local rank, the ranks a rail's switch joins). Hybrid sharding (HSDP, Zhao et al. 2023 §3.2) shards within
 * {@code host}, whose links are fast, and all-reduces the shards across {@code rail}: a rail's ranks hold the same
 * shard, so the slow links carry 2·(H-1)/H·Ψ/L per rank and step, not the gathers of every parameter.
 *
 * <p>Every host must have the same number of ranks, so that the rails line up (local index i exists on every host).
 * Sub-group ranks follow the split group's order: a rank's host rank is its local index (the i-th lowest group rank
 * on its host holds shard i under hybrid sharding, and so does every member of its rail), and rail ranks are in
 * ascending group rank, which is host order only when ranks are placed host by host.
 *
 * @param host ranks on this rank's host (the whole group when it runs on one host)
 * @param rail ranks holding this rank's local index across hosts (only this rank on one host)
 */
public record HostGroups(ProcessGroup host, ProcessGroup rail) {
    /**
     * Splits {@code group} by its hosts. Collective: every rank of {@code group} calls it, in the same order relative
     * to its other sub-group creations. The sub-groups close with {@code group}.
     *
     * @throws IllegalArgumentException when the hosts have different numbers of ranks, naming them
     */
    public static HostGroups split(ProcessGroup group) {
        HostTopology t = group.topology();
        int local = t.ranksPerHost();
        if (local == 0) {
            List<String> counts = new ArrayList<>();
            for (int k = 0; k < t.hosts(); k++) counts.add(t.hostName(k) + ": " + t.ranksOn(k).length);
            throw new IllegalArgumentException("rank " + group.rank() + ": cannot split the group by host, the hosts run"
                    + " different numbers of ranks (" + String.join(", ", counts) + "); hybrid sharding needs the same"
                    + " number on every host (e.g. --nproc-per-node), or shard across the whole group instead");
        }
        ProcessGroup host = null, rail = null;
        for (int h = 0; h < t.hosts(); h++) {
            var g = group.newGroup(t.ranksOn(h));
            if (g.isPresent()) host = g.get();
        }
        for (int i = 0; i < local; i++) {
            var g = group.newGroup(t.rail(i));
            if (g.isPresent()) rail = g.get();
        }
        group.closeAlso(rail);
        group.closeAlso(host);
        return new HostGroups(host, rail);
    }

    /** Hosts in the split group. */
    public int hosts() { return rail.size(); }

    /** True when the group ran on more than one host. */
    public boolean spansHosts() { return rail.size() > 1; }
}
