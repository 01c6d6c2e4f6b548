package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/** The reduction of every rank's {@code buf} lands in {@code buf} of {@code root}; other ranks' buffers are left unchanged. */
public interface ReduceAlgorithm extends Algorithm {
    @Override default Collective collective() { return Collective.REDUCE; }

    void reduce(CollectiveContext c, MemorySegment buf, long count, int root);
}
