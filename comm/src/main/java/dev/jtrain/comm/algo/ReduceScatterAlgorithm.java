package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/** {@code out} of rank r receives the reduction of block r of every rank's {@code in} (p blocks of {@code countPerRank}); {@code in} is not modified (AVG is reduced as SUM; the caller divides). */
public interface ReduceScatterAlgorithm extends Algorithm {
    @Override default Collective collective() { return Collective.REDUCE_SCATTER; }

    void reduceScatter(CollectiveContext c, MemorySegment in, MemorySegment out, long countPerRank);
}
