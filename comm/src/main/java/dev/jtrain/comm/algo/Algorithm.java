package dev.jtrain.comm.algo;

/**
 * One algorithm for one collective. Implementations are stateless singletons; per-call state lives in the
 * {@link CollectiveContext}. Every implementation states its alpha-beta-gamma cost in Javadoc and returns the same
 * figure from {@link #predictSeconds}, which the {@link AlgorithmSelector} compares.
 */
public interface Algorithm {
    /** The collective this algorithm implements. */
    Collective collective();

    /** Short lower-case name used in {@code JTRAIN_ALGO} and in logs, e.g. {@code "ring"}. */
    String name();

    /**
     * Predicted time in seconds for {@code p} ranks and {@code bytes} = the size of the whole vector (all-reduce,
     * broadcast, reduce) or of the whole gathered/scattered buffer of p blocks (all-gather, reduce-scatter, gather,
     * scatter, all-to-all).
     */
    double predictSeconds(CostModel m, int p, long bytes);

    /**
     * The same prediction on a group that may span hosts. By default the whole call runs at the pace of the
     * slowest link class; algorithms whose off-host traffic depends on which ranks pair up (rings, recursive halving,
     * hierarchical schemes) override it with a step-by-step count of {@link Fabric#exchangeSeconds}.
     */
    default double predictSeconds(Fabric f, int p, long bytes) { return predictSeconds(f.flat(), p, bytes); }

    /**
     * Whether the selector may pick it by predicted time; false for algorithms that exist for another property (a
     * reference, a fixed summation order) and run only when named.
     */
    default boolean chosenByCost() { return true; }

    /** ceil(log2(p)) for p >= 1. */
    static int ceilLog2(int p) { return p <= 1 ? 0 : 32 - Integer.numberOfLeadingZeros(p - 1); }

    /** Largest power of two <= p. */
    static int floorPow2(int p) { return Integer.highestOneBit(p); }
}
