package dev.jtrain.parallel;

/**
 * How gradients are summed over ranks. {@link #FAST}: whichever all-reduce the process group's cost model picks
 * (ring, halving-doubling, hierarchical), each summing in an order of its own. {@link #ORDERED}: one fixed tree
 * ({@link dev.jtrain.comm.algo.OrderedAllReduce}), and a rank that runs several ranks' rows as pieces sums their
 * gradients in the same tree first ({@link PieceSums}); a job that continues on fewer ranks, each standing for a
 * power of two of the ranks it started with, then computes bitwise what the job that lost nothing computes. DDP with
 * float32 gradient traffic only: ZeRO's gradient norm is summed over shards that move when the world size does.
 */
public enum GradReduce {
    FAST, ORDERED
}
