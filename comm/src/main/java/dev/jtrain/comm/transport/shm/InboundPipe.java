package dev.jtrain.comm.transport.shm;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.transport.Combiner;
import dev.jtrain.comm.transport.HeldBuffer;
import dev.jtrain.comm.transport.UnexpectedBudget;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

import static dev.jtrain.comm.transport.shm.ShmRingDescriptor.*;

/**
 * The consuming end of the ring one peer writes to this rank, plus the matching of its frames to posted receives
 * per tag (the posted/unexpected queues of MPI). There is no reader thread: whichever caller holds {@link #lock}
 * drives progress, streaming bytes straight from the ring into the claimed receive's buffer, or into a buffer of
 * its own when no receive is posted yet. A receive posted by one thread may thus be completed by another.
 * Buffered messages count against the transport's {@link UnexpectedBudget}: a message that does not fit is left
 * in the ring (unread, so the sender blocks) until its receive is posted or buffered ones are taken.
 *
 * <p>Threading: {@link #post}, {@link #progress}, {@link #cancel} and {@link #fail} require {@link #lock};
 * {@link Recv#state} is volatile so waiters may poll it without the lock.
 */
final class InboundPipe {
    static final int POSTED = 0, CLAIMED = 1, DONE = 2, FAILED = 3;

    static final class Recv {
        final MemorySegment dst;
        final int tag;
        final Combiner combiner; // null: the message overwrites dst; else it is folded into dst
        volatile int state = POSTED;
        volatile CommException error;

        Recv(MemorySegment dst, int tag, Combiner combiner) {
            this.dst = dst;
            this.tag = tag;
            this.combiner = combiner;
        }
    }

    final ReentrantLock lock = new ReentrantLock();
    final int peer;
    private final MemorySegment ring;
    private final MemorySegment data;
    private final PeerLiveness liveness;
    private final UnexpectedBudget budget;
    private final Map<Integer, ArrayDeque<Recv>> posted = new HashMap<>();
    private final Map<Integer, ArrayDeque<HeldBuffer>> unexpected = new HashMap<>();
    private final MemorySegment header = MemorySegment.ofArray(new byte[FRAME_HEADER_LENGTH]);
    private final MemorySegment straddle = MemorySegment.ofArray(new long[1]); // an element cut by the wrap-around
    private long head;
    private int headerFill;
    private int msgTag;
    private long msgLength;
    private long msgDone;
    private MemorySegment msgDst;   // null while discarding
    private HeldBuffer msgHeld;     // msgDst when it is a buffer of our own (no receive posted)
    private Recv msgRecv;           // null when the message goes to the unexpected queue
    private CommException msgError; // set when the claimed receive will fail (length mismatch)
    private CommException failure;
    private volatile long throttledBytes; // > 0: the message at the head of the ring waits for budget

    InboundPipe(int peer, MemorySegment ring, int capacity, UnexpectedBudget budget) {
        this.peer = peer;
        this.budget = budget;
        this.ring = ring;
        this.data = ring.asSlice(HEADER_LENGTH, capacity);
        this.liveness = new PeerLiveness(ring, true);
        this.head = (long) LONG.getAcquire(ring, HEAD_OFFSET);
    }

    /**
     * Posts a receive; if its message is already buffered it completes at once (length mismatch throws).
     *
     * @param combiner null to overwrite {@code dst} with the message, else folds the message into it
     */
    Recv post(int tag, MemorySegment dst, Combiner combiner) {
        Recv r = new Recv(dst, tag, combiner);
        ArrayDeque<HeldBuffer> q = unexpected.get(tag);
        HeldBuffer early = q == null ? null : q.pollFirst();
        if (early != null) {
            try (early) {
                budget.release(early.byteSize());
                if (early.byteSize() != dst.byteSize()) throw mismatch(dst.byteSize(), early.byteSize());
                Combiner.deliverBuffered(early.data(), r.dst, r.combiner);
            }
            r.state = DONE;
            return r;
        }
        if (failure != null) throw new CommException(failure.getMessage(), failure);
        posted.computeIfAbsent(tag, t -> new ArrayDeque<>()).addLast(r);
        return r;
    }

    private CommException mismatch(long expected, long sent) {
        return new CommException("length mismatch, receiver expects " + expected + " bytes but peer rank " + peer
                + " sent " + sent + "; the ranks issued different operations");
    }

