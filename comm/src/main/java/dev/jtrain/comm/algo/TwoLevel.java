package dev.jtrain.comm.algo;

import dev.jtrain.comm.topology.HostTopology;

/**
 * What the hierarchical collectives share: a group of H hosts with L ranks each, its rails (the ranks with one local
 * index, one per host, in host order) and rings (the ranks of one host). They are priced only where the group spans
 * hosts evenly: elsewhere their prediction is infinite, so the selector never picks them, and a forced call runs the
 * flat ring.
 */
abstract class TwoLevel implements Algorithm {
    @Override public String name() { return "hierarchical"; }

    /** Without a topology this is a single-host call: a flat ring does the same work. */
    @Override
    public final double predictSeconds(CostModel m, int p, long n) { return Double.POSITIVE_INFINITY; }

    @Override
    public final double predictSeconds(Fabric f, int p, long n) {
        int local = ranksPerHost(f.topology());
        return local < 2 ? Double.POSITIVE_INFINITY : predict(f, local, f.topology().hosts(), p, n);
    }

    /** Seconds for n bytes over p ranks, {@code hosts} hosts of {@code local} ranks. */
    abstract double predict(Fabric f, int local, int hosts, int p, long n);

    /** One step along every rail at once: each rank sends {@code bytes} to its rail's next host, L ranks per host link. */
    static double railStep(Fabric f, int local, double bytes) {
        int[] next = railSuccessors(f.topology(), local);
        return f.exchangeSeconds(r -> next[r], bytes);
    }

    /** Ranks per host when every host has the same number and there is more than one host, else 0. */
    static int ranksPerHost(HostTopology t) {
        return t == null || !t.spansHosts() ? 0 : t.ranksPerHost();
    }

    /** For every rank, its right neighbour on its rail's ring (the same rank on the next host). */
    static int[] railSuccessors(HostTopology t, int local) {
        int[] next = new int[t.size()];
        for (int i = 0; i < local; i++) {
            int[] rail = t.rail(i);
            for (int h = 0; h < rail.length; h++) next[rail[h]] = rail[(h + 1) % rail.length];
        }
        return next;
    }
}
