package dev.jtrain.comm.topology;

/**
 * The classes of link a group's cost model measures separately: within a host (shared memory, GB/s and
 * microseconds) and between hosts (the network, often ten times slower). Flat algorithms on a group that spans
 * hosts are bounded by the slower class; hierarchical ones use each where it applies.
 */
public enum LinkClass {
    INTRA_HOST, INTER_HOST
}
