package dev.jtrain.comm.transport;

import dev.jtrain.comm.launch.CpuBinding;

import java.util.Locale;
import java.util.Map;

/**
 * What {@link Transports#create} builds, resolved once.
 *
 * @param kind          {@code auto} (shared memory to peers on this host, TCP otherwise), {@code tcp} or {@code shm}
 *                      ({@link #fromEnv} takes it from {@code JTRAIN_TRANSPORT})
 * @param groupId       name of the group; store keys and ring file names carry it
 * @param timeoutMs     per blocking call and for connecting
 * @param jobToken      secret for TCP handshakes: the job's, from its rendezvous ({@link #withJobToken}); a TCP
 *                      transport refuses to start without one
 * @param bindHost      TCP listen address; {@code null} means loopback for single-host jobs
 * @param advertiseHost TCP address other ranks dial; {@code null} derives it from {@code bindHost}
 * @param shmRingBytes  data capacity of each shared-memory ring; 0 for the default
 * @param maxUnexpectedBytes bytes this rank may hold for messages that arrive before their receive is posted, over
 *                      all links ({@link UnexpectedBudget}); 0 for {@link UnexpectedBudget#DEFAULT_BYTES}
 * @param cpuBind       the {@link CpuBinding#ENV} setting ({@code auto} or {@code none}; {@code null} = auto) that
 *                      {@code ProcessGroups.initFromEnv} applies before it creates the transport, whose threads inherit
 *                      the mask; {@link CpuBinding#bindLocalRank} validates it. {@link Transports#create} ignores it.
 */
public record TransportOptions(String kind, String groupId, long timeoutMs, String jobToken, String bindHost,
                               String advertiseHost, int shmRingBytes, long maxUnexpectedBytes, String cpuBind) {
    public static final String KIND_ENV = "JTRAIN_TRANSPORT";
    /** Address other hosts dial to reach this rank's TCP transport, when the store's view is not the right one. */
    public static final String ADVERTISE_ENV = "JTRAIN_ADVERTISE_ADDR";

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

    /** As the long form, {@code cpuBind} unset (the default, auto). */
    public TransportOptions(String kind, String groupId, long timeoutMs, String jobToken, String bindHost,
                            String advertiseHost, int shmRingBytes, long maxUnexpectedBytes) {
        this(kind, groupId, timeoutMs, jobToken, bindHost, advertiseHost, shmRingBytes, maxUnexpectedBytes, null);
    }

    /** As the long form, with the default budget and {@code cpuBind} unset. */
    public TransportOptions(String kind, String groupId, long timeoutMs, String jobToken, String bindHost,
                            String advertiseHost, int shmRingBytes) {
        this(kind, groupId, timeoutMs, jobToken, bindHost, advertiseHost, shmRingBytes, 0, null);
    }

    public static TransportOptions defaults(long timeoutMs) {
        return new TransportOptions("auto", "world", timeoutMs, null, null, null, 0);
    }

    /**
     * Defaults with the environment applied, read here once: {@code JTRAIN_TRANSPORT} (auto, tcp or shm; like
     * NCCL_P2P_DISABLE it wins over the code's choice), {@code JTRAIN_ADVERTISE_ADDR} (the address other hosts
     * dial, for hosts with several networks) and {@code JTRAIN_CPU_BIND} ({@link #cpuBind}).
     */
    public static TransportOptions fromEnv(Map<String, String> env, long timeoutMs) {
        String advertise = env.get(ADVERTISE_ENV);
        return new TransportOptions(env.get(KIND_ENV), "world", timeoutMs, null, null,
                advertise == null || advertise.isBlank() ? null : advertise.trim(), 0, 0, env.get(CpuBinding.ENV));
    }

    public TransportOptions withKind(String k) {
        return new TransportOptions(k, groupId, timeoutMs, jobToken, bindHost, advertiseHost, shmRingBytes, maxUnexpectedBytes, cpuBind);
    }

    public TransportOptions withJobToken(String token) {
        return new TransportOptions(kind, groupId, timeoutMs, token, bindHost, advertiseHost, shmRingBytes, maxUnexpectedBytes, cpuBind);
    }

    public TransportOptions withGroupId(String id) {
        return new TransportOptions(kind, id, timeoutMs, jobToken, bindHost, advertiseHost, shmRingBytes, maxUnexpectedBytes, cpuBind);
    }
}
