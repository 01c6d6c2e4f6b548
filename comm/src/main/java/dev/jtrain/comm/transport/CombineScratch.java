package dev.jtrain.comm.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The landing buffer of {@link Transport#sendRecvCombine}'s default, one per thread, grown to the largest message it
 * has taken and reused: a ring calls it at every step with the same sizes. Neither a new automatic arena per call
 * (freed only when the collector runs, so a large heap keeps many resident) nor a shared arena closed per call (a
 * handshake with every thread) is cheap enough there.
 *
 * <p>Threading: each thread its own buffer; a thread uses the returned slice until its next call only.
 */
final class CombineScratch {
    private static final ThreadLocal<MemorySegment> SCRATCH = new ThreadLocal<>();

    private CombineScratch() {}

    /** {@code bytes} of native memory any thread may access (the transport may write it from its reader thread). */
    static MemorySegment forThisThread(long bytes) {
        MemorySegment s = SCRATCH.get();
        if (s == null || s.byteSize() < bytes) {
            s = Arena.ofAuto().allocate(Math.max(64, bytes), 64); // the smaller one goes to the collector
            SCRATCH.set(s);
        }
        return s.asSlice(0, bytes);
    }
}
