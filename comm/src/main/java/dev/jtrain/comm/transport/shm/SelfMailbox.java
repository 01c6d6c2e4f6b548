package dev.jtrain.comm.transport.shm;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/** Messages a rank sends to itself: copied on send, FIFO per tag. Thread-safe. */
final class SelfMailbox {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<Integer, ArrayDeque<MemorySegment>> byTag = new HashMap<>();
    private boolean closed;

    void put(int tag, MemorySegment src) {
        MemorySegment copy = Arena.ofAuto().allocate(Math.max(1, src.byteSize()), 64).asSlice(0, src.byteSize());
        copy.copyFrom(src);
        lock.lock();
        try {
            byTag.computeIfAbsent(tag, t -> new ArrayDeque<>()).addLast(copy);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    void take(int tag, MemorySegment dst, long deadlineNanos, String where, long timeoutMs) {
        lock.lock();
        try {
            while (true) {
                ArrayDeque<MemorySegment> q = byTag.get(tag);
                MemorySegment m = q == null ? null : q.pollFirst();
                if (m != null) {
                    if (m.byteSize() != dst.byteSize()) {
                        throw new CommException(where + ": length mismatch, receiver expects " + dst.byteSize()
                                + " bytes but " + m.byteSize() + " were sent");
                    }
                    dst.copyFrom(m);
                    return;
                }
                if (closed) throw new CommException(where + ": transport is closed");
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) throw new CommTimeoutException(where + ": no message to self within " + timeoutMs + " ms");
                changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommException(where + ": interrupted", e);
        } finally {
            lock.unlock();
        }
    }

    void close() {
        lock.lock();
        try {
            closed = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
