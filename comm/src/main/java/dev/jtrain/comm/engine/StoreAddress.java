package dev.jtrain.comm.engine;

/**
 * Where the job's rendezvous store runs.
 *
 * @param host       address every rank dials (a host name or literal)
 * @param port       TCP port of the store
 * @param hostedHere this process hosts the server (exactly one process of the job does, unless a launcher hosts it)
 */
public record StoreAddress(String host, int port, boolean hostedHere) {
    public StoreAddress {
        if (host == null || host.isBlank()) throw new IllegalArgumentException("store host must be set");
        if (port < 1 || port > 65535) throw new IllegalArgumentException("store port out of range: port=" + port);
    }
}
