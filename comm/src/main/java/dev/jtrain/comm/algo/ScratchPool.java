package dev.jtrain.comm.algo;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Per-group scratch buffers reused across calls so a collective allocates nothing in steady state. Each slot grows
 * to the largest size asked of it (rounded up to 64 KiB) and is 64-byte aligned native memory.
 *
 * <p>Threading: not thread-safe; owned by one group's communication thread (and each {@link #lane} by at most one
 * helper thread of that group's current collective).
 */
public final class ScratchPool {
    public static final int SLOTS = 6;
    private final MemorySegment[] slots = new MemorySegment[SLOTS];
    private final ScratchPool[] lanes = new ScratchPool[CollectiveContext.LANES];

    /**
     * The pool of lane {@code k} (1 ≤ k < {@link CollectiveContext#LANES}), created once: for the helper threads of an
     * algorithm that runs several phases at once ({@link CollectiveContext#lane}), so no thread's scratch aliases
     * another's. Called by the owning thread only.
     */
    public ScratchPool lane(int k) {
        if (lanes[k] == null) lanes[k] = new ScratchPool();
        return lanes[k];
    }

    /** A segment of exactly {@code bytes} from slot {@code slot}; contents are undefined. */
    public MemorySegment get(int slot, long bytes) {
        MemorySegment s = slots[slot];
        if (s == null || s.byteSize() < bytes) {
            long rounded = Math.max(64 * 1024, (bytes + 65535) & ~65535L);
            // Arena.ofAuto: the GC frees the old, smaller buffer once nothing refers to it.
            s = Arena.ofAuto().allocate(rounded, 64);
            slots[slot] = s;
        }
        return s.asSlice(0, bytes);
    }
}
