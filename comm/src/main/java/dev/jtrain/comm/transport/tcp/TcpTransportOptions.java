package dev.jtrain.comm.transport.tcp;

/**
 * Settings of one {@link TcpTransport}.
 *
 * @param bindHost           address to listen on ({@code 0.0.0.0} for every interface)
 * @param advertiseHost      address the other ranks use to reach this one (published in the store)
 * @param jobToken           secret presented in every handshake (a job reads it from {@code JTRAIN_JOB_TOKEN} at start)
 * @param groupId            name of the group; connections for another group are refused; also the store prefix
 * @param timeoutMs          per blocking call, and for the whole connection phase
 * @param socketBufferBytes  SO_SNDBUF/SO_RCVBUF; 0 leaves the kernel's auto-tuning on
 * @param handshakeTimeoutMs how long an accepted connection may take to present its handshake
 */
public record TcpTransportOptions(String bindHost, String advertiseHost, String jobToken, String groupId,
                                  long timeoutMs, int socketBufferBytes, long handshakeTimeoutMs) {
    public TcpTransportOptions {
        if (bindHost == null || bindHost.isBlank()) bindHost = "127.0.0.1";
        if (advertiseHost == null || advertiseHost.isBlank()) advertiseHost = bindHost.equals("0.0.0.0") ? "127.0.0.1" : bindHost;
        if (jobToken == null || jobToken.isEmpty()) {
            throw new IllegalArgumentException("no job token for TCP group " + groupId + ": pass the job's secret"
                    + " (a job's ranks read it from JTRAIN_JOB_TOKEN, which the launcher sets)");
        }
        if (jobToken.length() > TcpWireDescriptor.MAX_TOKEN_BYTES / 4) throw new IllegalArgumentException("jobToken too long: length=" + jobToken.length());
        if (groupId == null || groupId.isEmpty()) groupId = "world";
        if (groupId.length() > TcpWireDescriptor.MAX_GROUP_ID_BYTES / 4) throw new IllegalArgumentException("groupId too long: " + groupId);
        if (timeoutMs <= 0) throw new IllegalArgumentException("timeoutMs must be > 0: timeoutMs=" + timeoutMs);
        if (socketBufferBytes < 0) throw new IllegalArgumentException("socketBufferBytes must be >= 0: " + socketBufferBytes);
        if (handshakeTimeoutMs <= 0) handshakeTimeoutMs = Math.min(timeoutMs, 5_000);
    }

    /** Loopback defaults for tests and single-host jobs. */
    public static TcpTransportOptions loopback(String jobToken, long timeoutMs) {
        return new TcpTransportOptions("127.0.0.1", "127.0.0.1", jobToken, "world", timeoutMs, 0, 0);
    }

    public TcpTransportOptions withGroupId(String id) {
        return new TcpTransportOptions(bindHost, advertiseHost, jobToken, id, timeoutMs, socketBufferBytes, handshakeTimeoutMs);
    }
}