    /**
     * Moves up to about {@code budget} bytes from the ring; returns bytes consumed (0: ring empty).
     *
     * @param until the caller's receive, or null when the caller drains to unblock a send: progress stops at the
     *              first message boundary after {@code until} completes, so the peer's next message is not pulled
     *              into a buffer of our own before its receive is posted (that costs an allocation and a copy)
     */
    long progress(long budget, Recv until) {
        long tail = (long) LONG.getAcquire(ring, TAIL_OFFSET);
        long moved = 0;
        while (tail - head > 0 && moved < budget) {
            if (headerFill == 0 && until != null && until.state >= DONE) break;
            long avail = tail - head;
            if (headerFill == 0 && !admitNext(avail)) break;
            long n;
            if (headerFill < FRAME_HEADER_LENGTH) {
                n = Math.min(FRAME_HEADER_LENGTH - headerFill, avail);
                RingCopy.out(data, head, header, headerFill, n);
                headerFill += (int) n;
                if (headerFill == FRAME_HEADER_LENGTH) startMessage();
            } else {
                n = Math.min(Math.min(msgLength - msgDone, avail), budget - moved);
                Combiner c = msgDst != null && msgRecv != null ? msgRecv.combiner : null;
                if (c != null) {
                    n -= n % c.elementBytes(); // whole elements only; the rest of one is still being written
                    if (n == 0) break;
                    RingCopy.combineOut(data, head, msgDst, msgDone, n, c, straddle);
                } else if (msgDst != null) {
                    RingCopy.out(data, head, msgDst, msgDone, n);
                }
                msgDone += n;
            }
            head += n;
            moved += n;
            LONG.setRelease(ring, HEAD_OFFSET, head); // free the space at once: the sender refills while we copy on
            if (headerFill == FRAME_HEADER_LENGTH && msgDone == msgLength) finishMessage();
        }
        return moved;
    }

    /**
     * At a message boundary: whether the next message may be taken in. One with a posted receive always may; one
     * without must first fit the budget, else it stays in the ring and the peer's send waits (backpressure). The
     * header is peeked, not consumed, so the decision can be retried on the next call.
     */
    private boolean admitNext(long avail) {
        if (avail < FRAME_HEADER_LENGTH) return false; // the sender publishes a header with at least its first bytes
        RingCopy.out(data, head, header, 0, FRAME_HEADER_LENGTH);
        int magic = header.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
        int tag = header.get(ValueLayout.JAVA_INT_UNALIGNED, 4);
        long length = header.get(ValueLayout.JAVA_LONG_UNALIGNED, 8);
        if (magic != FRAME_MAGIC || length < 0) return true; // startMessage reports the corrupt frame
        ArrayDeque<Recv> q = posted.get(tag);
        boolean admit = (q != null && !q.isEmpty()) || budget.tryReserve(length);
        long throttled = admit ? 0 : length;
        if (throttled != throttledBytes) INT.setRelease(ring, RECEIVER_THROTTLED_OFFSET, throttled > 0 ? 1 : 0);
        throttledBytes = throttled;
        return admit;
    }

    /** Bytes of the unread message that waits for budget, 0 if none. */
    long throttledBytes() { return throttledBytes; }

    private void startMessage() {
        int magic = header.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
        msgTag = header.get(ValueLayout.JAVA_INT_UNALIGNED, 4);
        msgLength = header.get(ValueLayout.JAVA_LONG_UNALIGNED, 8);
        msgDone = 0;
        msgError = null;
        if (magic != FRAME_MAGIC || msgLength < 0) {
            fail(new CommException(String.format("corrupt frame from peer rank %d (magic=0x%08x length=%d)", peer, magic, msgLength)));
            throw failure;
        }
        ArrayDeque<Recv> q = posted.get(msgTag);
        Recv r = q == null ? null : q.pollFirst();
        if (r != null) {
            r.state = CLAIMED;
            msgRecv = r;
            if (r.dst.byteSize() == msgLength) {
                msgDst = r.dst;
            } else {
                msgDst = null; // discard the payload, then fail the receive
                msgError = mismatch(r.dst.byteSize(), msgLength);
            }
        } else {
            msgRecv = null;
            msgHeld = HeldBuffer.allocate(msgLength);
            msgDst = msgHeld.data();
        }
    }

    private void finishMessage() {
        if (msgRecv != null) {
            if (msgError != null) {
                msgRecv.error = msgError;
                msgRecv.state = FAILED;
            } else {
                msgRecv.state = DONE;
            }
        } else if (msgDst != null) {
            // A receive may have been posted while this message streamed into a buffer of our own.
            ArrayDeque<Recv> q = posted.get(msgTag);
            Recv late = q == null ? null : q.pollFirst();
            if (late == null) {
                unexpected.computeIfAbsent(msgTag, t -> new ArrayDeque<>()).addLast(msgHeld);
            } else {
                budget.release(msgLength);
                try (HeldBuffer held = msgHeld) {
                    if (late.dst.byteSize() != msgLength) {
                        late.error = mismatch(late.dst.byteSize(), msgLength);
                        late.state = FAILED;
                    } else {
                        Combiner.deliverBuffered(held.data(), late.dst, late.combiner);
                        late.state = DONE;
                    }
                }
            }
        }
        headerFill = 0;
        msgRecv = null;
        msgDst = null;
        msgHeld = null;
    }

