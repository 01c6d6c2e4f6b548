package dev.jtrain.checkpoint.storage.memory;

import dev.jtrain.comm.CommTimeoutException;
import dev.jtrain.comm.JTrainCommException;
import dev.jtrain.comm.store.Store;
import dev.jtrain.comm.store.TcpStore;

import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * One node's checkpoint memory, as a rank reaches it: a key-value store hosted by that node's launcher (which
 * outlives the ranks it restarts). Connected on first use; once a call fails the holder counts as lost for the rest
 * of this process (its node died or was replaced: what it held is gone or about to be).
 *
 * <p>Threading: safe for concurrent use (the store serializes calls).
 */
final class MemoryHolder implements AutoCloseable {
    private final int node;
    private final String address;
    private final Supplier<Store> connect;
    private final Path sharedMemory;
    private Store store;
    private volatile String lostBecause;

    MemoryHolder(int node, String address, Supplier<Store> connect) { this(node, address, connect, null); }

    /**
     * @param sharedMemory the holder's adoption directory when it runs on this process's host (its launcher's), where
     *                     chunks are left for it to adopt instead of sent; null to send everything
     */
    MemoryHolder(int node, String address, Supplier<Store> connect, Path sharedMemory) {
        this.node = node;
        this.address = address;
        this.connect = connect;
        this.sharedMemory = sharedMemory;
    }

    /** The adoption directory on this host, or null. */
    Path sharedMemory() { return sharedMemory; }

    int node() { return node; }

    /** "node 1 (10.0.0.2:40123)": how messages name it. */
    String describe() { return "node " + node + " (" + address + ")"; }

    boolean lost() { return lostBecause != null; }

    /** Why it counts as lost, or null. */
    String lostBecause() { return lostBecause; }

    private synchronized Store store() {
        if (lostBecause != null) throw new JTrainCommException(describe() + " is lost: " + lostBecause);
        if (store == null) {
            try {
                store = connect.get();
            } catch (RuntimeException e) {
                lostBecause = "cannot connect: " + e.getMessage();
                throw e;
            }
        }
        return store;
    }

    /** Runs {@code op} on the store; any failure but a missing key marks the holder lost. */
    private <T> T call(Function<Store, T> op) {
        Store s = store();
        try {
            return op.apply(s);
        } catch (CommTimeoutException e) {
            throw e; // a key not there is an answer, not a lost holder
        } catch (RuntimeException e) {
            lostBecause = e.getMessage();
            throw e;
        }
    }

    void set(String key, byte[] value) {
        call(s -> {
            s.set(key, value);
            return null;
        });
    }

    /** Makes the first {@code length} bytes of the file {@code fileName} of {@link #sharedMemory()} {@code key}'s value. */
    void adopt(String key, String fileName, long length) {
        call(s -> {
            if (!(s instanceof TcpStore t)) throw new JTrainCommException(describe() + " is not a launcher's holder: it adopts no files");
            t.adopt(key, fileName, length);
            return null;
        });
    }

    /** The value, or empty when the key is absent (never waits). */
    Optional<byte[]> find(String key) {
        try {
            return Optional.of(call(s -> s.get(key, 0)));
        } catch (CommTimeoutException absent) {
            return Optional.empty();
        }
    }

    /**
     * The file in {@link #sharedMemory()} that holds {@code key}'s value, to map and read on this host instead of
     * receiving it through the socket; empty when the key is absent, the value is not a file, or the holder is not on
     * this host.
     */
    Optional<TcpStore.Located> locate(String key) {
        if (sharedMemory == null) return Optional.empty();
        try {
            return call(s -> s instanceof TcpStore t ? t.locate(key) : Optional.<TcpStore.Located>empty());
        } catch (CommTimeoutException absent) {
            return Optional.empty();
        }
    }

    long add(String key, long delta) { return call(s -> s.add(key, delta)); }

    void delete(String key) { call(s -> s.delete(key)); }

    /** Keys held (all steps). */
    long keys() { return call(Store::numKeys); }

    @Override
    public synchronized void close() {
        if (store != null) store.close();
    }
}
