package dev.jtrain.comm.store;

/**
 * How to reach (or host) a {@link TcpStore}.
 *
 * @param host             server address to connect to (and bind, when hosting)
 * @param port             server port; 0 with {@code isServer} picks a free one
 * @param isServer         host the server in this process (rank 0 or the launcher)
 * @param jobToken         secret every client presents first (a job reads it from {@code JTRAIN_JOB_TOKEN} at start)
 * @param timeoutMs        default timeout of blocking calls, and how long to keep retrying the first connect
 * @param maxBodyBytes     largest frame body accepted from the other side
 */
public record TcpStoreOptions(String host, int port, boolean isServer, String jobToken, long timeoutMs, int maxBodyBytes) {
    /** Fills defaults and validates once (Aeron's conclude()): the returned options have a non-empty token. */
    public TcpStoreOptions {
        if (host == null || host.isBlank()) throw new IllegalArgumentException("store host must be set: host=" + host);
        if (port < 0 || port > 65535) throw new IllegalArgumentException("store port out of range: port=" + port);
        if (!isServer && port == 0) throw new IllegalArgumentException("store client needs a port: port=0");
        if (timeoutMs <= 0) throw new IllegalArgumentException("timeoutMs must be > 0: timeoutMs=" + timeoutMs);
        if (maxBodyBytes <= 0) maxBodyBytes = StoreFrameDescriptor.DEFAULT_MAX_BODY_BYTES;
        if (jobToken == null || jobToken.isEmpty()) {
            throw new IllegalArgumentException("no job token for the store at " + host + ":" + port + ": pass the job's secret"
                    + " (a job's ranks read it from JTRAIN_JOB_TOKEN, which the launcher sets)");
        }
    }

    /**
     * The address a hosted server binds: the loopback address when {@link #host} is a loopback literal (a
     * single-host job must not listen on the network), otherwise every interface ({@link TcpStoreServer#ANY_ADDRESS}).
     * Binding what {@code host} resolves to fails where a Debian hosts file maps the host's own name to 127.0.1.1,
     * and where the store's host is not the one named (the job token still guards who gets in).
     */
    public String serverBindHost() { return isLoopbackLiteral(host) ? host : TcpStoreServer.ANY_ADDRESS; }

    static boolean isLoopbackLiteral(String h) {
        return h.equals("localhost") || h.equals("::1") || h.equals("[::1]") || h.matches("127\\.\\d+\\.\\d+\\.\\d+");
    }

    public static TcpStoreOptions client(String host, int port, String jobToken, long timeoutMs) {
        return new TcpStoreOptions(host, port, false, jobToken, timeoutMs, 0);
    }

    public static TcpStoreOptions server(String host, int port, String jobToken, long timeoutMs) {
        return new TcpStoreOptions(host, port, true, jobToken, timeoutMs, 0);
    }
}
