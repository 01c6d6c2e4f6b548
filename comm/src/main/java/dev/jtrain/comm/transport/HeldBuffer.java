package dev.jtrain.comm.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Native memory a transport holds for a message on its way: one that arrived before its receive was posted, a copy
 * of a message to self, a temporary a combine lands in.
 *
 * <p>Why not {@code Arena.ofAuto()} throughout: an automatic arena is freed only when the collector finds its segment
 * unreachable. A heap that is large and rarely collected in full (a ZeRO-3 rank holding gigabytes of long-lived
 * shards) then keeps hundreds of MiB of delivered messages resident beside it, which the unexpected-message budget no
 * longer counts; four such ranks outgrew a 24 GiB machine. Large buffers therefore get an arena of their own, closed
 * as soon as the message is delivered. Small ones stay automatic: closing a shared arena costs a handshake with every
 * thread, more than a small message's whole transfer.
 *
 * <p>Threading: {@link #close()} once, by the thread that delivered the message, after its last access.
 */
public final class HeldBuffer implements AutoCloseable {
    /** Buffers from this size up are freed on {@link #close()}; smaller ones by the collector. */
    public static final long FREED_ON_CLOSE_BYTES = 256L << 10;

    private static final AtomicLong LIVE = new AtomicLong();

    private final MemorySegment data;
    private final Arena arena; // null: automatic

    private HeldBuffer(MemorySegment data, Arena arena) {
        this.data = data;
        this.arena = arena;
    }

    /** {@code bytes} of 64-byte-aligned native memory, readable and writable by any thread. */
    public static HeldBuffer allocate(long bytes) {
        if (bytes < FREED_ON_CLOSE_BYTES) {
            return new HeldBuffer(Arena.ofAuto().allocate(Math.max(1, bytes), 64).asSlice(0, bytes), null);
        }
        Arena arena = Arena.ofShared();
        HeldBuffer b = new HeldBuffer(arena.allocate(bytes, 64), arena);
        LIVE.addAndGet(bytes);
        return b;
    }

    /** Bytes of buffers freed on close that are not closed yet, in this process (a leak shows here). */
    public static long liveBytes() { return LIVE.get(); }

    public MemorySegment data() { return data; }

    public long byteSize() { return data.byteSize(); }

    /** Frees the memory now (large buffers); no access to {@link #data()} may follow. */
    @Override
    public void close() {
        if (arena != null && arena.scope().isAlive()) {
            arena.close();
            LIVE.addAndGet(-data.byteSize());
        }
    }
}
