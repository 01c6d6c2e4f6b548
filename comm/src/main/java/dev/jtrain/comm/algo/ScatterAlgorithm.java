package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/** {@code out} of rank r receives block r of {@code in} on {@code root}; {@code in} is ignored (may be null) elsewhere. */
public interface ScatterAlgorithm extends Algorithm {
    @Override default Collective collective() { return Collective.SCATTER; }

    void scatter(CollectiveContext c, MemorySegment in, MemorySegment out, int root);
}
