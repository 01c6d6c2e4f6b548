package dev.jtrain.checkpoint;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Off-heap staging buffers, allocated once and reused across saves and loads: the JVM counterpart of veScale's
 * pinned host buffers. A save copies live tensors into a buffer (the only part that stalls training when saving
 * asynchronously) and the background writer streams it to disk; the buffer comes back to the pool only when that
 * write has completed ({@link #release} is called from the writer's {@code finally}), so a later snapshot can never
 * overwrite bytes still being written.
 *
 * <p>Each buffer has its own arena so a buffer too small for a grown layout can be freed on its own. Buffers are
 * page-aligned (for O_DIRECT) and, from 2 MiB, on transparent huge pages where Linux allows it ({@link StagingMemory}).
 *
 * <p>Threading: all methods are thread-safe.
 */
public final class StagingPool implements AutoCloseable {
    private static final long ALIGN = 4096;
    private static final long ROUND = 1L << 20;

    /** A buffer on loan; {@link #segment()} is at least the requested size. */
    public record Buffer(Arena arena, MemorySegment segment) {}

    private final boolean hugePages;
    private final List<Buffer> free = new ArrayList<>();
    private int allocations;
    private long allocatedBytes;
    private boolean closed;

    /** A pool of buffers on transparent huge pages where possible. */
    public StagingPool() { this(true); }

    /** @param hugePages map buffers of 2 MiB and more with huge pages advised ({@link CheckpointerOptions#hugePages}) */
    public StagingPool(boolean hugePages) { this.hugePages = hugePages; }

    /** A free buffer of at least {@code bytes}, or a new one (the smallest fitting free one is preferred). */
    public synchronized Buffer acquire(long bytes) {
        if (closed) throw new IllegalStateException("staging pool is closed");
        Buffer best = null;
        for (Buffer b : free)
            if (b.segment().byteSize() >= bytes && (best == null || b.segment().byteSize() < best.segment().byteSize())) best = b;
        if (best != null) {
            free.remove(best);
            return best;
        }
        // Nothing fits: the layout grew. Free what cannot serve it rather than hold two generations of buffers.
        for (Buffer b : free) {
            allocatedBytes -= b.segment().byteSize();
            b.arena().close();
        }
        free.clear();
        long size = Math.max(ROUND, (bytes + ROUND - 1) / ROUND * ROUND);
        Arena arena = Arena.ofShared();
        Buffer b = new Buffer(arena, StagingMemory.allocate(arena, size, ALIGN, hugePages));
        allocations++;
        allocatedBytes += size;
        return b;
    }

    /** Returns a buffer once nothing reads or writes it any more. */
    public synchronized void release(Buffer b) {
        if (closed) {
            b.arena().close();
            return;
        }
        free.add(b);
    }

    /**
     * Frees a buffer instead of pooling it: for one that a failed collective may still be writing into (a timed-out
     * broadcast keeps running on the communication thread). Freeing a shared arena makes any such late access fail
     * rather than land in a buffer that a later save or load was handed.
     */
    public synchronized void discard(Buffer b) {
        allocatedBytes -= b.segment().byteSize();
        b.arena().close();
    }

    /** Buffers allocated so far (a steady state of repeated saves allocates none). */
    public synchronized int allocations() {
        return allocations;
    }

    /** Off-heap bytes currently held by the pool (free and on loan). */
    public synchronized long allocatedBytes() {
        return allocatedBytes;
    }

    /** Frees the free buffers; buffers on loan are freed when released. */
    @Override
    public synchronized void close() {
        closed = true;
        for (Buffer b : free) b.arena().close();
        free.clear();
    }
}
