package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/** In place: {@code buf} holds this rank's {@code count} elements and receives the reduction (AVG is reduced as SUM; the caller divides). */
public interface AllReduceAlgorithm extends Algorithm {
    @Override default Collective collective() { return Collective.ALL_REDUCE; }

    void allReduce(CollectiveContext c, MemorySegment buf, long count);
}
