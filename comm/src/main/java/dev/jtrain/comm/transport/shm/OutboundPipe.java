package dev.jtrain.comm.transport.shm;

import dev.jtrain.comm.CommException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.locks.ReentrantLock;

import static dev.jtrain.comm.transport.shm.ShmRingDescriptor.*;

/**
 * The producing end of the ring this rank writes to one peer. A message is pushed in steps as space frees up,
 * so a caller can interleave pushing with draining its inbound ring ({@code sendRecv}).
 *
 * <p>Threading: every method except {@link #markClosed} requires {@link #lock} (one message at a time).
 */
final class OutboundPipe {
    final ReentrantLock lock = new ReentrantLock();
    final int peer;
    private final MemorySegment ring;
    private final MemorySegment data;
    private final long capacity;
    private final PeerLiveness liveness;
    private final MemorySegment header = MemorySegment.ofArray(new byte[FRAME_HEADER_LENGTH]);
    private long tail;
    private MemorySegment src;
    private long pos;
    private long total;
    private CommException broken;

    OutboundPipe(int peer, MemorySegment ring, int capacity) {
        this.peer = peer;
        this.ring = ring;
        this.capacity = capacity;
        this.data = ring.asSlice(HEADER_LENGTH, capacity);
        this.liveness = new PeerLiveness(ring, false);
        this.tail = (long) LONG.getAcquire(ring, TAIL_OFFSET);
    }

    void begin(int tag, MemorySegment message) {
        if (broken != null) throw new CommException("link unusable: " + broken.getMessage(), broken);
        header.set(ValueLayout.JAVA_INT_UNALIGNED, 0, FRAME_MAGIC);
        header.set(ValueLayout.JAVA_INT_UNALIGNED, 4, tag);
        header.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, message.byteSize());
        src = message;
        pos = 0;
        total = FRAME_HEADER_LENGTH + message.byteSize();
    }

    boolean done() { return pos == total; }

    /** State for error messages. */
    String describe() {
        long head = (long) LONG.getAcquire(ring, HEAD_OFFSET);
        boolean throttled = (int) INT.getAcquire(ring, RECEIVER_THROTTLED_OFFSET) != 0;
        return "outbound to rank " + peer + ": " + (tail - head) + " of " + capacity + " ring bytes unconsumed, message "
                + pos + "/" + total + (throttled ? "; rank " + peer + " stopped reading: a message to it has no receive"
                + " posted and its unexpected-message budget is full (a cycle of blocking sends larger than the budget?)" : "");
    }

    /** Whether any byte of the current message is in the ring. */
    boolean started() { return pos > 0; }

    /** Copies up to {@code budget} bytes of the current message into free ring space; returns bytes moved. */
    long push(long budget) {
        long head = (long) LONG.getAcquire(ring, HEAD_OFFSET);
        long free = capacity - (tail - head);
        long moved = 0;
        while (free > 0 && pos < total && moved < budget) {
            long n;
            if (pos < FRAME_HEADER_LENGTH) {
                n = Math.min(FRAME_HEADER_LENGTH - pos, free);
                RingCopy.in(data, tail, header, pos, n);
            } else {
                n = Math.min(Math.min(total - pos, free), budget - moved);
                RingCopy.in(data, tail, src, pos - FRAME_HEADER_LENGTH, n);
            }
            tail += n;
            pos += n;
            free -= n;
            moved += n;
        }
        if (moved > 0) LONG.setRelease(ring, TAIL_OFFSET, tail);
        if (done()) src = null;
        return moved;
    }

    /** Null while the receiving peer looks alive, else why not. */
    String peerGone(long nowNanos) { return liveness.check(nowNanos); }

    /**
     * Gives up the current message half-way (timeout): the stream can not be resynchronised, so the pipe is
     * broken and the receiver is told through the closed flag rather than left waiting for the rest.
     */
    void abort(CommException cause) {
        broken = cause;
        src = null;
        markClosed();
    }

    /** Tells the receiver that nothing more will come. Safe from any thread. */
    void markClosed() { INT.setRelease(ring, SENDER_CLOSED_OFFSET, 1); }
}