    /**
     * Withdraws a receive whose caller gives up. If its message is streaming in, the rest is discarded so no one
     * writes into the caller's buffer after this returns.
     */
    void cancel(Recv r) {
        if (r.state == POSTED) {
            ArrayDeque<Recv> q = posted.get(r.tag);
            if (q != null) q.remove(r);
            r.state = FAILED;
        } else if (r.state == CLAIMED && msgRecv == r) {
            msgDst = null;
            msgRecv = null; // remaining bytes are consumed and dropped
            r.state = FAILED;
        }
    }

    /** Null while the sending peer looks alive (or still has bytes for us), else why it is considered gone. */
    String peerGone(long nowNanos) { return peerGone(nowNanos, false); }

    /** @param now check the PID at once rather than at the next 50 ms slot */
    String peerGone(long nowNanos, boolean now) {
        String why = now ? liveness.checkNow(nowNanos) : liveness.check(nowNanos);
        if (why == null) return null;
        long tail = (long) LONG.getAcquire(ring, TAIL_OFFSET);
        long unread = tail - head;
        // Drain what it sent before going; but a combining receive only takes whole elements, so the first bytes of
        // an element whose rest never came are all that is left of a dead sender, not data still to deliver.
        Combiner c = headerFill == FRAME_HEADER_LENGTH && msgDst != null && msgRecv != null ? msgRecv.combiner : null;
        boolean drained = unread <= 0 || (c != null && unread < c.elementBytes());
        return drained ? why : null;
    }

    /** Fails every posted receive and every later one; buffered messages still deliver. */
    void fail(CommException cause) {
        if (failure == null) failure = cause;
        for (ArrayDeque<Recv> q : posted.values()) {
            for (Recv r : q) {
                r.error = cause;
                r.state = FAILED;
            }
            q.clear();
        }
        if (msgRecv != null) {
            msgRecv.error = cause;
            msgRecv.state = FAILED;
            msgRecv = null;
            msgDst = null;
        }
        dropPartialBuffer(); // a message cut off by the failure: never delivered, its rest is discarded
    }

    /** Frees the buffer of a message taken in part (no receive posted), and its budget; the rest is discarded. */
    private void dropPartialBuffer() {
        if (msgHeld == null) return;
        budget.release(msgHeld.byteSize());
        msgHeld.close();
        msgHeld = null;
        msgDst = null;
    }

    CommException failure() { return failure; }

    /** State for error messages (read without the lock: approximate, never throws). */
    String describe() {
        try {
            return describeUnsafe();
        } catch (RuntimeException concurrentlyChanged) {
            return "inbound from rank " + peer + ": (state changing)";
        }
    }

    private String describeUnsafe() {
        long tail = (long) LONG.getAcquire(ring, TAIL_OFFSET);
        StringBuilder b = new StringBuilder("inbound from rank ").append(peer).append(": ").append(tail - head)
                .append(" bytes unread");
        if (headerFill == FRAME_HEADER_LENGTH) {
            b.append(", in message tag=").append(msgTag).append(' ').append(msgDone).append('/').append(msgLength)
                    .append(msgRecv != null ? " (to a posted receive)" : msgDst != null ? " (buffered)" : " (discarded)");
        }
        b.append(", posted tags=").append(posted.entrySet().stream().filter(e -> !e.getValue().isEmpty()).map(Map.Entry::getKey).toList());
        b.append(", buffered tags=").append(unexpected.entrySet().stream().filter(e -> !e.getValue().isEmpty()).map(Map.Entry::getKey).toList());
        if (throttledBytes > 0) b.append(", not reading further: ").append(budget.describeFull(throttledBytes));
        return b.toString();
    }

    /** Frees the messages buffered for receives that will never be posted (transport close; requires {@link #lock}). */
    void freeBuffered() {
        dropPartialBuffer();
        for (ArrayDeque<HeldBuffer> q : unexpected.values()) {
            for (HeldBuffer b : q) {
                budget.release(b.byteSize());
                b.close();
            }
            q.clear();
        }
    }

    /** Tells the sender that nobody reads any more. Safe from any thread. */
    void markClosed() { INT.setRelease(ring, RECEIVER_CLOSED_OFFSET, 1); }
}
