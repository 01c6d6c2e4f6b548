package dev.jtrain.comm.transport.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static dev.jtrain.comm.transport.shm.ShmRingDescriptor.*;

/**
 * Tells whether the process at the other end of a ring is still there: its closed flag in the ring header (set by
 * {@code close()}), or, for a process killed without closing, whether its PID is still alive. The PID check costs
 * a system call, so it runs at most every {@link #CHECK_INTERVAL_NANOS}.
 *
 * <p>Threading: confined to the thread that holds the owning pipe's lock.
 */
final class PeerLiveness {
    static final long CHECK_INTERVAL_NANOS = 50_000_000;
    private static final long OWN_PID = ProcessHandle.current().pid();

    static final String CLOSED = "closed its transport";

    private final MemorySegment ring;
    private final long closedFlagOffset;
    private final long pidOffset;
    private long nextPidCheck;

    PeerLiveness(MemorySegment ring, boolean peerIsSender) {
        this.ring = ring;
        this.closedFlagOffset = peerIsSender ? SENDER_CLOSED_OFFSET : RECEIVER_CLOSED_OFFSET;
        this.pidOffset = peerIsSender ? SENDER_PID_OFFSET : RECEIVER_PID_OFFSET;
    }

    /** Returns null while the peer looks alive, else why it is considered gone. */
    String check(long nowNanos) {
        if ((int) INT.getAcquire(ring, closedFlagOffset) != 0) return CLOSED;
        if (nowNanos - nextPidCheck < 0) return null;
        nextPidCheck = nowNanos + CHECK_INTERVAL_NANOS;
        long pid = ring.get(ValueLayout.JAVA_LONG, pidOffset);
        if (pid == 0 || pid == OWN_PID) return null;
        boolean alive = ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
        return alive ? null : "process pid " + pid + " is gone (exited or killed)";
    }

    /** {@link #check} without waiting for the next PID-check slot. */
    String checkNow(long nowNanos) {
        nextPidCheck = nowNanos;
        return check(nowNanos);
    }
}
