package dev.jtrain.comm.topology;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * Which ranks of a group share a host: the fact hierarchical collectives, hybrid sharding and per-link-class cost
 * models start from. Hosts are numbered in the order of their lowest rank, so host 0 holds rank 0.
 *
 * <p>Immutable; built once per group from the host identities the ranks exchange at creation.
 *
 * @param hostOfRank host index of each rank
 * @param hostNames  name of each host, for messages and {@code jtrain topo}
 */
public record HostTopology(int[] hostOfRank, List<String> hostNames) {
    public HostTopology {
        hostOfRank = hostOfRank.clone();
        hostNames = List.copyOf(hostNames);
        for (int h : hostOfRank) {
            if (h < 0 || h >= hostNames.size()) throw new IllegalArgumentException("host index out of range: " + h);
        }
    }

    /**
     * From each rank's host identity (name plus kernel boot id: two containers with one name but different kernels
     * are different hosts) and display name.
     */
    public static HostTopology of(String[] identities, String[] names) {
        Map<String, Integer> index = new LinkedHashMap<>();
        List<String> hostNames = new ArrayList<>();
        int[] hostOf = new int[identities.length];
        for (int r = 0; r < identities.length; r++) {
            final int rank = r;
            hostOf[r] = index.computeIfAbsent(identities[r], k -> {
                hostNames.add(names[rank]);
                return hostNames.size() - 1;
            });
        }
        return new HostTopology(hostOf, hostNames);
    }

    /** Every rank on one host (a single-host job, or ranks as threads). */
    public static HostTopology singleHost(int size, String name) { return new HostTopology(new int[size], List.of(name)); }

    public int size() { return hostOfRank.length; }

    public int hosts() { return hostNames.size(); }

    public int hostOf(int rank) { return hostOfRank[rank]; }

    public String hostName(int host) { return hostNames.get(host); }

    public boolean sameHost(int a, int b) { return hostOfRank[a] == hostOfRank[b]; }

    public boolean spansHosts() { return hostNames.size() > 1; }

    /** The ranks on {@code host}, ascending. */
    public int[] ranksOn(int host) {
        return IntStream.range(0, hostOfRank.length).filter(r -> hostOfRank[r] == host).toArray();
    }

    /** Ranks on each host when every host has the same number, else 0. */
    public int ranksPerHost() {
        int local = ranksOn(0).length;
        for (int h = 1; h < hosts(); h++) if (ranksOn(h).length != local) return 0;
        return local;
    }

    /** The rank with local index {@code i} on every host, in host order: a rail (hosts with equal rank counts). */
    public int[] rail(int i) {
        int[] rail = new int[hosts()];
        for (int h = 0; h < rail.length; h++) rail[h] = ranksOn(h)[i];
        return rail;
    }

    /** This rank's index among the ranks of its host. */
    public int localIndex(int rank) {
        int i = 0;
        for (int r = 0; r < rank; r++) if (hostOfRank[r] == hostOfRank[rank]) i++;
        return i;
    }

    /** The class of link between two ranks. */
    public LinkClass linkClass(int a, int b) { return sameHost(a, b) ? LinkClass.INTRA_HOST : LinkClass.INTER_HOST; }

    /** Two ranks on one host (the first host with two), or null when every host has one rank. */
    public int[] intraHostPair() {
        for (int h = 0; h < hosts(); h++) {
            int[] on = ranksOn(h);
            if (on.length >= 2) return new int[] {on[0], on[1]};
        }
        return null;
    }

    /** Rank 0 and the lowest rank on another host, or null on a single host. */
    public int[] interHostPair() {
        for (int r = 1; r < hostOfRank.length; r++) if (hostOfRank[r] != hostOfRank[0]) return new int[] {0, r};
        return null;
    }

    /** The topology of a sub-group whose rank {@code i} is this group's rank {@code members[i]}. */
    public HostTopology subset(int[] members) {
        String[] ids = new String[members.length], names = new String[members.length];
        for (int i = 0; i < members.length; i++) {
            ids[i] = Integer.toString(hostOfRank[members[i]]);
            names[i] = hostNames.get(hostOfRank[members[i]]);
        }
        return of(ids, names);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof HostTopology t && Arrays.equals(hostOfRank, t.hostOfRank) && hostNames.equals(t.hostNames);
    }

    @Override
    public int hashCode() { return Arrays.hashCode(hostOfRank) * 31 + hostNames.hashCode(); }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder();
        for (int h = 0; h < hosts(); h++) {
            if (h > 0) sb.append(", ");
            sb.append(hostNames.get(h)).append(Arrays.toString(ranksOn(h)));
        }
        return sb.toString();
    }
}
