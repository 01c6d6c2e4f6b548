package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/**
 * All-reduce as a binomial-tree reduce to rank 0 followed by a binomial-tree broadcast from it. Latency-optimal in
 * message count for tiny vectors but moves the whole vector log2(p) times on the root's path.
 *
 * <p>Cost: {@code 2·ceil(log2 p)(α + nβ) + ceil(log2 p)·nγ}.
 */
public final class BinomialTreeAllReduce implements AllReduceAlgorithm {
    public static final BinomialTreeAllReduce INSTANCE = new BinomialTreeAllReduce();

    @Override public String name() { return "tree"; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        int l = Algorithm.ceilLog2(p);
        return 2 * l * m.message(n) + l * n * m.gammaSecondsPerByte();
    }

    @Override
    public void allReduce(CollectiveContext c, MemorySegment buf, long count) {
        BinomialReduce.INSTANCE.reduce(c, buf, count, 0, true);
        BinomialBroadcast.INSTANCE.broadcast(c, buf, 0);
    }
}
