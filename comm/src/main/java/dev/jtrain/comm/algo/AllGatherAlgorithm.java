package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/** Block r of {@code out} (p blocks of {@code in.byteSize()}) receives {@code in} of rank r, on every rank. */
public interface AllGatherAlgorithm extends Algorithm {
    @Override default Collective collective() { return Collective.ALL_GATHER; }

    void allGather(CollectiveContext c, MemorySegment in, MemorySegment out);
}
