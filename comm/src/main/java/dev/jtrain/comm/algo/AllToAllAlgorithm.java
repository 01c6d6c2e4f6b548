package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/** Block j of {@code in} on rank r goes to block r of {@code out} on rank j (p equal blocks). */
public interface AllToAllAlgorithm extends Algorithm {
    @Override default Collective collective() { return Collective.ALL_TO_ALL; }

    void allToAll(CollectiveContext c, MemorySegment in, MemorySegment out);
}
