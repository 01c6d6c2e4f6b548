package dev.jtrain.comm.transport;

import java.util.Locale;

/**
 * What {@link Transports#create} builds, resolved once.
 *
 * @param kind          {@code auto} (shared memory to peers on this host, TCP otherwise), {@code tcp} or {@code shm};
 *                      env {@code JTRAIN_TRANSPORT} overrides it
 * @param groupId       name of the group; store keys and ring file names carry it
 * @param timeoutMs     per blocking call and for connecting
 * @param jobToken      secret for TCP handshakes; {@code null} reads {@code JTRAIN_JOB_TOKEN}
 * @param bindHost      TCP listen address; {@code null} means loopback for single-host jobs
 * @param advertiseHost TCP address other ranks dial; {@code null} derives it from {@code bindHost}
 * @param shmRingBytes  data capacity of each shared-memory ring; 0 for the default
 * @param maxUnexpectedBytes bytes this rank may hold for messages that arrive before their receive is posted, over
 *                      all links ({@link UnexpectedBudget}); 0 for {@link UnexpectedBudget#DEFAULT_BYTES}
 */
public record TransportOptions(String kind, String groupId, long timeoutMs, String jobToken, String bindHost,
                               String advertiseHost, int shmRingBytes, long maxUnexpectedBytes) {
    public static final String KIND_ENV = "JTRAIN_TRANSPORT";

    public TransportOptions {
        if (kind == null || kind.isBlank()) kind = "auto";
        kind = kind.toLowerCase(Locale.ROOT);
        if (!kind.equals("auto") && !kind.equals("tcp") && !kind.equals("shm")) {
            throw new IllegalArgumentException("transport kind must be auto, tcp or shm: kind=" + kind);
        }
        if (groupId == null || groupId.isEmpty()) groupId = "world";
        if (timeoutMs <= 0) throw new IllegalArgumentException("timeoutMs must be > 0: timeoutMs=" + timeoutMs);
        if (maxUnexpectedBytes < 0) throw new IllegalArgumentException("maxUnexpectedBytes must be >= 0: " + maxUnexpectedBytes);
        if (maxUnexpectedBytes == 0) maxUnexpectedBytes = UnexpectedBudget.DEFAULT_BYTES;
    }

    /** As the long form, with the default ring size and budget. */
    public TransportOptions(String kind, String groupId, long timeoutMs, String jobToken, String bindHost,
                            String advertiseHost, int shmRingBytes) {
        this(kind, groupId, timeoutMs, jobToken, bindHost, advertiseHost, shmRingBytes, 0);
    }

    public static TransportOptions defaults(long timeoutMs) {
        return new TransportOptions("auto", "world", timeoutMs, null, null, null, 0);
    }

    /** The kind after applying env {@code JTRAIN_TRANSPORT} (which wins over the option, like NCCL_P2P_DISABLE). */
    public String effectiveKind() {
        String env = System.getenv(KIND_ENV);
        if (env == null || env.isBlank()) return kind;
        return new TransportOptions(env, groupId, timeoutMs, jobToken, bindHost, advertiseHost, shmRingBytes, maxUnexpectedBytes).kind();
    }

    public TransportOptions withKind(String k) {
        return new TransportOptions(k, groupId, timeoutMs, jobToken, bindHost, advertiseHost, shmRingBytes, maxUnexpectedBytes);
    }

    public TransportOptions withGroupId(String id) {
        return new TransportOptions(kind, id, timeoutMs, jobToken, bindHost, advertiseHost, shmRingBytes, maxUnexpectedBytes);
    }
}
