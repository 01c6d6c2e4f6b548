package dev.jtrain.comm.transport.tcp;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;
import dev.jtrain.comm.transport.Combiner;
import dev.jtrain.comm.transport.HeldBuffer;
import dev.jtrain.comm.transport.UnexpectedBudget;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Matching of incoming messages from one peer to the receives posted for them, per tag and in order (the
 * "posted receive queue / unexpected message queue" pair of MPI implementations).
 *
 * <p>A message whose receive is already posted is streamed straight into the caller's buffer by the link's
 * reader thread (no extra copy). A large message that arrives first waits a moment for its receive (lock-step
 * algorithms post it within microseconds); otherwise it is buffered and copied when the receive comes, if it fits
 * the transport's {@link UnexpectedBudget}. One that does not fit is left unread in the socket until its receive
 * is posted or buffered messages are taken: the kernel's flow control then blocks the sender (backpressure).
 *
 * <p>Threading: one reader thread calls {@link #claim}/{@link #buffer}/{@link #release}; any number of callers
 * call {@link #post}/{@link #await}, at most one per tag at a time. All state is guarded by {@link #lock}.
 */
final class PostedRecvs {
    /** Messages at least this large wait {@link #LATE_POST_WAIT_NANOS} for their receive before being buffered. */
    static final long WAIT_FOR_POST_BYTES = 64 * 1024;
    static final long LATE_POST_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    static final int POSTED = 0, CLAIMED = 1, DONE = 2, FAILED = 3;
    /** How often a reader waiting for budget looks again (budget freed by another link does not signal this one). */
    private static final long BUDGET_RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

    /** A receive waiting for its message; {@code state} is guarded by the owner's lock. */
    static final class Posted {
        final MemorySegment dst;
        final Combiner combiner; // null: the message overwrites dst; else it is folded into dst
        int state = POSTED;
        CommException error;

        Posted(MemorySegment dst, Combiner combiner) {
            this.dst = dst;
            this.combiner = combiner;
        }
    }

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<Integer, ArrayDeque<Posted>> posted = new HashMap<>();
    private final Map<Integer, ArrayDeque<HeldBuffer>> unexpected = new HashMap<>();
    private final UnexpectedBudget budget;
    private CommException failure;
    private long throttledBytes; // > 0: the reader holds back a message that does not fit the budget

    PostedRecvs(UnexpectedBudget budget) { this.budget = budget; }

    /**
     * Posts a receive of the next message with {@code tag} into {@code dst}. If that message already arrived it is
     * copied now and the returned receive is DONE; a length mismatch throws. Complete it with {@link #await}, or
     * give it up with {@link #abandon}.
     */
    Posted post(int tag, MemorySegment dst, Supplier<String> where) { return post(tag, dst, null, where); }

    /** As {@link #post(int, MemorySegment, Supplier)}; a non-null {@code combiner} folds the message into {@code dst}. */
    Posted post(int tag, MemorySegment dst, Combiner combiner, Supplier<String> where) {
        Posted p = new Posted(dst, combiner);
        lock.lock();
        try {
            // Messages that arrived before the link died are still delivered (a peer may send, then exit).
            ArrayDeque<HeldBuffer> q = unexpected.get(tag);
            HeldBuffer early = q == null ? null : q.pollFirst();
            if (early != null) {
                try (early) {
                    budget.release(early.byteSize());
                    copyChecked(early.data(), p, where);
                }
                p.state = DONE;
                return p;
            }
            if (failure != null) throw new CommException(where.get() + ": " + failure.getMessage(), failure);
            posted.computeIfAbsent(tag, t -> new ArrayDeque<>()).addLast(p);
            changed.signalAll(); // the reader may be waiting for this post
            return p;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until {@code p} is complete or {@code deadlineNanos} passes.
     *
     * @param onStuckFill run (without the lock) when the deadline passes while the reader is filling the buffer;
     *                    must make the reader stop promptly (the link is then unusable)
     */
    void await(Posted p, int tag, long deadlineNanos, Supplier<String> where, Runnable onStuckFill, long timeoutMs) {
        boolean interrupted = false;
        lock.lock();
        try {
            while (true) {
                if (p.state == DONE) return;
                if (p.state == FAILED) throw new CommException(where.get() + ": " + p.error.getMessage(), p.error);
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) break;
                try {
                    changed.awaitNanos(left);
                } catch (InterruptedException e) {
                    interrupted = true;
                    break;
                }
            }
            if (p.state == POSTED && !interrupted) {
                posted.get(tag).remove(p);
                p.state = FAILED;
                throw timeout(where, timeoutMs);
            }
        } finally {
            lock.unlock();
        }
        abandon(p, tag, onStuckFill);
        if (interrupted) {
            Thread.currentThread().interrupt();
            throw new CommException(where.get() + ": interrupted while waiting");
        }
        throw timeout(where, timeoutMs);
    }

    /**
     * Gives up a posted receive (its caller failed elsewhere). Returns once the reader no longer touches its buffer,
     * because the caller may free that buffer as soon as we return.
     */
    void abandon(Posted p, int tag, Runnable onStuckFill) {
        lock.lock();
        try {
            if (p.state == POSTED) {
                ArrayDeque<Posted> q = posted.get(tag);
                if (q != null) q.remove(p);
                p.state = FAILED;
                return;
            }
            if (p.state != CLAIMED) return;
        } finally {
            lock.unlock();
        }
        onStuckFill.run();
        lock.lock();
        try {
            while (p.state == CLAIMED) changed.awaitUninterruptibly();
        } finally {
            lock.unlock();
        }
    }

    private CommTimeoutException timeout(Supplier<String> where, long timeoutMs) {
        long throttled = throttledBytes;
        return new CommTimeoutException(where.get() + ": no complete message within " + timeoutMs
                + " ms; " + (throttled > 0 ? "this link is not read further: " + budget.describeFull(throttled)
                : "the peer is hung, slow, or skipped this operation"));
    }

    private static void copyChecked(MemorySegment msg, Posted p, Supplier<String> where) {
        if (msg.byteSize() != p.dst.byteSize()) {
            throw new CommException(where.get() + ": length mismatch, receiver expects " + p.dst.byteSize()
                    + " bytes but the peer sent " + msg.byteSize() + "; the two ranks issued different operations");
        }
        Combiner.deliverBuffered(msg, p.dst, p.combiner);
    }

    /**
     * Reader side: a frame with {@code tag} and {@code length} arrived. Returns the posted receive to stream into
     * (now CLAIMED), or {@code null} when the message must be buffered (its bytes are then reserved from the
     * budget, and {@link #buffer} hands them on). Waits, not reading the socket further, while neither is possible.
     */
    Posted claim(int tag, long length) throws InterruptedException {
        long waitUntil = length >= WAIT_FOR_POST_BYTES ? System.nanoTime() + LATE_POST_WAIT_NANOS : 0;
        lock.lock();
        try {
            while (true) {
                ArrayDeque<Posted> q = posted.get(tag);
                Posted p = q == null ? null : q.peekFirst();
                if (p != null) {
                    q.pollFirst();
                    p.state = CLAIMED;
                    throttledBytes = 0;
                    return p;
                }
                long left = waitUntil - System.nanoTime();
                // Stop waiting as soon as a receive for another tag is posted: it needs the bytes behind this
                // message (async collectives in flight at once), so buffering this one is the cheaper delay.
                boolean buffer = left <= 0 || failure != null || otherTagPosted(tag);
                if (buffer && budget.tryReserve(length)) {
                    throttledBytes = 0;
                    return null;
                }
                if (failure != null) throw new CommException(failure.getMessage(), failure); // the link is gone: stop reading
                if (buffer) throttledBytes = length;
                changed.awaitNanos(buffer ? BUDGET_RECHECK_NANOS : left);
            }
        } finally {
            lock.unlock();
        }
    }

    private boolean otherTagPosted(int tag) {
        for (Map.Entry<Integer, ArrayDeque<Posted>> e : posted.entrySet()) {
            if (e.getKey() != tag && !e.getValue().isEmpty()) return true;
        }
        return false;
    }

    /** Reader side: buffers a message that arrived before its receive. */
    void buffer(int tag, HeldBuffer held) {
        lock.lock();
        try {
            // A receive may have been posted while the reader filled the buffer: hand it over directly.
            ArrayDeque<Posted> q = posted.get(tag);
            Posted p = q == null ? null : q.pollFirst();
            if (p != null) {
                budget.release(held.byteSize());
                try (held) {
                    MemorySegment msg = held.data();
                    if (msg.byteSize() == p.dst.byteSize()) {
                        Combiner.deliverBuffered(msg, p.dst, p.combiner);
                        p.state = DONE;
                    } else {
                        p.state = FAILED;
                        p.error = new CommException("length mismatch, receiver expects " + p.dst.byteSize()
                                + " bytes but the peer sent " + msg.byteSize() + "; the two ranks issued different operations");
                    }
                }
            } else {
                unexpected.computeIfAbsent(tag, t -> new ArrayDeque<>()).addLast(held);
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Gives back what {@link #claim} reserved for a message that was not buffered after all (its read failed). */
    void unreserve(long length) {
        budget.release(length);
    }

    /** Frees the buffered messages no receive will take (transport close). */
    void freeBuffered() {
        lock.lock();
        try {
            for (ArrayDeque<HeldBuffer> q : unexpected.values()) {
                for (HeldBuffer b : q) {
                    budget.release(b.byteSize());
                    b.close();
                }
                q.clear();
            }
        } finally {
            lock.unlock();
        }
    }

    /** A temporary the GC frees (a receive into a buffer the reader thread may not access). */
    static MemorySegment allocateBuffer(long length) {
        return Arena.ofAuto().allocate(Math.max(1, length), 64).asSlice(0, length);
    }

    /** Reader side: the claimed receive is complete (or failed with {@code error} when non-null). */
    void release(Posted p, CommException error) {
        lock.lock();
        try {
            if (error == null) {
                p.state = DONE;
            } else {
                p.state = FAILED;
                p.error = error;
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** The link is gone: every waiting and future receive fails with {@code cause} (buffered messages still deliver). */
    void fail(CommException cause) {
        lock.lock();
        try {
            if (failure == null) failure = cause;
            for (ArrayDeque<Posted> q : posted.values()) {
                for (Posted p : q) {
                    p.state = FAILED;
                    p.error = cause;
                }
                q.clear();
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    CommException failure() {
        lock.lock();
        try {
            return failure;
        } finally {
            lock.unlock();
        }
    }
}
