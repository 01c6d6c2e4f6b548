package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/** Block r of {@code out} on {@code root} receives {@code in} of rank r; {@code out} is ignored (may be null) elsewhere. */
public interface GatherAlgorithm extends Algorithm {
    @Override default Collective collective() { return Collective.GATHER; }

    void gather(CollectiveContext c, MemorySegment in, MemorySegment out, int root);
}
