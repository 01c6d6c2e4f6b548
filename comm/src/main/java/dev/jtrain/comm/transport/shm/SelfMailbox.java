package dev.jtrain.comm.transport.shm;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;

import dev.jtrain.comm.transport.HeldBuffer;

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
    private final Map<Integer, ArrayDeque<HeldBuffer>> byTag = new HashMap<>();
    private boolean closed;

    void put(int tag, MemorySegment src) {
        HeldBuffer copy = HeldBuffer.allocate(src.byteSize());
        copy.data().copyFrom(src);
        lock.lock();
        try {
            if (closed) { // nobody will take it
                copy.close();
                return;
            }
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
                ArrayDeque<HeldBuffer> q = byTag.get(tag);
                HeldBuffer m = q == null ? null : q.pollFirst();
                if (m != null) {
                    try (m) {
                        if (m.byteSize() != dst.byteSize()) {
                            throw new CommException(where + ": length mismatch, receiver expects " + dst.byteSize()
                                    + " bytes but " + m.byteSize() + " were sent");
                        }
                        dst.copyFrom(m.data());
                    }
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
            for (ArrayDeque<HeldBuffer> q : byTag.values()) q.forEach(HeldBuffer::close);
            byTag.clear();
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
