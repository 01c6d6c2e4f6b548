package dev.jtrain.comm.algo;

import dev.jtrain.comm.topology.HostTopology;

import java.util.function.IntUnaryOperator;

/**
 * What a group's algorithms run over: which ranks share a host, and the α-β-γ figures of each class of link.
 * A flat algorithm on a group that spans hosts is priced by the step model of {@link #exchangeSeconds}: a host's
 * network link is shared by every rank of that host that sends off-host in the same step (the contention that makes
 * recursive halving cost 2S over the host link for p=4 on 2 hosts where a ring costs 1.5S and a hierarchical
 * all-reduce S; cf. the "rail" analysis of NCCL's tree/ring choice and Sanders et al., "Two-tree algorithms").
 *
 * @param topology  which ranks share a host
 * @param intraHost figures between two ranks of one host
 * @param interHost figures between two ranks on different hosts (equal to {@code intraHost} on one host)
 */
public record Fabric(HostTopology topology, CostModel intraHost, CostModel interHost) {
    public Fabric {
        if (topology == null || intraHost == null || interHost == null) {
            throw new IllegalArgumentException("fabric needs a topology and both cost models: topology=" + topology
                    + " intraHost=" + intraHost + " interHost=" + interHost);
        }
    }

    /** One host, one set of figures. */
    public static Fabric singleHost(int size, CostModel m) { return new Fabric(HostTopology.singleHost(size, "localhost"), m, m); }

    public boolean spansHosts() { return topology.spansHosts(); }

    /** The figures of the slowest link the group has: what a topology-blind step runs at. */
    public CostModel flat() { return spansHosts() ? interHost : intraHost; }

    /**
     * Time of one step in which every rank r sends {@code bytes} to {@code partner(r)} (a partner of r itself, or
     * negative, sends nothing): the slowest sender, where an off-host sender's bandwidth is its host link divided by
     * the number of ranks of its host sending off-host in this step.
     */
    public double exchangeSeconds(IntUnaryOperator partner, double bytes) {
        int p = topology.size();
        int[] offHostSenders = new int[topology.hosts()];
        for (int r = 0; r < p; r++) {
            int q = partner.applyAsInt(r);
            if (q >= 0 && q != r && !topology.sameHost(r, q)) offHostSenders[topology.hostOf(r)]++;
        }
        double worst = 0;
        for (int r = 0; r < p; r++) {
            int q = partner.applyAsInt(r);
            if (q < 0 || q == r) continue;
            double t;
            if (topology.sameHost(r, q)) {
                t = intraHost.message(bytes);
            } else {
                int sharers = offHostSenders[topology.hostOf(r)];
                t = interHost.chunks(bytes) * interHost.alphaSeconds() + bytes * interHost.betaSecondsPerByte() * sharers;
            }
            worst = Math.max(worst, t);
        }
        return worst;
    }
}
