package dev.jtrain.comm.transport;

import java.lang.foreign.MemorySegment;

/** Whether a buffer may be handed to another thread (a transport's reader, a communication or helper thread). */
public final class SegmentAccess {
    /** Never started: a segment it may access is accessible from any thread, i.e. not confined to its owner. */
    private static final Thread ANY_OTHER_THREAD = Thread.ofPlatform().unstarted(() -> { });

    private SegmentAccess() { }

    /** False for segments of a confined arena, which only their owner thread may touch. */
    public static boolean anyThreadMayAccess(MemorySegment s) { return s.isAccessibleBy(ANY_OTHER_THREAD); }
}
