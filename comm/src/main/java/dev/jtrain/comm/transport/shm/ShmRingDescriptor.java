package dev.jtrain.comm.transport.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Layout of one single-producer single-consumer byte ring in a shared-memory file (after Agrona's
 * {@code RingBufferDescriptor}): one ring per ordered pair of ranks, created by the receiving rank.
 * Positions only grow; {@code position & (capacity - 1)} is the byte index in the data area.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+  0
 *  |                  Magic 0x4A5452494E473031 ("JTRING01")        |
 *  |                                                               |
 *  +---------------------------------------------------------------+  8
 *  |                       Version                                 |
 *  +---------------------------------------------------------------+ 12
 *  |                  Data Capacity (power of 2)                   |
 *  +---------------------------------------------------------------+ 16
 *  |                Receiver (creator) PID, int64                  |
 *  +---------------------------------------------------------------+ 24
 *  |                Sender PID, int64 (0 until mapped)             |
 *  +---------------------------------------------------------------+ 32
 *  |  Receiver Closed (int32)      |   Sender Closed (int32)       |
 *  +---------------------------------------------------------------+ 40
 *  |  Receiver Throttled (int32)   |                               |
 *  +---------------------------------------------------------------+ 44
 *  |                 ... pad to cache line 128 ...                 |
 *  +---------------------------------------------------------------+ 128
 *  |   Tail: bytes written, int64 (sender stores with release)     |
 *  +---------------------------------------------------------------+ 136
 *  |                 ... pad to cache line 256 ...                 |
 *  +---------------------------------------------------------------+ 256
 *  |   Head: bytes consumed, int64 (receiver stores with release)  |
 *  +---------------------------------------------------------------+ 264
 *  |                 ... pad to 384 ...                            |
 *  +---------------------------------------------------------------+ 384
 *  |                 Data: capacity bytes ...                     ...
 *  +---------------------------------------------------------------+
 * </pre>
 * Tail and head sit on their own 128-byte lines (adjacent-line prefetch pairs 64-byte lines) so producer and
 * consumer do not false-share. The byte stream in the data area carries frames: a 16-byte header
 * {@code [magic int32 "JTM1"][tag int32][length int64]} followed by the payload, exactly as on TCP.
 */
public final class ShmRingDescriptor {
    private ShmRingDescriptor() { }

    public static final long MAGIC = 0x4A5452494E473031L;
    public static final int VERSION = 2;
    public static final long MAGIC_OFFSET = 0;
    public static final long VERSION_OFFSET = 8;
    public static final long CAPACITY_OFFSET = 12;
    public static final long RECEIVER_PID_OFFSET = 16;
    public static final long SENDER_PID_OFFSET = 24;
    public static final long RECEIVER_CLOSED_OFFSET = 32;
    public static final long SENDER_CLOSED_OFFSET = 36;
    /** Set while the receiver leaves a message unread because it does not fit its unexpected-message budget. */
    public static final long RECEIVER_THROTTLED_OFFSET = 40;
    public static final long TAIL_OFFSET = 128;
    public static final long HEAD_OFFSET = 256;
    public static final long HEADER_LENGTH = 384;

    public static final int FRAME_MAGIC = 0x4A544D31;
    public static final int FRAME_HEADER_LENGTH = 16;
    public static final int MIN_CAPACITY = 4096;
    public static final int MAX_CAPACITY = 1 << 30;

    /** (MemorySegment, long offset) → long, for getAcquire/setRelease on head and tail. */
    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    /** (MemorySegment, long offset) → int, for the closed flags. */
    static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    /** Throws unless {@code capacity} is a power of two in [{@link #MIN_CAPACITY}, {@link #MAX_CAPACITY}]. */
    public static void checkCapacity(long capacity) {
        if (capacity < MIN_CAPACITY || capacity > MAX_CAPACITY || Long.bitCount(capacity) != 1) {
            throw new IllegalStateException("shm ring capacity must be a power of 2 within [minCapacity=" + MIN_CAPACITY
                    + ", maxCapacity=" + MAX_CAPACITY + "]: capacity=" + capacity);
        }
    }

    public static long fileLength(int capacity) { return HEADER_LENGTH + capacity; }

    /** Writes a fresh header into {@code ring} (the creator does this before publishing the file). */
    static void initialise(MemorySegment ring, int capacity, long receiverPid) {
        ring.set(ValueLayout.JAVA_INT, VERSION_OFFSET, VERSION);
        ring.set(ValueLayout.JAVA_INT, CAPACITY_OFFSET, capacity);
        ring.set(ValueLayout.JAVA_LONG, RECEIVER_PID_OFFSET, receiverPid);
        LONG.setRelease(ring, TAIL_OFFSET, 0L);
        LONG.setRelease(ring, HEAD_OFFSET, 0L);
        LONG.setRelease(ring, MAGIC_OFFSET, MAGIC); // last: a mapped ring with the magic is fully initialised
    }

    /** Validates a mapped ring's header against its file length; returns the capacity. */
    static int validate(MemorySegment ring, String path) {
        if (ring.byteSize() < HEADER_LENGTH + MIN_CAPACITY) {
            throw new IllegalStateException("shm ring " + path + " too small: minLength=" + (HEADER_LENGTH + MIN_CAPACITY)
                    + ", length=" + ring.byteSize());
        }
        long magic = (long) LONG.getAcquire(ring, MAGIC_OFFSET);
        if (magic != MAGIC) throw new IllegalStateException(String.format("shm ring %s: bad magic 0x%016x", path, magic));
        int version = ring.get(ValueLayout.JAVA_INT, VERSION_OFFSET);
        if (version != VERSION) throw new IllegalStateException("shm ring " + path + ": version=" + version + ", expected=" + VERSION);
        int capacity = ring.get(ValueLayout.JAVA_INT, CAPACITY_OFFSET);
        checkCapacity(capacity);
        if (ring.byteSize() < fileLength(capacity)) {
            throw new IllegalStateException("shm ring " + path + ": minLength=" + fileLength(capacity) + ", length=" + ring.byteSize());
        }
        return capacity;
    }
}
