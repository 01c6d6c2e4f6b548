package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

/** Copies {@code buf} of {@code root} into {@code buf} of every rank (bytes; dtype does not matter). */
public interface BroadcastAlgorithm extends Algorithm {
    @Override default Collective collective() { return Collective.BROADCAST; }

    void broadcast(CollectiveContext c, MemorySegment buf, int root);
}
