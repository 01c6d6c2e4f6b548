package dev.jtrain.comm.store;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Off-heap blocks for {@link BulkStoreServer}'s values, recycled by exact size. A holder of in-memory checkpoints
 * sees the same sizes over and over (every save cuts the same shards into the same chunks) and frees a step's values
 * when a newer step lands. A fresh block costs the holder's CPU three passes over its bytes before the socket's
 * bytes even arrive: the kernel's page faults, their zeroing, and the JDK's zeroing of every new allocation; all of
 * it taken from the ranks on the same host. A recycled block costs none of that. Blocks beyond {@code maxPooledBytes}
 * are freed, so at most that much stays resident unused, and {@link #trimTo} frees more when new memory is needed.
 *
 * <p>Threading: safe for concurrent use.
 */
final class BlockPool implements AutoCloseable {
    /** A block and the arena that owns it (closed when the block leaves the pool for good). */
    record Block(Arena arena, MemorySegment segment) {
        long size() { return segment.byteSize(); }
    }

    private final long maxPooledBytes;
    private final Map<Long, ArrayDeque<Block>> free = new HashMap<>();
    private long pooledBytes;
    private long reused, allocated;
    private boolean closed;

    BlockPool(long maxPooledBytes) {
        if (maxPooledBytes < 0) throw new IllegalArgumentException("maxPooledBytes must be >= 0: " + maxPooledBytes);
        this.maxPooledBytes = maxPooledBytes;
    }

    /** A block of exactly {@code size} bytes: a recycled one when the pool has one, else new (zeroed). */
    Block take(long size) {
        synchronized (this) {
            ArrayDeque<Block> q = free.get(size);
            Block b = q == null ? null : q.pollLast();
            if (q != null && q.isEmpty()) free.remove(size);
            if (b != null) {
                pooledBytes -= size;
                reused++;
                return b;
            }
            allocated++;
        }
        Arena arena = Arena.ofShared();
        return new Block(arena, arena.allocate(Math.max(1, size), 64).asSlice(0, size));
    }

    /** Takes {@code b} back for reuse, or frees it when the pool is full or closed. */
    void give(Block b) {
        synchronized (this) {
            if (!closed && b.size() > 0 && pooledBytes + b.size() <= maxPooledBytes) {
                free.computeIfAbsent(b.size(), s -> new ArrayDeque<>()).addLast(b);
                pooledBytes += b.size();
                return;
            }
        }
        b.arena().close();
    }

    /**
     * Frees pooled blocks, largest first, until at most {@code maxBytes} stay: what a holder does before taking new
     * memory, so that what it holds and what it keeps for reuse stay within its budget together.
     */
    void trimTo(long maxBytes) {
        List<Block> freed = new ArrayList<>();
        synchronized (this) {
            while (pooledBytes > Math.max(0, maxBytes) && !free.isEmpty()) {
                Long largest = free.keySet().stream().max(Long::compare).orElseThrow();
                ArrayDeque<Block> q = free.get(largest);
                freed.add(q.pollLast());
                if (q.isEmpty()) free.remove(largest);
                pooledBytes -= largest;
            }
        }
        freed.forEach(b -> b.arena().close());
    }

    synchronized long pooledBytes() { return pooledBytes; }

    /** Blocks handed out again, and blocks allocated. */
    synchronized long[] counts() { return new long[]{reused, allocated}; }

    @Override
    public synchronized void close() {
        closed = true;
        free.values().forEach(q -> q.forEach(b -> b.arena().close()));
        free.clear();
        pooledBytes = 0;
    }
}
