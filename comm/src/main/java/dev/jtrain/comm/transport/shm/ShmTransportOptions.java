package dev.jtrain.comm.transport.shm;

/**
 * Settings of one {@link ShmTransport}.
 *
 * @param groupId   name of the group: part of file names and store keys
 * @param timeoutMs per blocking call, and for setting up the rings
 * @param ringBytes data capacity of each ring (power of 2); larger messages stream through it
 * @param directory where ring files are created (tmpfs: {@code /dev/shm}); they are unlinked once mapped
 */
public record ShmTransportOptions(String groupId, long timeoutMs, int ringBytes, String directory) {
    public static final int DEFAULT_RING_BYTES = 4 << 20;

    public ShmTransportOptions {
        if (groupId == null || groupId.isEmpty()) groupId = "world";
        if (timeoutMs <= 0) throw new IllegalArgumentException("timeoutMs must be > 0: timeoutMs=" + timeoutMs);
        if (ringBytes == 0) ringBytes = DEFAULT_RING_BYTES;
        ShmRingDescriptor.checkCapacity(ringBytes);
        if (directory == null || directory.isBlank()) directory = "/dev/shm";
    }

    public static ShmTransportOptions defaults(long timeoutMs) {
        return new ShmTransportOptions("world", timeoutMs, 0, null);
    }

    public ShmTransportOptions withGroupId(String id) { return new ShmTransportOptions(id, timeoutMs, ringBytes, directory); }
}
